#include "proofs_checks/attention_identities_checks.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>

#include "core/attention.hpp"
#include "core/metrics.hpp"
#include "core/tolerance.hpp"
#include "proofs_checks/format.hpp"
#include "proofs_checks/function_check.hpp"

namespace subevict::proofs_checks {
namespace {

/// One sampled row: where it is, its logits, its tracked set, the head's values.
struct Row {
  int layer = 0, head = 0, index = 0;
  const Eigen::VectorXd& logits;
  const std::vector<bool>& in_set;
  const ConstHeadMap& v;
  double max_v = 0;  ///< max_j |v_j| over the head's tokens
};

template <typename Visit>
void for_each_row(const Workload& w, const RowSample& sample, Visit visit) {
  const Shape& s = w.shape();
  std::mt19937_64 rng(sample.seed);
  std::vector<int> layers = sample.layers;
  if (layers.empty()) {
    for (int l = 0; l < s.layers; ++l) layers.push_back(l);
  }
  for (int l : layers) {
    for (int h = 0; h < s.q_heads; ++h) {
      const ConstHeadMap q = w.q(l, h), k = w.k(l, s.kv_head_of(h)), v = w.v(l, s.kv_head_of(h));
      double max_v = 0;
      for (int j = 0; j < s.tokens; ++j) max_v = std::max(max_v, v.row(j).cast<double>().norm());
      for (int trial = 0; trial < sample.rows_per_head && s.tokens > 1; ++trial) {
        const int i = std::uniform_int_distribution<int>(1, s.tokens - 1)(rng);
        const Eigen::VectorXd logits = causal_logits(q, k, i, w.score_scale());
        std::vector<bool> in_set(std::size_t(i) + 1);
        for (int j = 0; j < i; ++j) in_set[std::size_t(j)] = std::bernoulli_distribution(0.2)(rng);
        in_set[std::size_t(i)] = true;  // the current token always sees itself
        visit(Row{l, h, i, logits, in_set, v, max_v});
      }
    }
  }
}

std::string where(const Row& row) {
  return "layer " + std::to_string(row.layer) + ", head " + std::to_string(row.head) + ", row " +
         std::to_string(row.index);
}

/// Records one row's comparison: slack ≥ −tol holds; the first failure becomes the counterexample.
void record(CheckResult& r, const Row& row, double slack, double tol, const std::string& what,
            std::vector<Measurement> numbers) {
  ++r.instances;
  ++r.hypotheses_held;
  r.worst_slack = std::min(r.worst_slack, slack);
  if (slack >= -tol) return;
  ++r.violations;
  if (!r.counterexample) r.counterexample = Counterexample{where(row) + ": " + what, std::move(numbers)};
}

/// One row's deviation from an identity, with words that describe it.
struct Deviation {
  double value = 0;  ///< |lhs − rhs| (NaN counts as infinite)
  std::string what;
};

/// An identity of the definitions measured on every sampled row: the largest deviation, and the
/// rows where it exceeds the rounding allowance Tol<double>::sum(tokens) (the first in the notes).
template <typename Measure>
CheckResult deviation_measurement(const Workload& w, const RowSample& sample, const std::string& description,
                                  Measure measure) {
  CheckResult r;
  const double tol = Tol<double>::sum(std::size_t(w.shape().tokens));
  double worst = 0;
  long long beyond = 0;
  std::string first_beyond;
  for_each_row(w, sample, [&](const Row& row) {
    const Deviation d = measure(row);
    const double deviation = std::isnan(d.value) ? std::numeric_limits<double>::infinity() : d.value;
    ++r.instances;
    worst = std::max(worst, deviation);
    if (deviation > tol && beyond++ == 0) first_beyond = " First row beyond rounding: " + where(row) + ": " + d.what + ".";
  });
  conclude_measurement(r);
  r.measurements = {{"rows", double(r.instances), "sampled query rows"},
                    {"max_deviation", worst, description},
                    {"rows_beyond_rounding", double(beyond), "rows whose deviation exceeds 4 (n + 1) eps = " + format_number(tol)}};
  r.key_number = description.substr(0, description.find(',')) + " " + format_number(worst) + " (" +
                 std::to_string(r.instances) + " rows, " + std::to_string(beyond) + " beyond rounding)";
  r.notes = "A measurement: the identity follows from the definitions, so only rounding (or a wrong implementation) "
            "moves it from 0." + first_beyond;
  return r;
}

}  // namespace

CheckResult check_row_sums(const Workload& w, const RowSample& sample, const SoftmaxFunction& softmax_fn) {
  return deviation_measurement(w, sample, "max |sum - 1|, over all sampled rows", [&](const Row& row) {
    const double sum = softmax_fn(row.logits).sum();
    return Deviation{std::fabs(sum - 1.0), "attention weights sum to " + format_number(sum)};
  });
}

CheckResult check_tv_identity(const Workload& w, const RowSample& sample, const SoftmaxFunction& softmax_fn,
                              const TrackedAttentionFunction& tracked) {
  return deviation_measurement(w, sample, "max |TV - (1 - r)|, over all sampled rows", [&](const Row& row) {
    const Eigen::VectorXd a = softmax_fn(row.logits);
    const double tv = total_variation(a, tracked(row.logits, row.in_set));
    const double lost = 1.0 - retained_mass(a, row.in_set);
    return Deviation{std::fabs(tv - lost), "TV(a, a~) = " + format_number(tv) + " but 1 - r(G) = " + format_number(lost)};
  });
}

CheckResult check_output_bound(const Workload& w, const RowSample& sample, const SoftmaxFunction& softmax_fn,
                               const TrackedAttentionFunction& tracked, double factor) {
  CheckResult r;
  const double tol = Tol<double>::sum(std::size_t(w.shape().tokens));
  for_each_row(w, sample, [&](const Row& row) {
    const Eigen::VectorXd a = softmax_fn(row.logits);
    const double error = (attention_output(a, row.v) - attention_output(tracked(row.logits, row.in_set), row.v)).norm();
    const double bound = factor * (1.0 - retained_mass(a, row.in_set)) * row.max_v;
    record(r, row, bound - error, tol * std::max(1.0, row.max_v),
           "|o - o~| = " + format_number(error) + " > 2 (1 - r) max |v| = " + format_number(bound),
           {{"error", error, "|o - o~|"}, {"bound", bound, "2 (1 - r(G)) max |v|"}});
  });
  conclude(r);
  r.measurements = {{"rows", double(r.instances), "sampled query rows"},
                    {"min_slack", r.worst_slack, "smallest 2 (1 - r) max|v| - |o - o~|, units of v"}};
  r.key_number = "min slack " + format_number(r.worst_slack) + " (" + std::to_string(r.instances) + " rows)";
  return r;
}

std::vector<std::unique_ptr<Check>> attention_identity_checks() {
  const std::string source = "proofs_checks/attention_identities_checks.cpp";
  const std::vector<std::string> families = {"LLM-like workload (or imported tensors), random tracked sets"};
  const auto sample = [](const CheckContext& c) {
    if (c.workload == nullptr) throw std::invalid_argument("attention identity checks: CheckContext::workload is null");
    return RowSample{scaled_count(16, c.effort), c.seed, c.layers};
  };
  const SoftmaxFunction exact = [](const Eigen::VectorXd& x) { return softmax(x); };
  const TrackedAttentionFunction tracked = [](const Eigen::VectorXd& x, const std::vector<bool>& g) {
    return tracked_attention(x, g);
  };
  std::vector<std::unique_ptr<Check>> checks;
  checks.push_back(make_check({"core.row_sums", "theory.md §1; H2O Def D.9",
                               "how far the library's exact causal attention rows are from summing to 1; they sum to 1 "
                               "by the definition of softmax, so this measures rounding",
                               "finite logits",
                               "max |sum_j a_ij - 1| over the sampled rows, and the rows where it exceeds 4 (n + 1) eps",
                               families, source, Kind::measurement},
                              [=](const CheckContext& c) { return check_row_sums(*c.workload, sample(c), exact); }));
  checks.push_back(make_check(
      {"core.tv_identity", "theory.md §1; H2O Def D.10",
       "how far TV(a_i, a~_i) is from 1 - r_i(G) for the library's tracked attention; equal by the definition of "
       "a~ as a renormalised on G, so this measures rounding",
       "G contains the current token",
       "max |TV(a_i, a~_i) - (1 - r_i(G))| over the sampled rows, and the rows where it exceeds 4 (n + 1) eps",
       families, source, Kind::measurement},
      [=](const CheckContext& c) { return check_tv_identity(*c.workload, sample(c), exact, tracked); }));
  checks.push_back(make_check(
      {"core.output_bound", "theory.md §1", "evicting tokens moves the attention output by at most twice the lost mass times max |v|",
       "G contains the current token", "|o_i - o~_i| <= 2 (1 - r_i(G)) max_j |v_j|", families, source},
      [=](const CheckContext& c) { return check_output_bound(*c.workload, sample(c), exact, tracked); }));
  return checks;
}

}  // namespace subevict::proofs_checks
