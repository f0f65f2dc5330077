#include "sweep/job.hpp"

#include <cstdio>
#include <sstream>

#include "core/index_set.hpp"
#include "core/number_text.hpp"
#include "greedy/eviction/evaluation/simulator.hpp"

namespace subevict::sweep {

std::string exact_text(double x) { return significant_digits(x, 17); }

std::string to_string(BudgetKind kind) { return kind == BudgetKind::kRatio ? "ratio" : "size"; }

int Job::budget_size() const {
  const greedy::Budget b = budget_kind == BudgetKind::kRatio
                               ? greedy::Budget::ratio_of_tokens(budget_value)
                               : greedy::Budget::absolute(int(budget_value));
  return b.resolve(workload.shape.tokens, 0);
}

std::vector<int> Job::run_layers() const {
  if (!layers.empty()) return layers;
  std::vector<int> every(std::size_t(workload.shape.layers));
  for (int l = 0; l < workload.shape.layers; ++l) every[std::size_t(l)] = l;
  return every;
}

std::string Job::canonical() const {
  std::ostringstream s;
  const Shape& sh = workload.shape;
  s << "subevict.sweep.v1;preset=" << workload.preset << ";generator=" << subevict::to_string(workload.kind)
    << ";tokens=" << sh.tokens << ";layers=" << sh.layers;
  if (!layers.empty()) s << ";layer_set=" << format_index_set(layers);
  s << ";q_heads=" << sh.q_heads
    << ";kv_heads=" << sh.kv_heads << ";head_dim=" << sh.head_dim << ";seed=" << workload.seed;
  for_each_llm_field(workload.llm, [&](const char* name, const auto& field, const char*) {
    s << ';' << name << '=' << exact_text(double(field));
  });
  s << ";policy=" << policy;
  if (policy == "lookahead") s << ";horizon=" << horizon;
  s << ";budget=" << to_string(budget_kind) << ':' << exact_text(budget_value)
    << ";optimum=" << greedy::to_string(optimum);
  return s.str();
}

std::string fnv1a_hex(const std::string& text) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

std::string Job::id() const { return fnv1a_hex(canonical()); }

JobResult run_job(const Job& job) {
  const Workload w = generate_workload(job.workload, 1);
  const Shape& shape = w.shape();
  greedy::HeadEvaluationOptions options;
  options.budget = job.budget_size();
  options.seed = job.workload.seed;
  options.horizon = job.horizon;
  options.optimum = job.optimum;
  const greedy::PolicySpec spec = greedy::parse_policy_spec(job.policy, "sweep job " + job.id(), "policy", job.horizon);
  JobResult r;
  r.budget_size = options.budget;
  const double n = shape.tokens;
  double policy_total = 0.0, opt_total = 0.0, opt_mean = 0.0, oracle_mean = 0.0;
  int with_opt = 0, with_oracle = 0;
  for (int layer : job.run_layers()) {
    for (int kv = 0; kv < shape.kv_heads; ++kv) {
      const greedy::HeadEvaluation e = greedy::evaluate_head(w, layer, kv, {spec}, options);
      const greedy::Trace& t = e.traces.front();
      const double g = e.heads, total = t.total_retained_mass();
      ++r.groups;
      r.mean_retained_mass += total / g / n;
      r.mean_total_variation += greedy::mean_total_variation(t);
      r.mean_output_error += greedy::mean_output_error(t);
      if (t.budget != e.budget) ++r.uncompressed_groups;
      policy_total += total;
      if (e.has_optimum) {
        opt_total += e.optimum.value;
        opt_mean += e.optimum.value / g / n;
        ++with_opt;
      }
      if (e.has_oracle) {
        oracle_mean += e.oracle.total / g / n;
        ++with_oracle;
      }
    }
  }
  const double groups = r.groups;
  r.mean_retained_mass /= groups;
  r.mean_total_variation /= groups;
  r.mean_output_error /= groups;
  if (with_opt == r.groups) {
    r.optimum_mean_retained_mass = opt_mean / groups;
    r.ratio_to_optimum = opt_total > 0.0 ? policy_total / opt_total : 1.0;
  }
  if (with_oracle == r.groups) r.oracle_mean_retained_mass = oracle_mean / groups;
  return r;
}

}  // namespace subevict::sweep
