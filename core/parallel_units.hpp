#pragma once
/// \file
/// Independent units of work (heads, layers) run on OpenMP threads, with progress and error
/// capture in one place: the one parallel loop of the library and of the command line.

#include <functional>
#include <string>

namespace subevict {

/// Runs body(u) for u = 0..count-1 on `threads` OpenMP threads (0: the OpenMP default), handing
/// the units out one at a time (their costs differ). After each unit, progress(done, count) is
/// called when set, from one thread at a time. A std::exception thrown by a unit does not stop the
/// others; the message of the first such exception is returned, and an empty string when none was
/// thrown. The result does not depend on the thread count as long as the units are independent.
std::string parallel_units(long long count, int threads, const std::function<void(long long)>& body,
                           const std::function<void(int, int)>& progress = {});

/// Runs body(u) for u = 0..count-1 on min(threads, count) OpenMP threads (the caller's among them;
/// threads <= 0: the OpenMP default), each taking the next unused unit. The first exception (of any
/// type) stops the handing out of further units and is rethrown, unchanged, once every thread has
/// stopped. body must be safe to call concurrently for different u. Parallel work inside body
/// (sized by the caller for the threads left over) gets its own threads: the call allows a nested
/// level while it runs.
void parallel_for(long long count, int threads, const std::function<void(long long)>& body);

}  // namespace subevict
