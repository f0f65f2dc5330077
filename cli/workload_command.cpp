// `subevict workload generate` and `subevict workload inspect`.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "cli/json_output.hpp"
#include "core/generator.hpp"
#include "core/generator_profile.hpp"
#include "core/index_set.hpp"
#include "core/presets.hpp"
#include "core/progress.hpp"
#include "core/workload_io.hpp"
#include "core/workload_stats.hpp"
#include "kernels/generate.hpp"

namespace subevict::cli {
namespace {

/// The command-line flag of LLM-like parameter `name`: --content-logit-std for content_logit_std.
std::string llm_flag(const char* name) {
  std::string flag = std::string("--") + name;
  std::replace(flag.begin(), flag.end(), '_', '-');
  return flag;
}

struct GenerateArgs {
  std::string preset = "llama2-7b";
  std::string profile;  // a profile file instead of a preset
  bool uniform = false;
  std::string generator = "llm-like";
  int tokens = 0;
  int layers = 1;
  std::uint64_t seed = 0;
  int threads = 0;
  std::string backend;  // empty: the fastest available
  LlmLikeParams llm;
  std::string output;
};

void add_generate(CLI::App& parent) {
  auto args = std::make_shared<GenerateArgs>();
  CLI::App* cmd = parent.add_subcommand("generate", "Generate a deterministic Q/K/V workload");
  std::string presets_help = "Model shape (llama2-7b, llama3-8b, mistral-7b with their per-layer profiles):";
  for (const Preset& p : presets()) presets_help += " " + p.name;
  CLI::Option* preset = cmd->add_option("--preset", args->preset, presets_help)->capture_default_str();
  CLI::Option* generator = cmd->add_option("--generator", args->generator, "gaussian | llm-like")->capture_default_str();
  cmd->add_option("--profile", args->profile,
                  "Per-layer profile FILE.toml (subevict.profile.v1) instead of a preset; --tokens required")
      ->excludes(preset)
      ->excludes(generator);
  cmd->add_flag("--uniform-layers", args->uniform,
                "The same parameters in every layer instead of the preset's per-layer profile")
      ->excludes("--profile");
  cmd->add_option("--tokens", args->tokens, "Tokens (0: the preset's default)")->capture_default_str();
  CLI::Option* layers =
      cmd->add_option("--layers", args->layers,
                      "Number of layers to generate, a count (not a layer set): the model's first N (0: all of the model's; default 1 with --preset, "
                      "all of the profile's with --profile)");
  cmd->add_option("--seed", args->seed, "Seed of the counter-based generator")->capture_default_str();
  cmd->add_option("--threads", args->threads, "Threads (0: all cores); output does not depend on it");
  cmd->add_option("--backend", args->backend,
                  "reference | portable | cuda (default: the fastest available); the tensors are bit-identical");
  for_each_llm_param(args->llm, [cmd](const char* name, auto& field, const char* help) {
    cmd->add_option(llm_flag(name), field, std::string(help) + "; given: in every layer")->capture_default_str();
  });
  cmd->add_option("-o,--output", args->output, "Output: FILE.safetensors, or a directory for q/k/v.npy")
      ->required();
  cmd->callback([args, cmd, layers]() {
    if (!args->profile.empty() && layers->count() == 0) args->layers = 0;  // a twin is the whole model
    WorkloadSpec spec =
        args->profile.empty()
            ? spec_from_preset(args->preset, args->tokens, args->layers, args->seed,
                               args->uniform ? PresetParams::kUniform : PresetParams::kProfile)
            : spec_from_profile(read_profile(args->profile), args->tokens, args->layers, args->seed);
    spec.kind = parse_generator_kind(args->generator);
    if (spec.kind == GeneratorKind::kGaussian) {
      spec.layer_params.clear();
      spec.profile.clear();
    }
    // A parameter given on the command line replaces the profile's (or preset's) value in every layer.
    const auto given = llm_param_columns({args->llm});
    std::vector<LlmLikeParams*> targets = {&spec.llm};
    for (LlmLikeParams& layer : spec.layer_params) targets.push_back(&layer);
    for (LlmLikeParams* target : targets) {
      std::size_t param = 0;
      for_each_llm_param(*target, [&](const char* name, auto& field, const char*) {
        const double value = given[param++].second[0];
        if (cmd->get_option(llm_flag(name))->count() > 0) field = std::decay_t<decltype(field)>(value);
      });
    }
    const kernels::Backend backend =
        args->backend.empty() ? kernels::fastest_backend() : kernels::parse_backend(args->backend);
    const Workload w = kernels::generate_workload(spec, backend, args->threads);
    write_workload(args->output, w);
    std::cout << "wrote " << args->output << ": " << to_string(w.shape()) << " (" << to_string(spec.kind)
              << (spec.profile.empty() ? "" : ", profile " + spec.profile)
              << (spec.preset.empty() ? "" : ", preset " + spec.preset) << ", seed " << spec.seed << ")\n";
  });
}

/// "global" or the window's size in keys.
std::string window_text(int window) { return window > 0 ? std::to_string(window) : "global"; }

void print_table(const std::vector<HeadStatistics>& heads, const std::string& by, double sink_threshold) {
  std::printf("%5s %5s %5s %7s %9s %9s %9s %9s %9s %9s %7s %9s %9s %9s %9s %9s\n", "layer", "head", "kv", "window",
              "sparsity", "sink", "recent", "recent_w", "slope", "pl_exp", "pl_r2", "heavy10", "norm_rho",
              "first", "top10", "sinkhead");
  auto row = [](const std::string& l, const std::string& h, const std::string& kv, const std::string& window,
                const HeadStatistics& s, double sink_heads) {
    std::printf("%5s %5s %5s %7s %9.4f %9.4f %9.4f %9.4f %9.3f %9.3f %7.3f %9.4f %9.4f %9.4f %9.4f %9.3f\n", l.c_str(),
                h.c_str(), kv.c_str(), window.c_str(), s.sparsity, s.sink_mass, s.recent_mass, s.wide_recent_mass,
                s.recency_slope, s.power_law_exponent,
                s.power_law_r2, s.heavy_share, s.norm_attention_spearman, s.first_token_mass, s.received_top_share,
                sink_heads);
  };
  if (by == "layer") {
    for (const LayerStatistics& l : per_layer_statistics(heads, sink_threshold)) {
      row(std::to_string(l.layer), std::to_string(l.heads), "", window_text(l.mean.window), l.mean, l.sink_head_rate);
    }
  } else {
    for (const HeadStatistics& s : heads) {
      row(std::to_string(s.layer), std::to_string(s.q_head), std::to_string(s.kv_head), window_text(s.window), s,
          s.late_first_token_mass > sink_threshold ? 1.0 : 0.0);
    }
  }
  row("mean", "", "", "", mean_statistics(heads), sink_head_rate(heads, sink_threshold));
  // Global and sliding-window layers apart when both were measured.
  std::vector<HeadStatistics> global, windowed;
  for (const HeadStatistics& s : heads) (s.window > 0 ? windowed : global).push_back(s);
  if (!global.empty() && !windowed.empty()) {
    row("mean", "", "", "global", mean_statistics(global), sink_head_rate(global, sink_threshold));
    row("mean", "", "", "window", mean_statistics(windowed), sink_head_rate(windowed, sink_threshold));
  }
}

/// What `workload inspect` was asked.
struct InspectArgs {
  std::string file, json_path, table;
  InspectOptions options;
  bool allow_nonfinite = false, quiet = false;
  std::string layers = "all", heads = "all";
};

/// The --json document of `workload inspect`.
nlohmann::json inspect_json(const InspectArgs& a, const Workload& w, const InspectOptions& options,
                            const std::vector<HeadStatistics>& statistics) {
  const InspectOptions& opt = a.options;
  nlohmann::json doc = {{"file", a.file},
                        {"shape", to_json(w.shape())},
                        {"score_scale", w.score_scale()},
                        {"attention_windows", w.windows()},
                        {"metadata", w.metadata},
                        {"measured",
                         {{"layers", options.layers},
                          {"layers_text", format_index_set(options.layers)},
                          {"q_heads", options.q_heads},
                          {"q_heads_text", format_index_set(options.q_heads)}}},
                        {"options",
                         {{"tau", opt.tau},
                          {"sinks", opt.sinks},
                          {"recent_window", opt.recent_window},
                          {"wide_recent_window", opt.wide_recent_window},
                          {"top_fraction", opt.top_fraction},
                          {"first_token_from", opt.first_token_from},
                          {"late_rows", opt.late_rows},
                          {"sink_head_threshold", opt.sink_head_threshold}}},
                        {"mean", to_json(mean_statistics(statistics))},
                        {"sink_head_rate", sink_head_rate(statistics, opt.sink_head_threshold)},
                        {"layers", nlohmann::json::array()},
                        {"heads", nlohmann::json::array()}};
  for (const LayerStatistics& l : per_layer_statistics(statistics, opt.sink_head_threshold)) {
    doc["layers"].push_back({{"layer", l.layer},
                             {"window", l.mean.window},
                             {"heads", l.heads},
                             {"sink_head_rate", l.sink_head_rate},
                             {"mean", to_json(l.mean)}});
  }
  for (const HeadStatistics& h : statistics) doc["heads"].push_back(to_json(h));
  return doc;
}

void run_inspect(const InspectArgs& a) {
  ReadOptions read_options;
  read_options.allow_nonfinite = a.allow_nonfinite;
  const Workload w = read_workload(a.file, read_options);
  require_output_directory(a.json_path, "--json");
  InspectOptions options = a.options;
  options.layers = parse_index_set(a.layers, w.shape().layers, {"inspect", "--layers", "layers"});
  options.q_heads = parse_index_set(a.heads, w.shape().q_heads, {"inspect", "--heads", "query heads"});
  Progress progress("inspect", (long long)(options.layers.size() * options.q_heads.size()), "heads", a.quiet);
  options.progress = [&progress](int, int) { progress.advance(); };
  const auto statistics = inspect_workload(w, options);
  std::cout << a.file << ": " << to_string(w.shape()) << " (" << w.shape().attention_kind() << ", score scale "
            << w.score_scale() << ")\n";
  if (w.has_windows()) {
    std::vector<int> windowed;
    for (int l = 0; l < w.shape().layers; ++l) {
      if (w.window(l) > 0) windowed.push_back(l);
    }
    std::cout << "sliding-window layers " << format_index_set(windowed) << " (window "
              << window_text(w.window(windowed.front())) << " keys, each layer's own in the table); the others "
              << "global\n";
  }
  std::cout << "layers " << format_index_set(options.layers) << ", query heads " << format_index_set(options.q_heads)
            << ": " << statistics.size() << " (layer, query head) pairs\n";
  print_table(statistics, !a.table.empty() ? a.table : (options.layers.size() > 1 ? "layer" : "head"),
              a.options.sink_head_threshold);
  if (!a.json_path.empty()) write_json(a.json_path, inspect_json(a, w, options, statistics));
}

void add_inspect(CLI::App& parent) {
  auto a = std::make_shared<InspectArgs>();
  InspectOptions* opt = &a->options;
  CLI::App* cmd = parent.add_subcommand(
      "inspect", "Measure a workload's attention structure per (layer, head): sparsity, sink mass, "
                 "recency, power law of accumulated attention, heavy-hitter share, key-norm correlation");
  cmd->add_option("file", a->file, "Workload: FILE.safetensors or a directory with q/k/v.npy")->required();
  cmd->add_option("--json", a->json_path, "Also write the statistics as JSON");
  cmd->add_option("--tau", opt->tau, "Sparsity threshold relative to the row maximum")->capture_default_str();
  cmd->add_option("--sinks", opt->sinks, "Positions counted as sinks")->capture_default_str();
  cmd->add_option("--recent-window", opt->recent_window, "Recent window (keys)")->capture_default_str();
  cmd->add_option("--wide-recent-window", opt->wide_recent_window,
                  "Wider recent window of the recent_w column (keys; at most tokens/2 are used)")
      ->capture_default_str();
  cmd->add_option("--first-token-from", opt->first_token_from,
                  "first_token_mass averages query rows from this one (at most tokens/2)")
      ->capture_default_str();
  cmd->add_option("--late-rows", opt->late_rows, "Last query rows that decide a sink head")->capture_default_str();
  cmd->add_option("--sink-head-threshold", opt->sink_head_threshold,
                  "A head is a sink head when its late first-token mass exceeds this")
      ->capture_default_str();
  cmd->add_option("--table", a->table, "Rows of the printed table: head | layer (default: head for one chosen layer, "
                                     "layer otherwise); the JSON has both")
      ->check(CLI::IsMember({"head", "layer"}));
  cmd->add_option("--layers", a->layers,
                  "Layers to measure: a list of layers and ranges such as 0,14,20-29, or all; a single number N is "
                  "layer N alone")
      ->capture_default_str();
  cmd->add_option("--heads", a->heads,
                  "Query heads to measure in every chosen layer, in the same syntax (query heads, as the table's "
                  "head column; KV head h groups query heads h g .. h g + g - 1)")
      ->capture_default_str();
  cmd->add_option("--threads", opt->threads, "Threads (0: all cores)");
  cmd->add_flag("--quiet", a->quiet, "No progress on stderr");
  cmd->add_flag("--allow-nonfinite", a->allow_nonfinite, "Accept NaN/Inf in the file");
  cmd->callback([a]() { run_inspect(*a); });
}

}  // namespace

void add_workload_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("workload", "Generate and inspect attention workloads");
  cmd->require_subcommand(1);
  add_generate(*cmd);
  add_inspect(*cmd);
  add_workload_fit(*cmd);
}

}  // namespace subevict::cli
