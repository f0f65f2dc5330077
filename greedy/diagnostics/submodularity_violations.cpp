#include "greedy/diagnostics/submodularity_violations.hpp"

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>
#include <string>

#include "greedy/optimizers/random.hpp"

namespace subevict::greedy {

namespace {

struct Tester {
  const SetFunction& f;
  double tolerance;
  std::uint64_t& oracle_calls;

  double gain(std::vector<Element> set, Element x) const {
    const double without = f.evaluate(set);
    set.push_back(x);
    oracle_calls += 2;
    return f.evaluate(set) - without;
  }

  /// Fills the gains of `v` and returns whether it violates.
  bool violates(SubmodularityViolation& v) const {
    v.gain_small = gain(v.x_set, v.element);
    v.gain_large = gain(v.y_set, v.element);
    const double scale = std::max({1.0, std::fabs(v.gain_small), std::fabs(v.gain_large)});
    return v.gain_large - v.gain_small > tolerance * scale;
  }

  /// Tries one removal; keeps it when the triple still violates.
  bool try_shrink(SubmodularityViolation& v, Element a, bool from_x, bool from_y) const {
    SubmodularityViolation candidate = v;
    if (from_x) {
      std::erase(candidate.x_set, a);
    }
    if (from_y) {
      std::erase(candidate.y_set, a);
    }
    if (!violates(candidate)) {
      return false;
    }
    v = std::move(candidate);
    return true;
  }

  void shrink(SubmodularityViolation& v) const {
    for (bool changed = true; changed;) {
      changed = false;
      for (Element a : std::vector<Element>(v.y_set)) {
        const bool in_x = std::find(v.x_set.begin(), v.x_set.end(), a) != v.x_set.end();
        if (in_x ? (try_shrink(v, a, true, true) || try_shrink(v, a, true, false))
                 : try_shrink(v, a, false, true)) {
          changed = true;
        }
      }
    }
  }
};

}  // namespace

ViolationReport find_submodularity_violations(const SetFunction& f,
                                              const ViolationSearchOptions& options) {
  const std::size_t n = f.ground_size();
  if (options.trials == 0 || n == 0) {
    throw std::invalid_argument(
        "find_submodularity_violations: expected trials > 0 and a non-empty "
        "ground set, got trials = " +
        std::to_string(options.trials) + ", n = " + std::to_string(n));
  }
  if (!(options.tolerance >= 0) || !(options.confidence > 0 && options.confidence < 1)) {
    throw std::invalid_argument(
        "find_submodularity_violations: expected tolerance >= 0 and "
        "confidence in (0, 1)");
  }
  ViolationReport report;
  report.trials = options.trials;
  const Tester tester{f, options.tolerance, report.oracle_calls};
  std::mt19937_64 engine(options.seed);
  for (std::uint64_t trial = 0; trial < options.trials; ++trial) {
    SubmodularityViolation v;
    v.element = Element(uniform_below(engine, n));
    const double p = uniform_unit(engine);
    const double q = uniform_unit(engine);
    for (Element e = 0; e < n; ++e) {
      if (e != v.element && uniform_unit(engine) < p) {
        v.y_set.push_back(e);
        if (uniform_unit(engine) < q) {
          v.x_set.push_back(e);
        }
      }
    }
    if (tester.violates(v)) {
      ++report.violations;
      if (!report.minimal) {
        tester.shrink(v);
        report.minimal = std::move(v);
      }
    }
  }
  report.rate = double(report.violations) / double(report.trials);
  report.interval =
      clopper_pearson((long long)report.violations, (long long)report.trials, options.confidence);
  return report;
}

}  // namespace subevict::greedy
