#pragma once
/// \file
/// The online features a policy's run passes through (docs/learned_policy.md): the features of
/// every member of G_i at the full steps of a simulation, with the member the policy evicted. The
/// training data of the learned policy when the policy replays the exact optimum's schedule
/// (RecordedPolicy), and the check that a learned policy decides as its model says.

#include <Eigen/Core>
#include <vector>

#include "greedy/eviction/evaluation/simulator.hpp"
#include "greedy/eviction/policies/online_features.hpp"

namespace subevict::greedy {

/// Which steps are recorded and how the features are built.
struct FeatureTraceOptions {
  policies::OnlineFeatureOptions features;
  /// Record the full streaming steps i with i % every == 0 (≥ 1; every full step when 1).
  int every = 1;
};

/// The features of the recorded steps, stacked: step s (steps[s]) owns rows
/// [offsets[s], offsets[s + 1]) of `features`, one per member of G_i in the view's order.
struct FeatureTrace {
  Eigen::MatrixXd features;        ///< rows × kOnlineFeatureCount
  std::vector<int> steps;          ///< the recorded steps, ascending
  std::vector<int> offsets;        ///< steps.size() + 1 entries, offsets[0] = 0
  std::vector<Token> tokens;       ///< the member of each row
  std::vector<int> evicted_row;    ///< per recorded step: the row (from offsets[s]) the policy evicted
  Trace trace;                     ///< the run itself, as simulate returns it
};

/// Simulates `policy` on `input` with `options` (as simulate does, the same decisions) and records
/// the online features of G_i at every full streaming step i with i % every == 0 before the
/// policy's choice, and the member it chose. The features see the views the policy sees, and with
/// a prefill (P > k) the prompt's full-attention steps first (OnlineFeatures::observe_prompt).
/// Throws InputError for every ≥ 1 not holding or invalid feature options, and whatever simulate
/// throws. Memory: O(Σ |G_i| · features) over the recorded steps.
[[nodiscard]] FeatureTrace record_features(const HeadGroup& input, EvictionPolicy& policy,
                                           const SimulationOptions& options, const FeatureTraceOptions& trace_options);

}  // namespace subevict::greedy
