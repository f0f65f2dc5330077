// `subevict workload generate` and `subevict workload inspect`.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "cli/json_output.hpp"
#include "core/generator.hpp"
#include "core/presets.hpp"
#include "core/workload_io.hpp"
#include "core/workload_stats.hpp"
#include "kernels/generate.hpp"

namespace subevict::cli {
namespace {

struct GenerateArgs {
  std::string preset = "llama2-7b";
  std::string generator = "llm-like";
  int tokens = 0;
  int layers = 1;
  std::uint64_t seed = 0;
  int threads = 0;
  std::string backend;  // empty: the fastest available
  LlmLikeParams llm;
  bool rope_base_set = false;
  std::string output;
};

void add_generate(CLI::App& parent) {
  auto args = std::make_shared<GenerateArgs>();
  CLI::App* cmd = parent.add_subcommand("generate", "Generate a deterministic Q/K/V workload");
  std::string presets_help = "Model shape:";
  for (const Preset& p : presets()) presets_help += " " + p.name;
  cmd->add_option("--preset", args->preset, presets_help)->capture_default_str();
  cmd->add_option("--generator", args->generator, "gaussian | llm-like")->capture_default_str();
  cmd->add_option("--tokens", args->tokens, "Tokens (0: the preset's default)")->capture_default_str();
  cmd->add_option("--layers", args->layers, "Layers to generate (0: all of the model's)")
      ->capture_default_str();
  cmd->add_option("--seed", args->seed, "Seed of the counter-based generator")->capture_default_str();
  cmd->add_option("--threads", args->threads, "Threads (0: all cores); output does not depend on it");
  cmd->add_option("--backend", args->backend,
                  "reference | portable | cuda (default: the fastest available); the tensors are bit-identical");
  for_each_llm_field(args->llm, [cmd](const char* name, auto& field, const char* help) {
    std::string flag = std::string("--") + name;
    std::replace(flag.begin(), flag.end(), '_', '-');
    cmd->add_option(flag, field, help)->capture_default_str();
  });
  // The RoPE base defaults to the preset's, so remember whether the user gave one.
  cmd->get_option("--rope-base")->each([args](const std::string&) { args->rope_base_set = true; });
  cmd->add_option("-o,--output", args->output, "Output: FILE.safetensors, or a directory for q/k/v.npy")
      ->required();
  cmd->callback([args]() {
    WorkloadSpec spec = spec_from_preset(args->preset, args->tokens, args->layers, args->seed);
    const double preset_base = spec.llm.rope_base;
    spec.kind = parse_generator_kind(args->generator);
    spec.llm = args->llm;
    if (!args->rope_base_set) spec.llm.rope_base = preset_base;
    const kernels::Backend backend =
        args->backend.empty() ? kernels::fastest_backend() : kernels::parse_backend(args->backend);
    const Workload w = kernels::generate_workload(spec, backend, args->threads);
    write_workload(args->output, w);
    std::cout << "wrote " << args->output << ": " << to_string(w.shape()) << " ("
              << to_string(spec.kind) << ", preset " << spec.preset << ", seed " << spec.seed << ")\n";
  });
}

void print_table(const std::vector<HeadStatistics>& heads, const HeadStatistics& mean) {
  std::printf("%5s %5s %5s %9s %9s %9s %9s %7s %9s %9s\n", "layer", "head", "kv", "sparsity",
              "sink", "recent", "pl_exp", "pl_r2", "heavy10", "norm_rho");
  auto row = [](const char* l, const char* h, const char* kv, const HeadStatistics& s) {
    std::printf("%5s %5s %5s %9.4f %9.4f %9.4f %9.3f %7.3f %9.4f %9.4f\n", l, h, kv, s.sparsity,
                s.sink_mass, s.recent_mass, s.power_law_exponent, s.power_law_r2, s.heavy_share,
                s.norm_attention_spearman);
  };
  for (const HeadStatistics& s : heads) {
    row(std::to_string(s.layer).c_str(), std::to_string(s.q_head).c_str(),
        std::to_string(s.kv_head).c_str(), s);
  }
  row("mean", "", "", mean);
}

void add_inspect(CLI::App& parent) {
  auto file = std::make_shared<std::string>();
  auto json_path = std::make_shared<std::string>();
  auto opt = std::make_shared<InspectOptions>();
  auto allow_nonfinite = std::make_shared<bool>(false);
  CLI::App* cmd = parent.add_subcommand(
      "inspect", "Measure a workload's attention structure per (layer, head): sparsity, sink mass, "
                 "recency, power law of accumulated attention, heavy-hitter share, key-norm correlation");
  cmd->add_option("file", *file, "Workload: FILE.safetensors or a directory with q/k/v.npy")->required();
  cmd->add_option("--json", *json_path, "Also write the statistics as JSON");
  cmd->add_option("--tau", opt->tau, "Sparsity threshold relative to the row maximum")->capture_default_str();
  cmd->add_option("--sinks", opt->sinks, "Positions counted as sinks")->capture_default_str();
  cmd->add_option("--recent-window", opt->recent_window, "Recent window (keys)")->capture_default_str();
  cmd->add_option("--threads", opt->threads, "Threads (0: all cores)");
  cmd->add_flag("--allow-nonfinite", *allow_nonfinite, "Accept NaN/Inf in the file");
  cmd->callback([=]() {
    ReadOptions read_options;
    read_options.allow_nonfinite = *allow_nonfinite;
    const Workload w = read_workload(*file, read_options);
    const auto heads = inspect_workload(w, *opt);
    const HeadStatistics mean = mean_statistics(heads);
    std::cout << *file << ": " << to_string(w.shape()) << " (" << w.shape().attention_kind()
              << ", score scale " << w.score_scale() << ")\n";
    print_table(heads, mean);
    if (!json_path->empty()) {
      nlohmann::json doc = {{"file", *file},
                            {"shape", to_json(w.shape())},
                            {"score_scale", w.score_scale()},
                            {"metadata", w.metadata},
                            {"options",
                             {{"tau", opt->tau},
                              {"sinks", opt->sinks},
                              {"recent_window", opt->recent_window},
                              {"top_fraction", opt->top_fraction}}},
                            {"mean", to_json(mean)},
                            {"heads", nlohmann::json::array()}};
      for (const HeadStatistics& h : heads) doc["heads"].push_back(to_json(h));
      write_json(*json_path, doc);
    }
  });
}

}  // namespace

void add_workload_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("workload", "Generate and inspect attention workloads");
  cmd->require_subcommand(1);
  add_generate(*cmd);
  add_inspect(*cmd);
}

}  // namespace subevict::cli
