#include "core/workload_stats.hpp"

#include <omp.h>

#include <stdexcept>
#include <string>

#include "core/attention.hpp"
#include "core/metrics.hpp"
#include "core/statistics.hpp"

namespace subevict {

HeadStatistics inspect_head(const Workload& w, int layer, int q_head, const InspectOptions& opt) {
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
  const ConstHeadMap q = w.q(layer, q_head);
  const ConstHeadMap k = w.k(layer, st.kv_head);

  long long below = 0, entries = 0;
  double sink_total = 0, recent_total = 0;
  Eigen::VectorXd accumulated = Eigen::VectorXd::Zero(n);
  for_each_attention_block(q, k, w.score_scale(), opt.block_rows, [&](int first, const Eigen::MatrixXd& a) {
    for (int r = 0; r < a.rows(); ++r) {
      const int i = first + r;
      const Eigen::VectorXd row = a.row(r).head(i + 1).transpose();
      below += count_below(row, opt.tau);
      entries += i + 1;
      if (i >= opt.sinks) sink_total += row.head(opt.sinks).sum();
      if (i >= opt.recent_window) recent_total += row.tail(opt.recent_window).sum();
    }
    accumulated += a.colwise().sum().transpose();
  });
  st.sparsity = double(below) / double(entries);
  st.sink_mass = sink_total / double(n - opt.sinks);
  st.recent_mass = recent_total / double(n - opt.recent_window);

  std::vector<double> non_sink(accumulated.data() + opt.sinks, accumulated.data() + n);
  const PowerLawFit fit = fit_power_law(non_sink, n / 2);
  st.power_law_exponent = fit.exponent;
  st.power_law_r2 = fit.r_squared;

  std::vector<double> received, norms;
  for (int j = opt.sinks; j < n - opt.recent_window; ++j) {
    received.push_back(accumulated[j] / double(n - j));
    norms.push_back(k.row(j).cast<double>().norm());
  }
  st.heavy_share = top_share(received, opt.top_fraction);
  st.norm_attention_spearman = spearman_correlation(norms, received);
  return st;
}

std::vector<HeadStatistics> inspect_workload(const Workload& w, const InspectOptions& opt) {
  const Shape& s = w.shape();
  std::vector<HeadStatistics> out(std::size_t(s.layers) * s.q_heads);
  const int team = opt.threads > 0 ? opt.threads : omp_get_max_threads();
  std::string error;
#pragma omp parallel for num_threads(team) schedule(dynamic)
  for (long long h = 0; h < (long long)out.size(); ++h) {
    try {
      out[h] = inspect_head(w, int(h / s.q_heads), int(h % s.q_heads), opt);
    } catch (const std::exception& e) {
#pragma omp critical
      error = e.what();
    }
  }
  if (!error.empty()) throw std::invalid_argument(error);
  return out;
}

HeadStatistics mean_statistics(const std::vector<HeadStatistics>& heads) {
  HeadStatistics m;
  m.layer = m.q_head = m.kv_head = -1;
  if (heads.empty()) return m;
  for_each_statistic([&](const char*, double HeadStatistics::*field) {
    for (const HeadStatistics& h : heads) m.*field += h.*field;
    m.*field /= double(heads.size());
  });
  return m;
}

}  // namespace subevict
