#include "greedy/eviction/optimum/offline_optimum.hpp"

#include <algorithm>
#include <chrono>
#include <vector>

#include "greedy/eviction/optimum/shared_optimum.hpp"

namespace subevict::greedy {

ScheduleSummary offline_optimum(const Eigen::MatrixXd& gains, int budget,
                                const OfflineOptimumOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  const int n = validate_instance(gains, budget, "offline_optimum");
  if (n == 0) return empty_schedule_summary();
  const int k = std::min(budget, n);  // a larger budget changes nothing
  // One head's cache is the shared cache of one head: the same network (shared_optimum.hpp).
  const SharedOptimum flow = shared_optimum(std::vector<const Eigen::MatrixXd*>{&gains}, k,
                                            SharedOptimumOptions{options.pivot, options.prune_dominated_arcs,
                                                                 options.certify});
  ScheduleSummary out;
  out.model_size = flow.arcs;
  if (flow.status != ScheduleStatus::kOptimal) {
    out.status = ScheduleStatus::kFailed;
    out.message = "network simplex reported an infeasible or unbounded network";
    return out;
  }
  out.last_step = options.process_form ? to_process_schedule(flow.last_step[0], k) : flow.last_step[0];
  finish_summary(gains, out);
  out.status = ScheduleStatus::kOptimal;
  out.upper_bound = std::max(out.value, flow.upper_bound);
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace subevict::greedy
