#pragma once
/// \file
/// Measurements of H2O Lemma D.47 (strong convexity) and Lemma D.48 (Hessian Lipschitz) on a
/// problem, at points drawn uniformly from the radius-R ball (counter-based, seeded), for the
/// full loss L = L_exp + L_sparse + L_reg.

#include <cstdint>

#include "softmax_regression/hypotheses.hpp"

namespace subevict::softmax_regression {

/// Point k of the seeded uniform sample of the radius-R ball in R^d (direction: d normals,
/// radius: R U^{1/d}). Point 0 is the origin.
Vector ball_point(Index d, double R, std::uint64_t seed, std::uint64_t k);

/// Lemma D.47: lambda_min(grad^2 L(x)) >= l for every sampled x (when the w condition holds).
struct LemmaD47Result {
  double l = 0;
  int samples = 0;
  bool w_condition_holds = false;  ///< the lemma's hypothesis on this problem
  double min_eigenvalue = 0;       ///< smallest lambda_min over the samples
  double margin = 0;               ///< min_eigenvalue - l (>= 0 <=> the conclusion held)
  Vector worst_x;                  ///< where min_eigenvalue was attained (lowest sample index)
  bool conclusion_holds = false;
};

/// Evaluates the Hessian at `samples` ball points (origin included). O(samples n d^2).
LemmaD47Result measure_lemma_d47(const Problem& problem, const TheoremParameters& parameters,
                                 int samples, std::uint64_t seed);

/// Lemma D.48: |H(x) - H(y)|_2 / |x - y| <= n^2 exp(40 R^2), everything in logarithms (the bound
/// overflows a double for R > ~4.2).
struct LemmaD48Result {
  int pairs = 0;
  double max_ratio = 0;    ///< largest measured |H(x) - H(y)|_2 / |x - y|
  double log_bound = 0;    ///< ln(n^2 exp(40 R^2)) = 2 ln n + 40 R^2
  double log_looseness = 0;  ///< log_bound - ln(max_ratio): how many e-folds the bound is loose
  bool conclusion_holds = false;
};

/// Half the pairs are independent ball points, half are a ball point and a neighbour at distance
/// 1e-3 R (both clipped to the ball). O(pairs n d^2).
LemmaD48Result measure_lemma_d48(const Problem& problem, const TheoremParameters& parameters,
                                 int pairs, std::uint64_t seed);

}  // namespace subevict::softmax_regression
