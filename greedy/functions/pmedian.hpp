#pragma once
/// \file
/// OR-Library p-median instances (Beasley 1985; tests/data/orlib-pmed/README.md) and their
/// conversion to facility location: with sim_ij = D − d(i, j), D = max d,
/// f(S) = Σ_i max_{j∈S} sim_ij = n·D − pmedian(S), so max_{|S|=p} f = n·D − (p-median optimum).

#include <Eigen/Core>
#include <cstddef>
#include <map>
#include <span>
#include <string>

#include "greedy/functions/facility_location.hpp"

namespace subevict::greedy {

/// A p-median instance: n vertices, p medians, the shortest-path distances d(i, j) (n x n,
/// symmetric, zero diagonal).
struct PMedianInstance {
  std::size_t n = 0;
  std::size_t p = 0;
  Eigen::MatrixXd distance;
};

/// Reads an OR-Library p-median file: a first line `n m p`, then m lines `i j c` (1-based
/// vertices, cost c ≥ 0, an undirected edge; when an edge appears more than once the last
/// occurrence counts; blank lines are skipped), then only whitespace. Distances are all-pairs
/// shortest paths (Floyd–Warshall, O(n³), 0.5 s at n = 900). Throws InputError naming `path` and
/// the line on a missing or non-numeric field, extra fields, n = 0, p = 0 or p > n, a vertex
/// outside 1..n, a negative or non-finite cost, fewer or more than m edges, or a disconnected
/// graph.
PMedianInstance read_pmedian(const std::string& path);

/// All-pairs shortest paths by Floyd–Warshall over a matrix holding the direct edge costs
/// (+infinity where there is no edge, 0 on the diagonal); in place. O(n³).
void floyd_warshall(Eigen::MatrixXd& distance);

/// The published optima table (pmedopt.txt): a header line, then lines `NAME VALUE`
/// (e.g. `pmed1 5819`). Returns NAME -> VALUE. Throws InputError naming `path` and the line on a
/// malformed line or a repeated name.
std::map<std::string, double> read_pmedian_optima(const std::string& path);

/// Σ_i min_{j∈S} d(i, j). Precondition: S non-empty, elements < n. O(n · |S|).
double pmedian_value(const PMedianInstance& instance, std::span<const Element> set);

/// The largest distance D = max_ij d(i, j).
double max_distance(const PMedianInstance& instance);

/// Facility location with sim_ij = D − d(i, j), D = max_distance(instance): f(S) = n·D − pmedian(S)
/// for non-empty S.
FacilityLocation to_facility_location(const PMedianInstance& instance);

}  // namespace subevict::greedy
