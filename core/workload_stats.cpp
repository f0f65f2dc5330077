#include "core/workload_stats.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>
#include <string>

#include "core/attention.hpp"
#include "core/input_error.hpp"
#include "core/metrics.hpp"
#include "core/number_text.hpp"
#include "core/parallel_units.hpp"
#include "core/statistics.hpp"

namespace subevict {
namespace {

/// The queries of n that see key j: every later one on a global layer (window 0), else those
/// within the window.
int observers(int n, int j, int window) { return window > 0 ? std::min(n - j, window) : n - j; }

/// HeadStatistics::sink_token_rate from far[j] = sum of a_ij / max_j' a_ij' over i >= j + recent
/// (the queries that see j: all later ones on a global layer, window = 0, else those within the
/// window): keys [0, keys) compete, keys [sinks, keys) count.
double sink_token_rate(const Eigen::VectorXd& far, int keys, int recent, int window, int sinks) {
  const int n = int(far.size());
  std::vector<double> mean(std::size_t(std::max(keys, 0)), 0.0);
  double strongest = 0;
  for (int j = 0; j < keys; ++j) {
    const int rows = observers(n, j, window) - recent;
    mean[std::size_t(j)] = rows > 0 ? far[j] / double(rows) : 0.0;
    strongest = std::max(strongest, mean[std::size_t(j)]);
  }
  if (strongest <= 0 || keys <= sinks) return 0.0;
  long long like_sinks = 0;
  for (int j = sinks; j < keys; ++j) like_sinks += mean[std::size_t(j)] >= kSinkTokenFloor * strongest;
  return double(like_sinks) / double(keys - sinks);
}

}  // namespace

void check_inspect_options(const InspectOptions& opt) {
  const auto refuse = [](const char* field, const char* flag, const std::string& expected, double got) {
    const std::string name = *flag ? std::string(field) + " (" + flag + ")" : std::string(field);
    throw InputError("inspect", name, expected, significant_digits(got, 10));
  };
  if (!(opt.tau >= 0.0 && opt.tau <= 1.0)) refuse("tau", "--tau", "a threshold in [0, 1]", opt.tau);
  if (opt.sinks < 0) refuse("sinks", "--sinks", "an integer >= 0", opt.sinks);
  if (opt.recent_window < 1) refuse("recent_window", "--recent-window", "an integer >= 1", opt.recent_window);
  if (opt.wide_recent_window < 1) {
    refuse("wide_recent_window", "--wide-recent-window", "an integer >= 1", opt.wide_recent_window);
  }
  if (!(opt.top_fraction > 0.0 && opt.top_fraction <= 1.0)) {
    refuse("top_fraction", "", "a share in (0, 1]", opt.top_fraction);
  }
  if (opt.first_token_from < 0) {
    refuse("first_token_from", "--first-token-from", "a query row >= 0", opt.first_token_from);
  }
  if (opt.late_rows < 1) refuse("late_rows", "--late-rows", "an integer >= 1", opt.late_rows);
  if (!(opt.sink_head_threshold >= 0.0 && opt.sink_head_threshold <= 1.0)) {
    refuse("sink_head_threshold", "--sink-head-threshold", "a mass in [0, 1]", opt.sink_head_threshold);
  }
  if (opt.block_rows < 1) refuse("block_rows", "", "an integer >= 1", opt.block_rows);
  if (opt.threads < 0) refuse("threads", "--threads", "an integer >= 0", opt.threads);
}

HeadStatistics inspect_head(const Workload& w, int layer, int q_head, const InspectOptions& opt) {
  check_inspect_options(opt);
  const Shape& s = w.shape();
  const int n = s.tokens;
  if (n <= opt.sinks + opt.recent_window + 2) {
    throw std::invalid_argument("inspect: " + std::to_string(n) + " tokens are too few for " +
                                std::to_string(opt.sinks) + " sinks and a recent window of " +
                                std::to_string(opt.recent_window));
  }
  HeadStatistics st;
  st.layer = layer;
  st.q_head = q_head;
  st.kv_head = s.kv_head_of(q_head);
  st.window = w.window(layer);
  const ConstHeadMap q = w.q(layer, q_head);
  const ConstHeadMap k = w.k(layer, st.kv_head);

  long long below = 0, entries = 0;
  double sink_total = 0, recent_total = 0, wide_total = 0, first_total = 0, late_total = 0;
  const int wide = std::min(opt.wide_recent_window, n / 2);
  const int first_from = std::min(opt.first_token_from, n / 2);
  const int late_from = n - std::min(opt.late_rows, n / 2);
  Eigen::VectorXd accumulated = Eigen::VectorXd::Zero(n);
  // sink_token_rate: sum of a_ij / max_j' a_ij' over i >= j + recent_window.
  Eigen::VectorXd far_accumulated = Eigen::VectorXd::Zero(n);
  // recency_slope: near distances [near, 2 near) against far ones [far / 2, far).
  const int far = std::min({opt.wide_recent_window, n / 2, st.window > 0 ? st.window : n});
  // Below 4 keys no row qualifies (the slope is then 0).
  const int near = std::max(1, far / 32), slope_from = far < 4 ? n : far - 1 + opt.sinks;
  double slope_total = 0;
  long long slope_rows = 0;
  const auto score_slope = [&](int first, const Eigen::MatrixXd& scores) {
    for (int r = std::max(0, slope_from - first); r < scores.rows(); ++r) {
      const int i = first + r;
      const double near_mean = scores.row(r).segment(i - 2 * near + 1, near).mean();
      const double far_mean = scores.row(r).segment(i - far + 1, far - far / 2).mean();
      slope_total += near_mean - far_mean;
      ++slope_rows;
    }
  };
  for_each_attention_block(
      q, k, w.score_scale(), opt.block_rows,
      [&](int first, const Eigen::MatrixXd& a) {
        for (int r = 0; r < a.rows(); ++r) {
          const int i = first + r, from = first_visible_key(i, st.window);
          const Eigen::VectorXd row = a.row(r).head(i + 1).transpose();
          below += count_below(row.tail(i + 1 - from), opt.tau);
          entries += i + 1 - from;
          if (i >= opt.sinks) sink_total += row.head(opt.sinks).sum();
          if (i >= opt.recent_window) recent_total += row.tail(opt.recent_window).sum();
          if (i >= wide) wide_total += row.tail(wide).sum();
          if (i >= first_from) first_total += row[0];
          if (i >= late_from) late_total += row[0];
          if (i >= opt.recent_window) {
            far_accumulated.head(i - opt.recent_window + 1) += row.head(i - opt.recent_window + 1) / row.maxCoeff();
          }
        }
        accumulated += a.colwise().sum().transpose();
      },
      st.window, score_slope);
  st.sparsity = double(below) / double(entries);
  st.sink_mass = sink_total / double(n - opt.sinks);
  st.recent_mass = recent_total / double(n - opt.recent_window);
  st.wide_recent_mass = wide_total / double(n - wide);
  st.first_token_mass = first_total / double(n - first_from);
  st.late_first_token_mass = late_total / double(n - late_from);
  st.recency_slope = slope_rows > 0 ? slope_total / double(slope_rows) / std::log2(double(far / 2) / near) : 0.0;
  const std::vector<double> column_sums(accumulated.data(), accumulated.data() + n);
  st.received_top_share = top_share(column_sums, opt.top_fraction);

  std::vector<double> non_sink(column_sums.begin() + opt.sinks, column_sums.end());
  const PowerLawFit fit = fit_power_law(non_sink, n / 2);
  st.power_law_exponent = fit.exponent;
  st.power_law_r2 = fit.r_squared;

  std::vector<double> all_norms(static_cast<std::size_t>(n));
  for (int j = 0; j < n; ++j) all_norms[std::size_t(j)] = k.row(j).cast<double>().norm();
  st.low_norm_share = share_of_lowest(all_norms, column_sums, opt.top_fraction);

  std::vector<double> received, norms;
  for (int j = opt.sinks; j < n - opt.recent_window; ++j) {
    received.push_back(accumulated[j] / double(observers(n, j, st.window)));
    norms.push_back(all_norms[std::size_t(j)]);
  }
  st.heavy_share = top_share(received, opt.top_fraction);
  st.sink_token_rate = sink_token_rate(far_accumulated, n - wide, opt.recent_window, st.window, opt.sinks);
  st.norm_attention_spearman = spearman_correlation(norms, received);
  return st;
}

std::vector<HeadStatistics> inspect_workload(const Workload& w, const InspectOptions& opt) {
  check_inspect_options(opt);  // before any head runs
  const Shape& s = w.shape();
  const auto chosen = [&s](const std::vector<int>& given, int bound, const char* what) {
    std::vector<int> out = given;
    if (out.empty()) {
      for (int i = 0; i < bound; ++i) out.push_back(i);
    }
    for (int i : out) {
      if (i < 0 || i >= bound) {
        throw std::out_of_range(std::string("inspect_workload: ") + what + " " + std::to_string(i) + " outside " +
                                to_string(s));
      }
    }
    return out;
  };
  const std::vector<int> layers = chosen(opt.layers, s.layers, "layer");
  const std::vector<int> q_heads = chosen(opt.q_heads, s.q_heads, "query head");
  const std::size_t per_layer = q_heads.size();
  std::vector<HeadStatistics> out(layers.size() * per_layer);
  const std::string error = parallel_units(
      (long long)out.size(), opt.threads,
      [&](long long h) {
        out[std::size_t(h)] =
            inspect_head(w, layers[std::size_t(h) / per_layer], q_heads[std::size_t(h) % per_layer], opt);
      },
      opt.progress);
  if (!error.empty()) throw std::invalid_argument(error);
  return out;
}

HeadStatistics mean_statistics(const std::vector<HeadStatistics>& heads) {
  HeadStatistics m;
  m.layer = m.q_head = m.kv_head = -1;
  if (heads.empty()) return m;
  m.window = heads.front().window;
  for (const HeadStatistics& h : heads) m.window = h.window == m.window ? m.window : -1;
  for_each_statistic([&](const char*, double HeadStatistics::*field) {
    for (const HeadStatistics& h : heads) m.*field += h.*field;
    m.*field /= double(heads.size());
  });
  return m;
}

double sink_head_rate(const std::vector<HeadStatistics>& heads, double sink_head_threshold) {
  if (heads.empty()) return 0;
  long long sinks = 0;
  for (const HeadStatistics& h : heads) sinks += h.late_first_token_mass > sink_head_threshold;
  return double(sinks) / double(heads.size());
}

std::vector<LayerStatistics> per_layer_statistics(const std::vector<HeadStatistics>& heads,
                                                  double sink_head_threshold) {
  std::map<int, std::vector<HeadStatistics>> by_layer;
  for (const HeadStatistics& h : heads) by_layer[h.layer].push_back(h);
  std::vector<LayerStatistics> out;
  for (const auto& [layer, members] : by_layer) {
    LayerStatistics l;
    l.layer = layer;
    l.heads = int(members.size());
    l.mean = mean_statistics(members);
    l.mean.layer = layer;
    l.sink_head_rate = sink_head_rate(members, sink_head_threshold);
    out.push_back(l);
  }
  return out;
}

}  // namespace subevict
