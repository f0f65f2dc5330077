#include "proofs_checks/perturbed_increments.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <stdexcept>

#include "core/tolerance.hpp"
#include "greedy/optimizers/random.hpp"
#include "proofs_checks/format.hpp"

namespace subevict::proofs_checks {
namespace {

/// The last accumulated error a set was given, and at which step.
struct LastError {
  int step = -1;
  double error = 0.0;
};

/// Every set's last accumulated error along one trajectory.
using ErrorLedger = std::map<std::vector<int>, LastError>;

/// The accumulated errors E_i(T) that increments of at most b can reach at step i: ±(i + 1) b for a
/// set never given one (E_{−1} = 0), E_j ± (i − j) b after the value E_j at step j.
std::pair<double, double> reachable(const ErrorLedger& ledger, const std::vector<int>& set, int step, double b) {
  const auto it = ledger.find(set);
  const LastError last = it == ledger.end() ? LastError{} : it->second;
  const double room = double(step - last.step) * b;
  return {last.error - room, last.error + room};
}

/// Fills errors from the reachable ranges with pick(lo, hi, candidate index) and records them.
template <class Pick>
std::vector<double> fill_errors(ErrorLedger& ledger, int step, const std::vector<std::vector<int>>& candidates,
                                double b, Pick pick) {
  std::vector<double> errors(candidates.size());
  for (std::size_t c = 0; c < candidates.size(); ++c) {
    const auto [lo, hi] = reachable(ledger, candidates[c], step, b);
    errors[c] = pick(lo, hi, c);
    ledger[candidates[c]] = {step, errors[c]};
  }
  return errors;
}

class Adversary final : public IncrementPerturbation {
 public:
  explicit Adversary(double b) : b_(b) {}
  std::vector<double> errors(int step, const std::vector<std::vector<int>>& candidates,
                             const std::vector<double>& exact_values) override {
    const std::size_t best = std::size_t(std::max_element(exact_values.begin(), exact_values.end()) - exact_values.begin());
    return fill_errors(ledger_, step, candidates, b_,
                       [best](double lo, double hi, std::size_t c) { return c == best ? lo : hi; });
  }

 private:
  double b_;
  ErrorLedger ledger_;
};

class RandomErrors final : public IncrementPerturbation {
 public:
  RandomErrors(double b, std::uint64_t seed) : b_(b), engine_(seed) {}
  std::vector<double> errors(int step, const std::vector<std::vector<int>>& candidates,
                             const std::vector<double>&) override {
    return fill_errors(ledger_, step, candidates, b_, [this](double lo, double hi, std::size_t) {
      return lo + (hi - lo) * greedy::uniform_unit(engine_);
    });
  }

 private:
  double b_;
  std::mt19937_64 engine_;
  ErrorLedger ledger_;
};

/// One eviction step of a process: the candidates G_i \ {v} in order of the evicted token v, their
/// exact values, the errors the process saw and the candidate it kept.
struct EvictionStep {
  int step = 0;
  std::vector<std::vector<int>> candidates;
  std::vector<double> exact, errors;
  std::size_t kept = 0;
};

/// The greedy process on `head` with budget k and transform h: the tracked acc_i over G_i, and at
/// each step with |G_i| = k + 1 the candidate `choice` picks given the perturbation's errors (none:
/// all zero). Calls on_step for each eviction step; returns f_{S_{n−1},n−1}(S_{n−1}).
template <class OnStep>
double run_process(const SmallHead& head, int budget, const Transform& h, IncrementPerturbation* perturbation,
                   const PerturbedChoice& choice, OnStep on_step) {
  const int n = head.tokens();
  const double h0 = h(0.0);
  Eigen::VectorXd acc = Eigen::VectorXd::Zero(n);
  const auto value = [&](const std::vector<int>& set) {
    double z = 0.0;
    for (int t : set) z += acc[t];
    return h(z) - h0;
  };
  std::vector<int> cache;
  for (int i = 0; i < n; ++i) {
    std::vector<int> g = cache;
    g.push_back(i);  // cache holds tokens < i, ascending
    acc += tracked_row(head, i, g);
    if (int(g.size()) <= budget) {
      cache = std::move(g);
      continue;
    }
    EvictionStep s;
    s.step = i;
    for (std::size_t v = 0; v < g.size(); ++v) {
      std::vector<int> t;
      for (std::size_t e = 0; e < g.size(); ++e) {
        if (e != v) t.push_back(g[e]);
      }
      s.exact.push_back(value(t));
      s.candidates.push_back(std::move(t));
    }
    s.errors = perturbation ? perturbation->errors(i, s.candidates, s.exact) : std::vector<double>(g.size(), 0.0);
    if (s.errors.size() != g.size()) {
      throw std::invalid_argument("check_lemma_d19: the perturbation returned " + std::to_string(s.errors.size()) +
                                  " errors for " + std::to_string(g.size()) + " candidates");
    }
    s.kept = choice(s.exact, s.errors);
    if (s.kept >= g.size()) throw std::invalid_argument("check_lemma_d19: the choice kept no candidate");
    cache = s.candidates[s.kept];
    on_step(s);
  }
  return value(cache);
}

}  // namespace

PerturbationFactory adversarial_perturbation() {
  return [](double b, std::uint64_t) { return std::make_unique<Adversary>(b); };
}

PerturbationFactory random_perturbation() {
  return [](double b, std::uint64_t seed) { return std::make_unique<RandomErrors>(b, seed); };
}

PerturbedChoice perturbed_argmax() {
  return [](const std::vector<double>& exact, const std::vector<double>& errors) {
    std::size_t best = 0;
    for (std::size_t c = 1; c < exact.size(); ++c) {
      if (exact[c] + errors[c] > exact[best] + errors[best]) best = c;
    }
    return best;
  };
}

CheckResult check_lemma_d19(const TrajectorySetup& setup, const std::vector<PerturbationFactory>& perturbations,
                            const PerturbedChoice& choice, double epsilon) {
  if (!(epsilon > 0.0) || !std::isfinite(epsilon)) {
    throw std::invalid_argument("check_lemma_d19: expected epsilon > 0, got " + format_number(epsilon));
  }
  CheckResult result;
  double max_loss = 0, max_loss_ratio = 0, max_error_ratio = 0, max_final_gap = -std::numeric_limits<double>::infinity();
  long long flips = 0, bad_errors = 0;
  for (std::size_t p = 0; p < perturbations.size(); ++p) {
    for (std::size_t c = 0; c < setup.heads.size(); ++c) {
      const SmallHead& head = setup.heads[c];
      const int n = head.tokens();
      const double b = epsilon / (2.0 * n);
      const double tol = Tol<double>::sum(std::size_t(n));
      const double exact_final = run_process(head, setup.budget, setup.h, nullptr, perturbed_argmax(), [](const EvictionStep&) {});
      const std::unique_ptr<IncrementPerturbation> perturbation = perturbations[p](b, setup.seed + 7919 * p + c);
      ErrorLedger seen;  // the check's own record of the errors, to verify the hypotheses
      bool hypotheses = true;
      const double final_value = run_process(head, setup.budget, setup.h, perturbation.get(), choice, [&](const EvictionStep& s) {
        for (std::size_t v = 0; v < s.candidates.size(); ++v) {
          const auto [lo, hi] = reachable(seen, s.candidates[v], s.step, b);
          const double slack = tol * std::max(epsilon, std::abs(s.errors[v]));
          if (!(s.errors[v] >= lo - slack && s.errors[v] <= hi + slack)) hypotheses = false;
          seen[s.candidates[v]] = {s.step, s.errors[v]};
          max_error_ratio = std::max(max_error_ratio, std::abs(s.errors[v]) / (epsilon / 2.0));
        }
        const std::size_t best = std::size_t(std::max_element(s.exact.begin(), s.exact.end()) - s.exact.begin());
        const double loss = s.exact[best] - s.exact[s.kept];
        flips += loss > 0.0 ? 1 : 0;
        ++result.instances;
        if (!hypotheses) {
          ++bad_errors;
          return;
        }
        ++result.hypotheses_held;
        max_loss = std::max(max_loss, loss);
        max_loss_ratio = std::max(max_loss_ratio, loss / epsilon);
        result.worst_slack = std::min(result.worst_slack, epsilon - loss);
        if (loss > epsilon + tol * std::max(1.0, std::abs(s.exact[best]))) {
          ++result.violations;
          if (!result.counterexample) {
            result.counterexample = Counterexample{
                head.label + ", 0-based step " + std::to_string(s.step) + ", k = " + std::to_string(setup.budget) +
                    ": the perturbed step keeps " + set_text(s.candidates[s.kept]) + " with f = " +
                    format_number(s.exact[s.kept]) + " < max_v f(G \\ {v}) - eps = " + format_number(s.exact[best]) +
                    " - " + format_number(epsilon) + " (best " + set_text(s.candidates[best]) +
                    "); errors there " + format_number(s.errors[s.kept]) + " and " + format_number(s.errors[best]) +
                    ", increment bound eps/(2n) = " + format_number(b),
                {{"kept", s.exact[s.kept], "f_{S_i,i} of the kept cache"},
                 {"best", s.exact[best], "max_v f_{S_i,i}(G_i \\ {v})"},
                 {"loss", loss, "best - kept"}}};
          }
        }
      });
      max_final_gap = std::max(max_final_gap, exact_final - final_value);
    }
  }
  conclude(result);
  result.measurements = {
      {"epsilon", epsilon, "eps; each increment of the family is off by at most eps/(2n)"},
      {"max_step_loss", max_loss, "largest max_v f(G_i \\ {v}) - f(S~_i) at a step whose hypotheses held"},
      {"max_step_loss_over_epsilon", max_loss_ratio, "max_step_loss / eps (at most 1 by the lemma)"},
      {"min_slack", result.worst_slack, "smallest eps - step loss"},
      {"changed_steps", double(flips), "eviction steps where the perturbed choice lost value against the exact step"},
      {"max_error_over_half_epsilon", max_error_ratio, "largest |E_i(T)| / (eps/2) the perturbations used"},
      {"steps_with_unreachable_errors", double(bad_errors),
       "steps after a perturbation returned an error no increments of at most eps/(2n) reach"},
      {"max_final_gap", std::isfinite(max_final_gap) ? max_final_gap : 0.0,
       "largest f(S_n) of the exact process minus f(S~_n) of the perturbed one (whole trajectories; not bounded "
       "by the lemma)"}};
  result.key_number = std::to_string(result.violations) + " of " + std::to_string(result.hypotheses_held) +
                      " steps lose more than eps; largest loss " + format_number(max_loss_ratio) + " eps";
  result.notes = std::to_string(setup.heads.size()) + " heads x " + std::to_string(perturbations.size()) +
                 " perturbations, budget k = " + std::to_string(setup.budget) + ", h(z) = " + setup.h_name +
                 ", eps = " + format_number(epsilon) +
                 ". The family's increments f_{S_i,i} - f_{S_{i-1},i-1} carry errors of at most eps/(2n), so "
                 "|f~ - f| <= eps/2; each eviction step of the perturbed process is compared with the exact greedy "
                 "step from the same cache. Whole trajectories can differ by more than eps once a step chooses "
                 "differently (max_final_gap), which the lemma does not bound.";
  return result;
}

}  // namespace subevict::proofs_checks
