#pragma once
/// \file
/// Independent units of work (heads, layers) run on OpenMP threads, with progress and error
/// capture in one place.

#include <functional>
#include <string>

namespace subevict {

/// Runs body(u) for u = 0..count-1 on `threads` OpenMP threads (0: the OpenMP default), handing
/// the units out one at a time (their costs differ). After each unit, progress(done, count) is
/// called when set, from one thread at a time. A std::exception thrown by a unit does not stop the
/// others; the message of one such exception is returned, and an empty string when none was
/// thrown. The result does not depend on the thread count as long as the units are independent.
std::string parallel_units(long long count, int threads, const std::function<void(long long)>& body,
                           const std::function<void(int, int)>& progress = {});

}  // namespace subevict
