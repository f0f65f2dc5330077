#include "greedy/exact/integer_program.hpp"

#include <coin/CbcModel.hpp>
#include <coin/CoinPackedMatrix.hpp>
#include <coin/OsiClpSolverInterface.hpp>

#include <chrono>
#include <limits>
#include <vector>

namespace subevict::greedy {
namespace {

/// A 0/1 program max c·x s.t. row_lower ≤ A x ≤ row_upper, 0 ≤ x ≤ 1, built row by row; the first
/// `integer_columns` columns are binary (the y_j), the rest continuous.
struct Program {
  std::vector<double> objective;
  std::size_t integer_columns = 0;
  CoinPackedMatrix rows{false, 0, 0};
  std::vector<double> row_lower;
  std::vector<double> row_upper;

  void add_row(const std::vector<int>& index, const std::vector<double>& value, double lower,
               double upper) {
    rows.appendRow(int(index.size()), index.data(), value.data());
    row_lower.push_back(lower);
    row_upper.push_back(upper);
  }
};

/// Solves `program` with CBC; returns the chosen integer columns and fills the status fields.
Selection solve(Program& program, const SetFunction& f, const IntegerProgramOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  const int columns = int(program.objective.size());
  program.rows.setDimensions(int(program.row_lower.size()), columns);
  std::vector<double> column_lower(std::size_t(columns), 0.0);
  std::vector<double> column_upper(std::size_t(columns), 1.0);
  std::vector<double> minimize(program.objective.size());
  for (std::size_t c = 0; c < minimize.size(); ++c) minimize[c] = -program.objective[c];

  OsiClpSolverInterface solver;
  solver.messageHandler()->setLogLevel(options.log ? 1 : 0);
  solver.loadProblem(program.rows, column_lower.data(), column_upper.data(), minimize.data(),
                     program.row_lower.data(), program.row_upper.data());
  for (std::size_t j = 0; j < program.integer_columns; ++j) solver.setInteger(int(j));

  CbcModel model(solver);
  model.setLogLevel(options.log ? 1 : 0);
  model.messageHandler()->setLogLevel(options.log ? 1 : 0);
  model.solver()->messageHandler()->setLogLevel(options.log ? 1 : 0);
  if (options.time_limit_seconds > 0.0) model.setMaximumSeconds(options.time_limit_seconds);
  if (options.max_nodes >= 0) model.setMaximumNodes(options.max_nodes);
  model.branchAndBound();

  Selection result;
  const double* x = model.bestSolution();
  if (x != nullptr) {
    for (std::size_t j = 0; j < program.integer_columns; ++j) {
      if (x[j] > 0.5) result.set.push_back(j);
    }
  }
  result.value = f.evaluate(result.set);
  result.oracle_calls = 1;
  result.optimal = model.isProvenOptimal() && x != nullptr;
  result.upper_bound = result.optimal ? result.value : -model.getBestPossibleObjValue();
  if (!(result.upper_bound >= result.value)) {
    result.upper_bound = std::numeric_limits<double>::infinity();
  }
  result.nodes = std::uint64_t(model.getNodeCount());
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace

Selection facility_location_ip(const FacilityLocation& f, std::size_t k,
                               const IntegerProgramOptions& options) {
  const Eigen::MatrixXd& sim = f.similarity();
  const auto n = int(sim.cols());
  Program program;
  program.integer_columns = std::size_t(n);
  program.objective.assign(std::size_t(n), 0.0);  // y_j
  std::vector<std::vector<int>> client_columns(std::size_t(sim.rows()));
  for (int j = 0; j < n; ++j) {
    for (Eigen::Index i = 0; i < sim.rows(); ++i) {
      if (sim(i, j) <= 0.0) continue;
      const int x = int(program.objective.size());
      program.objective.push_back(sim(i, j));
      client_columns[std::size_t(i)].push_back(x);
      program.add_row({x, j}, {1.0, -1.0}, -COIN_DBL_MAX, 0.0);  // x_ij ≤ y_j
    }
  }
  for (const std::vector<int>& columns : client_columns) {
    if (!columns.empty()) {
      program.add_row(columns, std::vector<double>(columns.size(), 1.0), -COIN_DBL_MAX, 1.0);
    }
  }
  std::vector<int> all(static_cast<std::size_t>(n));
  for (int j = 0; j < n; ++j) all[std::size_t(j)] = j;
  program.add_row(all, std::vector<double>(all.size(), 1.0), -COIN_DBL_MAX, double(k));
  return solve(program, f, options);
}

Selection weighted_coverage_ip(const WeightedCoverage& f, std::size_t k,
                               const IntegerProgramOptions& options) {
  const auto n = int(f.ground_size());
  const std::size_t universe = f.weights().size();
  Program program;
  program.integer_columns = std::size_t(n);
  program.objective.assign(std::size_t(n), 0.0);
  std::vector<std::vector<int>> covering(universe);  // the sets containing each item
  for (int j = 0; j < n; ++j) {
    for (std::size_t u : f.set(Element(j))) covering[u].push_back(j);
  }
  for (std::size_t u = 0; u < universe; ++u) {
    if (covering[u].empty() || f.weights()[u] == 0.0) continue;
    const int z = int(program.objective.size());
    program.objective.push_back(f.weights()[u]);
    std::vector<int> index{z};
    std::vector<double> value{1.0};
    for (int j : covering[u]) {
      index.push_back(j);
      value.push_back(-1.0);
    }
    program.add_row(index, value, -COIN_DBL_MAX, 0.0);  // z_u ≤ Σ_{j∋u} y_j
  }
  std::vector<int> all(static_cast<std::size_t>(n));
  for (int j = 0; j < n; ++j) all[std::size_t(j)] = j;
  program.add_row(all, std::vector<double>(all.size(), 1.0), -COIN_DBL_MAX, double(k));
  return solve(program, f, options);
}

}  // namespace subevict::greedy
