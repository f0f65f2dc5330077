#include "greedy/eviction/optimum/offline_optimum_ip.hpp"

#include <coin/CbcModel.hpp>
#include <coin/CoinPackedMatrix.hpp>
#include <coin/OsiClpSolverInterface.hpp>

#include <chrono>
#include <utility>
#include <vector>

namespace subevict::greedy {

ScheduleSummary offline_optimum_ip(const Eigen::MatrixXd& gains, int budget,
                                   const OfflineOptimumIpOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  const int n = validate_instance(gains, budget, "offline_optimum_ip");
  if (n == 0) return empty_schedule_summary();
  ScheduleSummary out;

  // Rows 0..n-1: assignment of token j (= 1); rows n..2n-1: capacity of step i (<= k).
  CoinPackedMatrix matrix(true, 0, 0);  // column-ordered
  matrix.setDimensions(2 * n, 0);
  std::vector<double> minimize;  // CBC minimizes: the negated earnings
  std::vector<std::pair<int, int>> column_of;  // (j, t)
  std::vector<int> index;
  std::vector<double> element;
  for (int j = 0; j < n; ++j) {
    double earned = 0.0;
    for (int t = j - 1; t <= n - 1; ++t) {
      if (t >= j && t + 1 <= n - 1) earned += gains(t + 1, j);
      index.assign(1, j);
      for (int i = j; i <= t; ++i) index.push_back(n + i);
      element.assign(index.size(), 1.0);
      matrix.appendCol(static_cast<int>(index.size()), index.data(), element.data());
      minimize.push_back(-earned);
      column_of.emplace_back(j, t);
    }
  }
  const int columns = static_cast<int>(minimize.size());
  std::vector<double> column_lower(columns, 0.0), column_upper(columns, 1.0);
  std::vector<double> row_lower(2 * n), row_upper(2 * n);
  for (int r = 0; r < n; ++r) row_lower[r] = row_upper[r] = 1.0;
  for (int r = n; r < 2 * n; ++r) {
    row_lower[r] = -COIN_DBL_MAX;
    row_upper[r] = budget;
  }

  OsiClpSolverInterface solver;
  const int log_level = options.log ? 1 : 0;
  solver.messageHandler()->setLogLevel(log_level);
  solver.loadProblem(matrix, column_lower.data(), column_upper.data(), minimize.data(),
                     row_lower.data(), row_upper.data());
  for (int c = 0; c < columns; ++c) solver.setInteger(c);
  // CBC's defaults accept solutions within 1e-5 (cutoff increment) and LPs within 1e-7 (Clp's
  // tolerances): too coarse for a 1e-9 cross-check, so tighten them.
  solver.setDblParam(OsiPrimalTolerance, 1e-10);
  solver.setDblParam(OsiDualTolerance, 1e-10);
  CbcModel model(solver);
  model.setDblParam(CbcModel::CbcCutoffIncrement, 1e-12);
  model.setAllowableGap(1e-12);
  model.setAllowableFractionGap(0.0);
  model.setAllowablePercentageGap(0.0);
  model.setLogLevel(log_level);
  model.messageHandler()->setLogLevel(log_level);
  model.solver()->messageHandler()->setLogLevel(log_level);
  if (options.time_limit_seconds > 0.0) model.setMaximumSeconds(options.time_limit_seconds);
  if (options.max_nodes >= 0) model.setMaximumNodes(options.max_nodes);
  model.branchAndBound();

  out.model_size = static_cast<std::uint64_t>(columns);
  out.nodes = static_cast<std::uint64_t>(model.getNodeCount());
  const double* y = model.bestSolution();
  if (y == nullptr) {
    out.status = ScheduleStatus::kFailed;
    out.message = "CBC found no integer solution";
  } else {
    out.last_step.assign(n, -2);
    for (int c = 0; c < columns; ++c) {
      if (y[c] > 0.5) out.last_step[column_of[c].first] = column_of[c].second;
    }
    finish_summary(gains, out);
    const double diagonal = gains.diagonal().sum();
    if (model.isProvenOptimal()) {
      out.status = ScheduleStatus::kOptimal;
      out.upper_bound = diagonal - model.getObjValue();  // CBC's own optimum, plus the diagonal
    } else {
      out.status = ScheduleStatus::kFeasible;
      out.upper_bound = diagonal - model.getBestPossibleObjValue();
      out.message = "CBC stopped before proving optimality";
    }
  }
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace subevict::greedy
