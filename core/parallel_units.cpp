#include "core/parallel_units.hpp"

#include <omp.h>

#include <exception>

namespace subevict {

std::string parallel_units(long long count, int threads, const std::function<void(long long)>& body,
                           const std::function<void(int, int)>& progress) {
  const int team = threads > 0 ? threads : omp_get_max_threads();
  std::string error;
  int done = 0;
#pragma omp parallel for num_threads(team) schedule(dynamic)
  for (long long u = 0; u < count; ++u) {
    try {
      body(u);
    } catch (const std::exception& e) {
#pragma omp critical(subevict_parallel_units_error)
      error = e.what();
    }
#pragma omp critical(subevict_parallel_units_progress)
    if (progress) progress(++done, int(count));
  }
  return error;
}

}  // namespace subevict
