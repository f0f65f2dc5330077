#include "core/parallel_units.hpp"

#include <omp.h>

#include <algorithm>
#include <exception>

namespace subevict {
namespace {

/// The one loop: body(u) for every u on a team of `team` threads, units handed out one at a
/// time; returns the first exception a unit threw. With stop_at_failure, the units not yet started
/// when a unit fails are skipped.
std::exception_ptr run_units(long long count, int team, const std::function<void(long long)>& body,
                             const std::function<void(int, int)>& progress, bool stop_at_failure) {
  std::exception_ptr failure;
  bool failed = false;
  int done = 0;
#pragma omp parallel for num_threads(team) schedule(dynamic)
  for (long long u = 0; u < count; ++u) {
    bool skip = false;
    if (stop_at_failure) {
#pragma omp atomic read
      skip = failed;
    }
    if (skip) continue;
    try {
      body(u);
    } catch (...) {
#pragma omp critical(subevict_parallel_units_error)
      if (!failure) failure = std::current_exception();
#pragma omp atomic write
      failed = true;
    }
#pragma omp critical(subevict_parallel_units_progress)
    if (progress) progress(++done, int(count));
  }
  return failure;
}

}  // namespace

std::string parallel_units(long long count, int threads, const std::function<void(long long)>& body,
                           const std::function<void(int, int)>& progress) {
  const int team = threads > 0 ? threads : omp_get_max_threads();
  const std::exception_ptr failure = run_units(count, team, body, progress, false);
  if (!failure) return {};
  try {
    std::rethrow_exception(failure);
  } catch (const std::exception& e) {
    return e.what();
  }  // an exception of another type goes on to the caller
}

void parallel_for(long long count, int threads, const std::function<void(long long)>& body) {
  if (count <= 0) return;
  const int team = int(std::min<long long>(threads > 0 ? threads : omp_get_max_threads(), count));
  // Callers size the nested work of a unit for the threads the team leaves idle: let it have them.
  const int levels = omp_get_max_active_levels();
  const bool outermost = omp_get_level() == 0;
  if (outermost && levels < 2) omp_set_max_active_levels(2);
  const std::exception_ptr failure = run_units(count, team, body, {}, true);
  if (outermost && levels < 2) omp_set_max_active_levels(levels);
  if (failure) std::rethrow_exception(failure);
}

}  // namespace subevict
