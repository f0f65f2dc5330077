#pragma once
// Random small instances of every submodular family of greedy/, drawn with RapidCheck generators
// (call only inside a property). Weights are dyadic (multiples of 1/8, at most 8), so sums are
// exact in double and ties between equal gains are exact ties, which the tie-breaking tests need.
#include <rapidcheck.h>

#include <Eigen/Core>
#include <memory>
#include <string>
#include <vector>

#include "greedy/functions/budget_additive.hpp"
#include "greedy/functions/concave_over_modular.hpp"
#include "greedy/functions/facility_location.hpp"
#include "greedy/functions/modular.hpp"
#include "greedy/functions/set_function.hpp"
#include "greedy/functions/weighted_coverage.hpp"

namespace subevict::greedy::testing {

enum class Family {
  kModular,
  kIdentity,
  kSqrt,
  kLog,
  kBudgetAdditive,
  kFacilityLocation,
  kCoverage
};

inline const std::vector<Family>& all_submodular_families() {
  static const std::vector<Family> families{
      Family::kModular,        Family::kIdentity,         Family::kSqrt,    Family::kLog,
      Family::kBudgetAdditive, Family::kFacilityLocation, Family::kCoverage};
  return families;
}

/// A multiple of 1/8 in [0, 8].
inline double dyadic() { return *rc::gen::inRange(0, 65) / 8.0; }

inline std::vector<double> dyadic_vector(std::size_t size) {
  std::vector<double> out(size);
  for (double& x : out) {
    x = dyadic();
  }
  return out;
}

/// A random monotone submodular function of `family` on n elements.
inline std::unique_ptr<SetFunction> random_instance(Family family, std::size_t n) {
  switch (family) {
    case Family::kModular:
      return std::make_unique<Modular>(dyadic_vector(n));
    case Family::kIdentity:
      return std::make_unique<ConcaveOverModular>(dyadic_vector(n), Concave::kIdentity);
    case Family::kSqrt:
      return std::make_unique<ConcaveOverModular>(dyadic_vector(n), Concave::kSqrt);
    case Family::kLog:
      return std::make_unique<ConcaveOverModular>(dyadic_vector(n), Concave::kLog);
    case Family::kBudgetAdditive: {
      std::vector<double> weights = dyadic_vector(n);
      return std::make_unique<BudgetAdditive>(std::move(weights), 2 * dyadic());
    }
    case Family::kFacilityLocation: {
      const auto clients = std::size_t(*rc::gen::inRange(1, 7));
      Eigen::MatrixXd similarity(clients, n);
      for (Eigen::Index i = 0; i < similarity.size(); ++i) {
        similarity.data()[i] = dyadic();
      }
      return std::make_unique<FacilityLocation>(std::move(similarity));
    }
    case Family::kCoverage: {
      const auto universe = std::size_t(*rc::gen::inRange(1, 13));
      std::vector<std::vector<std::size_t>> sets(n);
      for (auto& set : sets) {
        set = *rc::gen::container<std::vector<std::size_t>>(
            std::size_t(*rc::gen::inRange(0, 5)), rc::gen::inRange<std::size_t>(0, universe));
      }
      return std::make_unique<WeightedCoverage>(dyadic_vector(universe), sets);
    }
  }
  return nullptr;
}

/// A random family and instance with 1 ≤ n ≤ max_n.
inline std::unique_ptr<SetFunction> random_submodular(std::size_t max_n) {
  const Family family = *rc::gen::elementOf(all_submodular_families());
  const auto n = std::size_t(*rc::gen::inRange<std::size_t>(1, max_n + 1));
  return random_instance(family, n);
}

/// A random sequence of `steps` adds and removes applied to `state` (each step adds a random
/// absent element or removes a random member, whichever is possible).
inline void random_walk(SetState& state, std::size_t steps) {
  const std::size_t n = state.ground_size();
  for (std::size_t step = 0; step < steps; ++step) {
    const bool remove = state.size() == n || (state.size() > 0 && *rc::gen::arbitrary<bool>());
    if (remove) {
      state.remove(state.members()[*rc::gen::inRange<std::size_t>(0, state.size())]);
    } else {
      std::vector<Element> absent;
      for (Element e = 0; e < n; ++e) {
        if (!state.contains(e)) {
          absent.push_back(e);
        }
      }
      state.add(absent[*rc::gen::inRange<std::size_t>(0, absent.size())]);
    }
  }
}

/// Property body shared by every function's test: after a random walk of adds and removes under
/// the checked debug mode (which compares value and every gain with scratch evaluations), each
/// incremental gain equals f(S ∪ {e}) − f(S) evaluated from scratch, within `tolerance`.
inline void check_incremental_gains(const SetFunction& f, double tolerance) {
  auto state = checked_state(f, f.empty_state());
  random_walk(*state, *rc::gen::inRange<std::size_t>(0, 3 * f.ground_size() + 1));
  std::vector<Element> members = state->members();
  const double base = f.evaluate(members);
  RC_ASSERT(std::abs(state->value() - base) <= tolerance * std::max(1.0, std::abs(base)));
  for (Element e = 0; e < f.ground_size(); ++e) {
    if (state->contains(e)) {
      continue;
    }
    members.push_back(e);
    const double scratch = f.evaluate(members) - base;
    members.pop_back();
    RC_ASSERT(std::abs(state->gain(e) - scratch) <= tolerance * std::max(1.0, std::abs(base)));
  }
  auto copy = state->clone();
  RC_ASSERT(copy->value() == state->value());
  RC_ASSERT(copy->members() == state->members());
}

}  // namespace subevict::greedy::testing
