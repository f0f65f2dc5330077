#pragma once
/// \file
/// Statistics used throughout the reports: exact binomial intervals, summaries, correlations,
/// power-law fits.

#include <vector>

namespace subevict {

/// Two-sided interval for a binomial proportion.
struct Interval {
  double lower;
  double upper;
};

/// Clopper-Pearson (exact) interval for `successes` out of `trials` at the given confidence
/// (e.g. 0.95), from Beta quantiles (Boost.Math): lower = B^{-1}((1-c)/2; x, n-x+1) (0 when x = 0),
/// upper = B^{-1}((1+c)/2; x+1, n-x) (1 when x = n). Throws std::invalid_argument unless
/// 0 <= successes <= trials, trials > 0 and 0 < confidence < 1.
Interval clopper_pearson(long long successes, long long trials, double confidence = 0.95);

/// Location and spread of a sample.
struct Summary {
  long long count = 0;
  double mean = 0, stddev = 0, min = 0, max = 0;
  double median = 0, p05 = 0, p95 = 0;  ///< linear-interpolation quantiles (type 7)
};

/// Summary of `x` (stddev with n - 1 in the denominator; 0 for fewer than 2 values). Throws
/// std::invalid_argument for an empty sample or a non-finite value.
Summary summarize(const std::vector<double>& x);

/// Quantile q in [0, 1] of x by linear interpolation between order statistics (type 7).
double quantile(std::vector<double> x, double q);

/// Pearson correlation of x and y (equal sizes >= 2); NaN when either is constant.
double pearson_correlation(const std::vector<double>& x, const std::vector<double>& y);

/// Spearman rank correlation (Pearson on mid-ranks, ties averaged).
double spearman_correlation(const std::vector<double>& x, const std::vector<double>& y);

/// Least-squares fit log y = intercept - exponent * log(rank) to the values sorted in decreasing
/// order, ranks 1..m (m = the number of positive values, capped at max_rank when max_rank > 0).
struct PowerLawFit {
  double exponent = 0;
  double intercept = 0;
  double r_squared = 0;
  long long points = 0;
};
PowerLawFit fit_power_law(std::vector<double> values, long long max_rank = 0);

/// Share of the total held by the largest ceil(fraction * n) values (fraction in (0, 1]).
double top_share(std::vector<double> values, double fraction);

/// Share of the total of `values` held by the ceil(fraction * n) entries with the smallest `keys`
/// (ties to the earlier entry); keys and values of the same size n >= 1, fraction in (0, 1].
/// std::invalid_argument otherwise. 0 when the total is 0.
double share_of_lowest(const std::vector<double>& keys, const std::vector<double>& values, double fraction);

}  // namespace subevict
