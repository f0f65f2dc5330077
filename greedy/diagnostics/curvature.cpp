#include "greedy/diagnostics/curvature.hpp"

#include <limits>
#include <vector>

namespace subevict::greedy {

Curvature total_curvature(const SetFunction& f) {
  const std::size_t n = f.ground_size();
  Curvature result;
  result.argmin = n;
  auto empty = f.empty_state();
  auto full = f.empty_state();
  for (Element j = 0; j < n; ++j) {
    full->add(j);
  }
  double min_ratio = std::numeric_limits<double>::infinity();
  for (Element j = 0; j < n; ++j) {
    const double singleton = empty->gain(j);
    ++result.oracle_calls;
    if (!(singleton > 0)) {
      continue;
    }
    full->remove(j);
    const double ratio = full->gain(j) / singleton;
    ++result.oracle_calls;
    full->add(j);
    if (ratio < min_ratio) {  // strict: ties keep the lower index
      min_ratio = ratio;
      result.argmin = j;
    }
  }
  result.curvature = result.argmin == n ? 0.0 : 1.0 - min_ratio;
  return result;
}

}  // namespace subevict::greedy
