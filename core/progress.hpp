#pragma once
/// \file
/// Progress of long work on stderr: done/total, rate and ETA. On a terminal one line is redrawn
/// in place; otherwise (a log file, a pipe) one line is written per finished unit with the
/// elapsed time, so a researcher tailing a log can tell a long run is alive.

#include <chrono>
#include <cstdio>
#include <mutex>
#include <string>

namespace subevict {

/// Reports units of work as they finish. Thread-safe: `advance` may be called from any thread.
/// Writes nothing when `quiet` or when total <= 0.
class Progress {
 public:
  /// `label` names the work ("inspect", "fit layer"), `total` the units, `unit` their name in the
  /// per-line form ("head"). `stream` is stderr unless a test passes another.
  Progress(std::string label, long long total, std::string unit, bool quiet = false, std::FILE* stream = stderr);
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  /// Ends a redrawn terminal line.
  ~Progress();

  /// Marks `units` more units as done; `what` (may be empty) describes the unit just finished (with
  /// units = 0, a note on work in progress). The ETA reads "unknown" until a unit has finished.
  void advance(long long units = 1, const std::string& what = {});

  /// True when output goes to a terminal (the line is redrawn in place).
  bool on_terminal() const { return terminal_; }

 private:
  std::string label_, unit_;
  long long total_, done_ = 0;
  bool quiet_, terminal_;
  std::FILE* stream_;
  std::chrono::steady_clock::time_point start_, last_draw_;
  std::mutex mutex_;
};

}  // namespace subevict
