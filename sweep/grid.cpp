#include "sweep/grid.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <tuple>
#include <toml++/toml.h>

#include "core/index_set.hpp"
#include "core/input_error.hpp"
#include "core/number_text.hpp"
#include "core/presets.hpp"
#include "greedy/eviction/process/head_group.hpp"
#include "greedy/eviction/policies/policy_registry.hpp"
#include "greedy/eviction/policies/policy_spec.hpp"

namespace subevict::sweep {
namespace {

/// Reads one table of the grid: checks the keys and converts values, naming "[table] key".
class TableReader {
 public:
  TableReader(const toml::table* table, std::string name, std::string source,
              std::vector<std::string> keys)
      : table_(table), name_(std::move(name)), source_(std::move(source)), keys_(std::move(keys)) {
    if (!table_) return;
    for (const auto& [key, node] : *table_) {
      const std::string k(key.str());
      if (std::find(keys_.begin(), keys_.end(), k) == keys_.end()) {
        std::string known;
        for (const auto& a : keys_) {
          if (!known.empty()) known += ", ";
          known += a;
        }
        throw InputError(source_, "unknown key '" + k + "' in table [" + name_ + "]", "one of " + known);
      }
    }
  }

  [[nodiscard]] std::string where(const std::string& key) const { return "[" + name_ + "] " + key; }

  /// The values of `key`: its elements if it is an array (non-empty), else the value itself;
  /// empty when the key is absent.
  std::vector<const toml::node*> nodes(const std::string& key) const {
    const toml::node* node = table_ ? table_->get(key) : nullptr;
    if (!node) return {};
    std::vector<const toml::node*> out;
    if (const toml::array* a = node->as_array()) {
      for (const toml::node& v : *a) out.push_back(&v);
      if (out.empty()) throw InputError(source_, where(key), "a non-empty list (an empty grid has no jobs)", "[]");
    } else {
      out.push_back(node);
    }
    return out;
  }

  /// The values of `key` (a scalar or an array of T); `fallback` when the key is absent.
  template <class T>
  std::vector<T> list(const std::string& key, std::vector<T> fallback, const char* type) const {
    const std::vector<const toml::node*> values = nodes(key);
    if (values.empty()) return fallback;
    std::vector<T> out;
    auto take = [&](const toml::node& v) {
      if constexpr (std::is_same_v<T, double>) {
        if (auto d = v.value<double>(); d && (v.is_floating_point() || v.is_integer())) {
          out.push_back(*d);
          return;
        }
      } else if constexpr (std::is_same_v<T, std::int64_t>) {
        if (v.is_integer()) {
          out.push_back(*v.value<std::int64_t>());
          return;
        }
      } else {
        if (v.is_string()) {
          out.push_back(*v.value<std::string>());
          return;
        }
      }
      throw InputError(source_, where(key), std::string(type) + " or a list of them");
    };
    for (const toml::node* v : values) take(*v);
    return out;
  }

 private:
  const toml::table* table_;
  std::string name_, source_;
  std::vector<std::string> keys_;
};

const toml::table* subtable(const toml::table& root, const std::string& name, const std::string& source) {
  const toml::node* node = root.get(name);
  if (!node) return nullptr;
  if (!node->is_table()) throw InputError(source, "[" + name + "]", "a table");
  return node->as_table();
}

std::string fmt(double x) { return significant_digits(x, 10); }

/// One value of [workload] layers: an integer is a count (the first `count` layers, 0: all of the
/// model's), a string a layer set (core/index_set.hpp) read against each preset's layers.
struct LayersValue {
  std::int64_t count = 0;
  std::optional<std::string> set;
};

/// A generated workload and the layers of it a job runs (empty: all; Job::layers).
struct GridWorkload {
  WorkloadSpec spec;
  std::vector<int> layers;
};

}  // namespace

std::vector<Job> parse_grid(const std::string& text, const std::string& source) {
  toml::table root;
  try {
    root = toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    throw InputError(source, "TOML at line " + std::to_string(e.source().begin.line),
                     "valid TOML", std::string(e.description()));
  }
  (void)TableReader(&root, "top level", source, {"workload", "policy", "budget", "optimum"});
  const toml::table* wt = subtable(root, "workload", source);
  const toml::table* pt = subtable(root, "policy", source);
  const toml::table* bt = subtable(root, "budget", source);
  const toml::table* ot = subtable(root, "optimum", source);
  if (!wt) throw InputError(source, "[workload]", "a table with at least `presets`");
  if (!pt) throw InputError(source, "[policy]", "a table with at least `names`");
  if (!bt) throw InputError(source, "[budget]", "a table with `ratios` and/or `sizes`");

  const TableReader workload(wt, "workload", source, {"presets", "tokens", "layers", "seeds", "params"});
  if (!wt->get("presets")) throw InputError(source, workload.where("presets"), "a list of preset names");
  const auto presets = workload.list<std::string>("presets", {}, "a preset name");
  const auto tokens = workload.list<std::int64_t>("tokens", {0}, "an integer");
  std::vector<LayersValue> layers;
  for (const toml::node* v : workload.nodes("layers")) {
    if (v->is_integer()) {
      layers.push_back({*v->value<std::int64_t>(), std::nullopt});
    } else if (v->is_string()) {
      layers.push_back({0, *v->value<std::string>()});
    } else {
      throw InputError(source, workload.where("layers"),
                       "an integer (a count) or a string (a layer set such as \"0,14,20-29\") or a list of them");
    }
  }
  if (layers.empty()) layers.push_back({1, std::nullopt});
  const auto seeds = workload.list<std::int64_t>("seeds", {0}, "an integer");
  for (const auto& p : presets) {
    try {
      (void)find_preset(p);
    } catch (const InputError&) {
      std::string known;
      for (const Preset& preset : subevict::presets()) {
        if (!known.empty()) known += ", ";
        known += preset.name;
      }
      throw InputError(source, workload.where("presets"), "preset names (" + known + ")", p);
    }
  }
  for (auto t : tokens)
    if (t < 0 || t > 1 << 20) throw InputError(source, workload.where("tokens"), "integers in [0, 2^20] (0: the preset's default)", std::to_string(t));
  for (const auto& l : layers)
    if (!l.set && l.count < 0) throw InputError(source, workload.where("layers"), "integers >= 0 (0: all of the model's)", std::to_string(l.count));
  for (auto s : seeds)
    if (s < 0) throw InputError(source, workload.where("seeds"), "integers >= 0", std::to_string(s));

  // Generator parameters: each LLM-like field, a value or a list; the product over the fields.
  std::vector<std::string> param_keys;
  const LlmLikeParams defaults;
  for_each_llm_field(defaults, [&](const char* name, const auto&, const char*) { param_keys.push_back(name); });
  const toml::table* params_table = wt->get("params") ? wt->get("params")->as_table() : nullptr;
  if (wt->get("params") && !params_table) throw InputError(source, workload.where("params"), "a table [workload.params]");
  const TableReader params(params_table, "workload.params", source, param_keys);
  std::vector<std::pair<std::string, std::vector<double>>> param_lists;
  for (const auto& key : param_keys) {
    if (params_table && params_table->get(key)) param_lists.emplace_back(key, params.list<double>(key, {}, "a number"));
  }

  const TableReader policy(pt, "policy", source, {"names", "horizon"});
  if (!pt->get("names")) throw InputError(source, policy.where("names"), "a list of policy names");
  const auto names = policy.list<std::string>("names", {}, "a policy name");
  const auto horizons = policy.list<std::int64_t>("horizon", {16}, "an integer");
  if (horizons.size() != 1 || horizons[0] < 1 || horizons[0] > 1 << 20) {
    throw InputError(source, policy.where("horizon"), "one integer >= 1");
  }
  // Each name is one policy NAME[:KEY=VALUE,...] (greedy/eviction/policies/policy_spec.hpp); jobs carry its label.
  std::vector<greedy::PolicySpec> specs;
  for (const auto& n : names) specs.push_back(greedy::parse_policy_spec(n, source, policy.where("names"), int(horizons[0])));

  const TableReader budget(bt, "budget", source, {"ratios", "sizes"});
  const auto ratios = budget.list<double>("ratios", {}, "a number");
  const auto sizes = budget.list<std::int64_t>("sizes", {}, "an integer");
  if (ratios.empty() && sizes.empty()) throw InputError(source, "[budget]", "at least one of `ratios` and `sizes`");
  for (double r : ratios)
    if (!(r > 0.0 && r <= 1.0)) throw InputError(source, budget.where("ratios"), "ratios in (0, 1]", fmt(r));
  for (auto s : sizes)
    if (s < 1) throw InputError(source, budget.where("sizes"), "integers >= 1", std::to_string(s));

  const TableReader optimum(ot, "optimum", source, {"modes"});
  std::vector<greedy::OptimumMode> modes;
  for (const auto& m : optimum.list<std::string>("modes", {"flow"}, "a mode name")) {
    try {
      modes.push_back(greedy::parse_optimum_mode(m, source));
    } catch (const InputError&) {
      throw InputError(source, optimum.where("modes"), "none, flow or oracle", m);
    }
  }

  // Workloads: presets x tokens x layers x seeds x params; validated before any job exists.
  std::vector<GridWorkload> workloads;
  std::vector<std::size_t> index(param_lists.size(), 0);
  for (const auto& p : presets) {
    const Preset& preset = find_preset(p);
    for (auto t : tokens) {
      const int n = t == 0 ? preset.default_tokens : int(t);
      for (auto s : sizes)
        if (s > n) throw InputError(source, budget.where("sizes"), "sizes <= tokens (" + std::to_string(n) + " for preset " + p + ")", std::to_string(s));
      for (const auto& l : layers) {
        // A count runs its first layers; a set generates layers 0 up to its last and runs its own,
        // stored as a count when it is every layer from 0 (so "0-1" and 2 are one job).
        std::int64_t count = l.count;
        std::vector<int> chosen;
        if (l.set) {
          chosen = parse_index_set(*l.set, preset.layers,
                                   {source, workload.where("layers") + " = \"" + *l.set + "\" for preset " + p, "layers"});
          count = chosen.back() + 1;
          if (chosen.size() == std::size_t(count)) chosen.clear();
        } else if (count > preset.layers) {
          throw InputError(source, workload.where("layers"), "at most " + std::to_string(preset.layers) + " for preset " + p, std::to_string(count));
        }
        for (auto seed : seeds) {
          std::fill(index.begin(), index.end(), 0);
          while (true) {
            WorkloadSpec spec = spec_from_preset(p, n, int(count), std::uint64_t(seed));
            for (std::size_t f = 0; f < param_lists.size(); ++f) {
              const double v = param_lists[f].second[index[f]];
              for_each_llm_field(spec.llm, [&](const char* name, auto& field, const char*) {
                if (name != param_lists[f].first) return;
                using F = std::decay_t<decltype(field)>;
                if constexpr (std::is_integral_v<F>) {
                  if (v != std::floor(v) || v < double(std::numeric_limits<F>::min()) ||
                      v > double(std::numeric_limits<F>::max())) {
                    throw InputError(source, params.where(name), "an integer in range", fmt(v));
                  }
                }
                field = F(v);
              });
            }
            try {
              spec.llm.validate();
            } catch (const InputError& e) {
              throw InputError(source, "[workload.params]", "valid generator parameters (" + std::string(e.what()) + ")");
            }
            workloads.push_back({spec, chosen});
            std::size_t f = 0;
            while (f < index.size() && ++index[f] == param_lists[f].second.size()) index[f++] = 0;
            if (f == index.size()) break;
          }
        }
      }
    }
  }

  std::map<std::string, Job> jobs;
  auto add = [&](Job job) {
    const std::string id = job.id();
    const auto [it, inserted] = jobs.emplace(id, job);
    if (!inserted && it->second.canonical() != job.canonical()) {
      throw std::logic_error("sweep: job id collision for " + id);
    }
  };
  for (const auto& w : workloads)
    for (const auto& spec : specs)
      for (auto mode : modes) {
        Job job;
        job.workload = w.spec;
        job.layers = w.layers;
        job.policy = spec.label();
        job.horizon = spec.horizon;
        job.optimum = mode;
        job.budget_kind = BudgetKind::kRatio;
        for (double r : ratios) {
          job.budget_value = r;
          add(job);
        }
        job.budget_kind = BudgetKind::kSize;
        for (auto s : sizes) {
          job.budget_value = double(s);
          add(job);
        }
      }
  // Policies whose parameters do not fit a budget (streamingllm's sinks >= k, ...) are rejected
  // here by reset() on a small stand-in input of the job's length, once per (policy, n, k).
  std::set<std::tuple<std::string, int, int>> checked;
  for (const auto& [id, job] : jobs) {
    const int n = job.workload.shape.tokens, k = job.budget_size();
    if (!checked.emplace(job.policy, n, k).second) continue;
    greedy::check_policy_budget(greedy::parse_policy_spec(job.policy, source, policy.where("names"), job.horizon), n, k,
                                source, policy.where("names"));
  }
  std::vector<Job> out;
  out.reserve(jobs.size());
  for (auto& [id, job] : jobs) out.push_back(std::move(job));
  return out;
}

std::vector<Job> read_grid(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "grid", "a readable TOML file");
  std::ostringstream text;
  text << in.rdbuf();
  return parse_grid(text.str(), path);
}

std::vector<Job> shard_jobs(const std::vector<Job>& jobs, int index, int count) {
  if (count < 1 || index < 0 || index >= count) {
    throw std::invalid_argument("shard_jobs: expected 0 <= index < count");
  }
  std::vector<Job> out;
  for (std::size_t j = std::size_t(index); j < jobs.size(); j += std::size_t(count)) out.push_back(jobs[j]);
  return out;
}

std::pair<int, int> parse_shard(const std::string& text) {
  const auto slash = text.find('/');
  try {
    if (slash != std::string::npos) {
      std::size_t a = 0, b = 0;
      const int i = std::stoi(text.substr(0, slash), &a);
      const int n = std::stoi(text.substr(slash + 1), &b);
      if (a == slash && b == text.size() - slash - 1 && n >= 1 && i >= 0 && i < n) return {i, n};
    }
  } catch (const std::exception&) {
  }
  throw InputError("sweep", "--shard", "i/N with 0 <= i < N", text);
}

}  // namespace subevict::sweep
