// `subevict workload fit`: per-layer generator parameters fitted to a real workload (a twin).
#include <algorithm>
#include <optional>
#include <cstdio>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "cli/commands.hpp"
#include "cli/count_validator.hpp"
#include "cli/json_output.hpp"
#include "core/generator_profile.hpp"
#include "core/input_error.hpp"
#include "core/number_text.hpp"
#include "core/profile_fit.hpp"
#include "core/progress.hpp"
#include "core/workload_io.hpp"

namespace subevict::cli {
namespace {

struct FitArgs {
  std::string input, output, json, name;
  FitOptions options;
  bool rope_base_set = false;
  bool quiet = false;
  bool allow_nonfinite = false;
};

/// The RoPE base the workload records (exporters write "rope_base"), or `fallback`.
double recorded_rope_base(const Workload& w, double fallback) {
  for (const char* key : {"rope_base", "rope_theta", "llm.rope_base"}) {
    const auto it = w.metadata.find(key);
    if (it == w.metadata.end()) continue;
    try {
      return std::stod(it->second);
    } catch (const std::exception&) {
      throw InputError("workload metadata", key, "a number", "'" + it->second + "'");
    }
  }
  return fallback;
}

/// The per-layer RoPE bases the workload records ("rope_bases": one number per layer, comma
/// separated; exporters write it where the layers rotate on different bases), or empty.
std::vector<double> recorded_rope_bases(const Workload& w) {
  const auto it = w.metadata.find("rope_bases");
  if (it == w.metadata.end()) return {};
  std::vector<double> bases;
  std::stringstream text(it->second);
  std::string item;
  const std::string expected = "one RoPE base > 1 per layer (" + std::to_string(w.shape().layers) + "), comma separated";
  while (std::getline(text, item, ',')) {
    const std::optional<double> base = finite_number(item);
    if (!base || *base <= 1) throw InputError("workload metadata", "rope_bases", expected, "'" + it->second + "'");
    bases.push_back(*base);
  }
  if (int(bases.size()) != w.shape().layers) {
    throw InputError("workload metadata", "rope_bases", expected, "'" + it->second + "'");
  }
  return bases;
}

/// "10000", or with per-layer bases "per layer: 10000 x15, 1e+06 x3" (in order of first use).
std::string rope_text(const FitOptions& options) {
  if (options.rope_bases.empty()) return significant_digits(options.rope_base, 6);
  std::vector<std::pair<double, int>> counts;
  for (const double base : options.rope_bases) {
    auto found = std::find_if(counts.begin(), counts.end(), [&](const auto& c) { return c.first == base; });
    if (found == counts.end()) counts.push_back({base, 1});
    else ++found->second;
  }
  std::string text = "per layer:";
  for (std::size_t i = 0; i < counts.size(); ++i) {
    text += (i ? ", " : " ") + significant_digits(counts[i].first, 6) + " x" + std::to_string(counts[i].second);
  }
  return text;
}

/// Per layer: real | twin of each fitted statistic, '*' after a pair further apart than its
/// tolerance; then the number of layers within every tolerance.
void print_fit(const ProfileFit& fit) {
  std::printf("%5s", "layer");
  for (const FitStatistic& s : fit.statistics) std::printf(" %23s", s.name);
  std::printf(" %8s %5s\n", "error", "evals");
  int matched = 0;
  for (const LayerFit& l : fit.layers) {
    std::printf("%5d", l.layer);
    for (const FitStatistic& s : fit.statistics) {
      const double real = l.target.mean.*s.member, twin = l.fitted.mean.*s.member;
      std::printf("   %9.4f | %9.4f%s", real, twin, std::abs(real - twin) > s.tolerance ? "*" : " ");
    }
    std::printf(" %8.3f %5d\n", l.error, l.evaluations);
    matched += l.error <= 1.0 ? 1 : 0;
  }
  std::printf("real | twin per statistic; tolerances");
  for (const FitStatistic& s : fit.statistics) std::printf(" %s %s", s.name, significant_digits(s.tolerance, 3).c_str());
  std::string lengths;
  for (const int n : fit.lengths) lengths += (lengths.empty() ? "" : ", ") + std::to_string(n);
  std::printf("; '*' outside it (at %d tokens). %d of %zu layers within every tolerance at every fitted length (%s "
              "tokens).\n",
              fit.lengths.front(), matched, fit.layers.size(), lengths.c_str());
}

nlohmann::json fit_json(const FitArgs& args, const ProfileFit& fit) {
  nlohmann::json layers = nlohmann::json::array();
  for (const LayerFit& l : fit.layers) {
    nlohmann::json row = {{"layer", l.layer}, {"error", l.error}, {"evaluations", l.evaluations},
                          {"real_sink_head_rate", l.target.sink_head_rate},
                          {"twin_sink_head_rate", l.fitted.sink_head_rate}};
    for (const FitStatistic& s : fit.statistics) {
      row[s.name] = {{"real", l.target.mean.*s.member}, {"twin", l.fitted.mean.*s.member}, {"tolerance", s.tolerance}};
    }
    nlohmann::json at_lengths = nlohmann::json::array();  // every fitted length, the first as above
    for (std::size_t i = 0; i < fit.lengths.size(); ++i) {
      nlohmann::json at = {{"tokens", fit.lengths[i]}};
      for (const FitStatistic& s : fit.statistics) {
        at[s.name] = {{"real", l.length_targets[i].mean.*s.member}, {"twin", l.length_fitted[i].mean.*s.member}};
      }
      at_lengths.push_back(at);
    }
    row["at_lengths"] = at_lengths;
    layers.push_back(row);
  }
  nlohmann::json statistics = nlohmann::json::array();
  for (const FitStatistic& s : fit.statistics) statistics.push_back(s.name);
  return {{"input", args.input},         {"profile", args.output},  {"seed", args.options.seed},
          {"seeds", args.options.seeds}, {"tokens", args.options.tokens}, {"statistics", statistics},
          {"lengths", fit.lengths},
          {"layers", layers}};
}

}  // namespace

void add_workload_fit(CLI::App& workload) {
  auto args = std::make_shared<FitArgs>();
  CLI::App* cmd = workload.add_subcommand(
      "fit", "Fit the generator's per-layer parameters to a real workload's per-layer statistics and write the "
             "profile of its synthetic twin (generate it with `workload generate --profile`)");
  cmd->add_option("file", args->input, "Real workload: FILE.safetensors or a directory with q/k/v.npy")->required();
  cmd->add_option("-o,--output", args->output, "The profile to write (TOML)")->required();
  cmd->add_option("--json", args->json, "Also write the fit quality per layer and statistic as JSON");
  cmd->add_option("--name", args->name, "Name recorded in the profile (default: the input's file name)");
  cmd->add_option("--seed", args->options.seed, "Seed the twin is fitted for")->capture_default_str();
  cmd->add_option("--seeds", args->options.seeds,
                  "Fit the mean statistics of this many seeds (--seed onwards): a twin for every seed, not one draw")
      ->check(count_validator())
      ->capture_default_str();
  cmd->add_option("--evaluations", args->options.max_evaluations, "Generated copies measured per layer")
      ->capture_default_str()
      ->check(count_validator());
  cmd->add_option("--tokens", args->options.tokens, "Tokens of the generated copies (0: the input's)")
      ->capture_default_str();
  cmd->add_option("--shorter-lengths", args->options.shorter_lengths,
                  "Shares in (0, 1) of the length at which each layer is fitted too, against the input's first "
                  "tokens (comma-separated; default 0.5)")
      ->delimiter(',');
  cmd->add_flag_callback("--fitted-length-only", [args] { args->options.shorter_lengths.clear(); },
                         "Fit at the input's length only (no shorter lengths)");
  cmd->add_flag("--wide-recent", args->options.wide_recent,
                "Also fit the mass on the last 256 keys with the recency reach (at lengths of 512 tokens or more)");
  cmd->add_flag("--low-norm", args->options.low_norm,
                "Also fit the attention on the lowest-norm tenth of the keys: a second search per layer moves "
                "heavy-hitter keys to low norms without recency, keeping the other statistics within "
                "--low-norm-margin (up to 3 times the time)");
  cmd->add_option("--low-norm-margin", args->options.low_norm_margin,
                  "With --low-norm, the largest error in tolerances the other statistics may take for it (larger "
                  "trades them for the low-norm share; > 0)")
      ->capture_default_str();
  cmd->add_flag("--sink-tokens", args->options.sink_tokens,
                "Also give the twin the real layer's later sink tokens (keys attended like the first one) where "
                "it has sink heads, and its sink keys the real first key's norm quantile where that is above "
                "the median; the first-token mass is then fitted with them sharing the sink attention");
  cmd->add_option("--rope-base", args->options.rope_base, "RoPE base of the twin (default: the input's metadata, "
                                                          "else 10000)")
      ->each([args](const std::string&) { args->rope_base_set = true; });
  cmd->add_option("--threads", args->options.threads, "Layers fitted in parallel (0: all cores)");
  cmd->add_flag("--quiet", args->quiet, "No progress on stderr");
  cmd->add_flag("--allow-nonfinite", args->allow_nonfinite,
                "Read a file holding NaN/Inf (the fit still refuses one: it measures every layer)");
  cmd->callback([args]() {
    require_output_directory(args->output, "--output");
    require_output_directory(args->json, "--json");
    ReadOptions read_options;
    read_options.allow_nonfinite = args->allow_nonfinite;
    const Workload real = read_workload(args->input, read_options);
    // The fit measures every layer: it cannot run on non-finite attention even when the file is accepted.
    if (args->allow_nonfinite) {
      require_finite(real, args->input, "in every layer (--allow-nonfinite accepts the file, but the fit measures "
                                        "the attention of every layer)");
    }
    FitOptions options = args->options;
    if (!args->rope_base_set) {
      options.rope_base = recorded_rope_base(real, options.rope_base);
      options.rope_bases = recorded_rope_bases(real);
    }
    Progress measuring("fit: measuring the real workload", (long long)real.shape().layers * real.shape().q_heads,
                       "heads", args->quiet);
    options.inspect.progress = [&measuring](int, int) { measuring.advance(); };
    Progress progress("fit", real.shape().layers, "layers", args->quiet);
    options.progress = [&progress](int, int) { progress.advance(); };
    const std::string name = args->name.empty() ? "twin of " + args->input : args->name;
    const ProfileFit fit = fit_profile(real, name, options);
    write_profile(args->output, fit.profile);
    print_fit(fit);
    if (!args->json.empty()) write_json(args->json, fit_json(*args, fit));
    std::cout << "wrote " << args->output << " (" << fit.layers.size() << " layers, seed " << options.seed
              << ", RoPE base " << rope_text(options) << ")\n";
  });
}

}  // namespace subevict::cli
