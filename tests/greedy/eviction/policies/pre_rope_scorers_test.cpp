// Tests that expected_attention, cap, leverage and compactor read the pre-RoPE tensors of a
// HeadGroup where it has them (HeadGroup::has_pre_rope), as kvpress computes them on real models,
// through relations that hold exactly: at the first full step (n = k + 1 tokens, one eviction at
// step k) the average RoPE matrix R̄ of the F positions after the k + 1 tokens is one matrix, and
// the query statistics are linear, so a group with pre-RoPE queries q_pre evicts as a plain group
// (no pre-RoPE tensors) whose queries are R̄ q_pre; leverage reads only keys, so a group with
// pre-RoPE keys evicts at every step as a plain group whose keys are k_pre. Each relation fails
// when a scorer reads the post-RoPE q or k instead, as the queries and keys are drawn independently.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <string>
#include <vector>

#include "core/rotary.hpp"
#include "greedy/eviction/evaluation/simulator.hpp"
#include "greedy/eviction/policies/policy_registry.hpp"
#include "greedy/eviction/policies/policy_spec.hpp"
#include "tests/greedy/naive_eviction.hpp"

namespace subevict::greedy {
namespace {

/// A random instance with independent pre-RoPE queries and keys (another seed) and a Rotary.
struct PreRopeCase {
  naive::Instance post, pre;
  Rotary rotary;

  [[nodiscard]] HeadGroup group() const {
    HeadGroup g = post.group();
    for (const auto& head : pre.q) g.q_pre.emplace_back(head.data(), pre.n, pre.d);
    new (&g.k_pre) ConstHeadMap(pre.k.data(), pre.n, pre.d);
    g.rotary = rotary;
    return g;
  }
};

PreRopeCase gen_case(int n, int d, int g) {
  const auto seed = *rc::gen::arbitrary<std::uint32_t>();
  PreRopeCase c{naive::random_instance(seed, n, d, g, 2.0), naive::random_instance(seed + 7919ULL, n, d, g, 2.0),
                Rotary{double(*rc::gen::inRange(2, 200000)), 2 * *rc::gen::inRange(1, d / 2 + 1)}};
  c.pre.v = c.post.v;  // the values are the same tensor (RoPE does not touch them)
  return c;
}

std::vector<Token> evictions(const HeadGroup& group, const std::string& spec, int budget) {
  SimulationOptions options;
  options.budget = budget;
  options.compute_metrics = false;
  auto policy = make_policy(parse_policy_spec(spec, "test", "policy", 16));
  const Trace trace = simulate(group, *policy, options);
  std::vector<Token> out;
  for (const StepRecord& step : trace.steps) out.push_back(step.evicted);
  return out;
}

RC_GTEST_PROP(PreRopeScorers, QueryStatisticsAreThoseOfThePreRopeQueriesRotatedByTheFutureAverage, ()) {
  const int d = 2 * *rc::gen::inRange(1, 5), g = *rc::gen::inRange(1, 4), k = *rc::gen::inRange(6, 20);
  PreRopeCase c = gen_case(k + 1, d, g);
  const int future = *rc::gen::inRange(0, 700);
  // The plain group's queries: R̄ q_pre, R̄ over the F positions after the k + 1 tokens seen.
  naive::Instance rotated = c.post;
  const Eigen::MatrixXd r = average_rotation(c.rotary, d, k + 1, future);
  for (int h = 0; h < g; ++h) {
    for (int t = 0; t <= k; ++t) {
      Eigen::VectorXd q(d);
      for (int e = 0; e < d; ++e) q(e) = c.pre.q[std::size_t(h)][std::size_t(t * d + e)];
      const Eigen::VectorXd y = r * q;
      for (int e = 0; e < d; ++e) rotated.q[std::size_t(h)][std::size_t(t * d + e)] = float(y(e));
    }
  }
  for (const std::string name : {"expected_attention:epsilon=0", "cap"}) {
    const std::string spec = name + (name == "cap" ? ":" : ",") + "n_future_positions=" + std::to_string(future);
    const Token ours = evictions(c.group(), spec, k)[std::size_t(k)];
    const Token expected = evictions(rotated.group(), spec, k)[std::size_t(k)];
    RC_ASSERT(ours == expected);
  }
}

RC_GTEST_PROP(PreRopeScorers, LeverageReadsThePreRopeKeysAtEveryStep, ()) {
  const int d = 2 * *rc::gen::inRange(1, 4), n = *rc::gen::inRange(8, 30), k = *rc::gen::inRange(2, 8);
  const PreRopeCase c = gen_case(n, d, 1);
  naive::Instance plain = c.post;
  plain.k = c.pre.k;
  RC_ASSERT(evictions(c.group(), "leverage", k) == evictions(plain.group(), "leverage", k));
}

TEST(PreRopeScorers, ThePreRopeTensorsChangeTheDecisions) {
  // The relations above can fail: on these instances the pre-RoPE tensors change what each of the
  // four scorers evicts somewhere (so a scorer that ignored them would differ from its relation).
  int changed[4] = {0, 0, 0, 0};
  const char* specs[4] = {"expected_attention", "cap", "leverage", "compactor:sink_size_start=1,sink_size_end=1"};
  for (std::uint64_t seed = 0; seed < 20; ++seed) {
    PreRopeCase c{naive::random_instance(seed, 40, 8, 2, 2.0), naive::random_instance(seed + 99, 40, 8, 2, 2.0),
                  Rotary{10000.0, 8}};
    c.pre.v = c.post.v;
    for (int s = 0; s < 4; ++s) changed[s] += evictions(c.group(), specs[s], 12) != evictions(c.post.group(), specs[s], 12);
  }
  for (int s = 0; s < 4; ++s) EXPECT_GE(changed[s], 15) << specs[s];
}

}  // namespace
}  // namespace subevict::greedy
