#include "greedy/diagnostics/submodularity_ratio.hpp"

#include <numeric>
#include <stdexcept>
#include <string>

#include "greedy/exact/exhaustive.hpp"
#include "greedy/optimizers/naive_greedy.hpp"
#include "greedy/optimizers/random.hpp"

namespace subevict::greedy {

namespace {

std::vector<Element> resolve_universe(const SetFunction& f,
                                      const std::optional<std::vector<Element>>& universe,
                                      const char* caller) {
  const std::size_t n = f.ground_size();
  if (!universe) {
    std::vector<Element> all(n);
    std::iota(all.begin(), all.end(), Element{0});
    return all;
  }
  std::vector<char> seen(n, 0);
  for (Element e : *universe) {
    if (e >= n || seen[e] != 0) {
      throw std::invalid_argument(std::string(caller) + ": universe element " + std::to_string(e) +
                                  (e >= n
                                       ? " is outside the ground set of size " + std::to_string(n)
                                       : std::string(" is repeated")) +
                                  "; expected distinct elements < n");
    }
    seen[e] = 1;
  }
  return *universe;
}

/// Records the ratio of one pair: `sum` = Σ_{x∈S} Δ(x|L), `joint` = Δ(S|L).
void record(SubmodularityRatio& result, double sum, double joint, const SetState& l_state,
            const std::vector<Element>& s_set) {
  ++result.pairs;
  if (joint <= 0) {
    return;
  }
  const double ratio = sum / joint;
  if (ratio < result.gamma) {
    result.gamma = ratio;
    result.l_set = l_state.members();
    result.s_set = s_set;
  }
}

struct ExactSearch {
  std::size_t k;
  const std::vector<Element>& universe;
  SubmodularityRatio& result;
  std::vector<double> gains;
  std::vector<Element> s_set;

  /// Over L: visit L (the state's set), then its extensions by universe[i], i ≥ first.
  void over_l(SetState& state, std::size_t first) {
    const std::size_t n = state.ground_size();
    gains.assign(n, 0.0);
    for (Element x = 0; x < n; ++x) {
      if (!state.contains(x)) {
        gains[x] = state.gain(x);
        ++result.oracle_calls;
      }
    }
    auto s_state = state.clone();
    over_s(*s_state, state, 0, 0.0);
    for (std::size_t i = first; i < universe.size(); ++i) {
      state.add(universe[i]);
      over_l(state, i + 1);
      state.remove(universe[i]);
    }
  }

  /// Over S ⊆ V \ L by ascending elements ≥ first; `sum` = Σ_{x∈S} Δ(x|L).
  void over_s(SetState& s_state, const SetState& l_state, Element first, double sum) {
    if (s_set.size() >= 2) {
      ++result.oracle_calls;
      record(result, sum, s_state.value() - l_state.value(), l_state, s_set);
    }
    if (s_set.size() == k) {
      return;
    }
    for (Element x = first; x < s_state.ground_size(); ++x) {
      if (l_state.contains(x)) {
        continue;
      }
      s_state.add(x);
      s_set.push_back(x);
      over_s(s_state, l_state, x + 1, sum + gains[x]);
      s_set.pop_back();
      s_state.remove(x);
    }
  }
};

}  // namespace

SubmodularityRatio submodularity_ratio_exact(const SetFunction& f,
                                             const SubmodularityRatioOptions& options) {
  check_cardinality(f, options.k, "submodularity_ratio_exact");
  const std::vector<Element> universe =
      resolve_universe(f, options.universe, "submodularity_ratio_exact");
  const std::uint64_t per_l = count_subsets_up_to(f.ground_size(), options.k) + f.ground_size();
  if (universe.size() >= 63 || per_l > (options.max_pairs >> universe.size())) {
    throw std::invalid_argument(
        "submodularity_ratio_exact: |U| = " + std::to_string(universe.size()) +
        ", n = " + std::to_string(f.ground_size()) + ", k = " + std::to_string(options.k) +
        " needs more than max_pairs = " + std::to_string(options.max_pairs) +
        " evaluations; expected a smaller instance (or use submodularity_ratio_sampled)");
  }
  SubmodularityRatio result;
  result.exact = true;
  ExactSearch search{options.k, universe, result, {}, {}};
  auto state = f.empty_state();
  search.over_l(*state, 0);
  return result;
}

SubmodularityRatio submodularity_ratio_sampled(const SetFunction& f,
                                               const SampledRatioOptions& options) {
  check_cardinality(f, options.k, "submodularity_ratio_sampled");
  const std::vector<Element> universe =
      resolve_universe(f, options.universe, "submodularity_ratio_sampled");
  SubmodularityRatio result;
  std::mt19937_64 engine(options.seed);
  std::vector<Element> outside;
  std::vector<Element> s_set;
  for (std::uint64_t sample = 0; sample < options.samples; ++sample) {
    auto l_state = f.empty_state();
    const double p = uniform_unit(engine);
    for (Element e : universe) {
      if (uniform_unit(engine) < p) {
        l_state->add(e);
      }
    }
    outside.clear();
    for (Element x = 0; x < f.ground_size(); ++x) {
      if (!l_state->contains(x)) {
        outside.push_back(x);
      }
    }
    const std::size_t max_size = std::min(options.k, outside.size());
    if (max_size < 2) {
      continue;
    }
    const std::size_t size = 2 + std::size_t(uniform_below(engine, max_size - 1));
    s_set.clear();
    auto s_state = l_state->clone();
    double sum = 0;
    for (std::size_t i = 0; i < size; ++i) {
      std::swap(outside[i], outside[i + uniform_below(engine, outside.size() - i)]);
      s_set.push_back(outside[i]);
      sum += l_state->gain(outside[i]);
      s_state->add(outside[i]);
      ++result.oracle_calls;
    }
    ++result.oracle_calls;
    record(result, sum, s_state->value() - l_state->value(), *l_state, s_set);
  }
  return result;
}

}  // namespace subevict::greedy
