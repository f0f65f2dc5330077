#include "core/statistics.hpp"

#include <algorithm>
#include <boost/math/distributions/beta.hpp>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>

namespace subevict {

Interval clopper_pearson(long long x, long long n, double confidence) {
  if (n <= 0 || x < 0 || x > n) {
    throw std::invalid_argument("clopper_pearson: need 0 <= successes <= trials and trials > 0, got " +
                                std::to_string(x) + " of " + std::to_string(n));
  }
  if (!(confidence > 0 && confidence < 1)) {
    throw std::invalid_argument("clopper_pearson: confidence must lie in (0, 1)");
  }
  const double alpha = 1 - confidence;
  Interval ci{0.0, 1.0};
  if (x > 0) ci.lower = boost::math::quantile(boost::math::beta_distribution<double>(x, n - x + 1), alpha / 2);
  if (x < n) ci.upper = boost::math::quantile(boost::math::beta_distribution<double>(x + 1, n - x), 1 - alpha / 2);
  return ci;
}

double quantile(std::vector<double> x, double q) {
  if (x.empty()) throw std::invalid_argument("quantile: empty sample");
  if (!(q >= 0 && q <= 1)) throw std::invalid_argument("quantile: q must lie in [0, 1]");
  std::sort(x.begin(), x.end());
  const double h = q * double(x.size() - 1);
  const std::size_t lo = std::size_t(std::floor(h));
  const std::size_t hi = std::min(lo + 1, x.size() - 1);
  return x[lo] + (h - double(lo)) * (x[hi] - x[lo]);
}

Summary summarize(const std::vector<double>& x) {
  if (x.empty()) throw std::invalid_argument("summarize: empty sample");
  for (double v : x) {
    if (!std::isfinite(v)) throw std::invalid_argument("summarize: non-finite value in sample");
  }
  Summary s;
  s.count = (long long)x.size();
  s.mean = std::accumulate(x.begin(), x.end(), 0.0) / double(x.size());
  double ss = 0;
  for (double v : x) ss += (v - s.mean) * (v - s.mean);
  s.stddev = x.size() > 1 ? std::sqrt(ss / double(x.size() - 1)) : 0.0;
  s.min = *std::min_element(x.begin(), x.end());
  s.max = *std::max_element(x.begin(), x.end());
  s.median = quantile(x, 0.5);
  s.p05 = quantile(x, 0.05);
  s.p95 = quantile(x, 0.95);
  return s;
}

double pearson_correlation(const std::vector<double>& x, const std::vector<double>& y) {
  if (x.size() != y.size() || x.size() < 2) {
    throw std::invalid_argument("pearson_correlation: need two samples of equal size >= 2");
  }
  const double n = double(x.size());
  const double mx = std::accumulate(x.begin(), x.end(), 0.0) / n;
  const double my = std::accumulate(y.begin(), y.end(), 0.0) / n;
  double sxy = 0, sxx = 0, syy = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    sxy += (x[i] - mx) * (y[i] - my);
    sxx += (x[i] - mx) * (x[i] - mx);
    syy += (y[i] - my) * (y[i] - my);
  }
  if (sxx == 0 || syy == 0) return std::numeric_limits<double>::quiet_NaN();
  return sxy / std::sqrt(sxx * syy);
}

namespace {
std::vector<double> mid_ranks(const std::vector<double>& x) {
  std::vector<std::size_t> order(x.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return x[a] < x[b]; });
  std::vector<double> rank(x.size());
  for (std::size_t i = 0; i < order.size();) {
    std::size_t j = i;
    while (j + 1 < order.size() && x[order[j + 1]] == x[order[i]]) ++j;
    const double mid = 0.5 * double(i + j) + 1.0;
    for (std::size_t t = i; t <= j; ++t) rank[order[t]] = mid;
    i = j + 1;
  }
  return rank;
}
}  // namespace

double spearman_correlation(const std::vector<double>& x, const std::vector<double>& y) {
  if (x.size() != y.size()) throw std::invalid_argument("spearman_correlation: sizes differ");
  return pearson_correlation(mid_ranks(x), mid_ranks(y));
}

PowerLawFit fit_power_law(std::vector<double> values, long long max_rank) {
  std::sort(values.begin(), values.end(), std::greater<>());
  long long m = std::count_if(values.begin(), values.end(), [](double v) { return v > 0; });
  if (max_rank > 0) m = std::min(m, max_rank);
  if (m < 2) throw std::invalid_argument("fit_power_law: need at least two positive values");
  std::vector<double> lx(m), ly(m);
  for (long long r = 0; r < m; ++r) {
    lx[r] = std::log(double(r + 1));
    ly[r] = std::log(values[r]);
  }
  const double mx = std::accumulate(lx.begin(), lx.end(), 0.0) / double(m);
  const double my = std::accumulate(ly.begin(), ly.end(), 0.0) / double(m);
  double sxy = 0, sxx = 0, syy = 0;
  for (long long r = 0; r < m; ++r) {
    sxy += (lx[r] - mx) * (ly[r] - my);
    sxx += (lx[r] - mx) * (lx[r] - mx);
    syy += (ly[r] - my) * (ly[r] - my);
  }
  PowerLawFit fit;
  const double slope = sxy / sxx;
  fit.exponent = -slope;
  fit.intercept = my - slope * mx;
  fit.r_squared = syy > 0 ? (sxy * sxy) / (sxx * syy) : 1.0;
  fit.points = m;
  return fit;
}

double top_share(std::vector<double> values, double fraction) {
  if (values.empty()) throw std::invalid_argument("top_share: empty sample");
  if (!(fraction > 0 && fraction <= 1)) throw std::invalid_argument("top_share: fraction must lie in (0, 1]");
  std::sort(values.begin(), values.end(), std::greater<>());
  const std::size_t top = std::size_t(std::ceil(fraction * double(values.size())));
  const double total = std::accumulate(values.begin(), values.end(), 0.0);
  const double head = std::accumulate(values.begin(), values.begin() + top, 0.0);
  return total > 0 ? head / total : 0.0;
}

double share_of_lowest(const std::vector<double>& keys, const std::vector<double>& values, double fraction) {
  if (keys.empty() || keys.size() != values.size()) {
    throw std::invalid_argument("share_of_lowest: keys and values must be non-empty and of one size");
  }
  if (!(fraction > 0 && fraction <= 1)) throw std::invalid_argument("share_of_lowest: fraction must lie in (0, 1]");
  std::vector<std::size_t> order(keys.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return keys[a] < keys[b]; });
  const std::size_t lowest = std::size_t(std::ceil(fraction * double(keys.size())));
  double head = 0;
  for (std::size_t r = 0; r < lowest; ++r) head += values[order[r]];
  const double total = std::accumulate(values.begin(), values.end(), 0.0);
  return total > 0 ? head / total : 0.0;
}

}  // namespace subevict
