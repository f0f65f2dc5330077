#pragma once
/// \file
/// Progress of long work on stderr: done/total, rate and ETA. On a terminal one line is redrawn
/// in place; otherwise (a log file, a pipe) lines with the elapsed time, at most one every
/// `log_interval` (plus the first and the last), so a log stays short; and on both, a line at
/// least every `heartbeat` while a unit runs, so a researcher tailing a log can tell that a long
/// unit is alive.

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>

namespace subevict {

/// How often a log gets a line (tests shorten both).
struct ProgressTiming {
  /// At most one line per interval in a log, besides the first and the last (0: every advance).
  std::chrono::milliseconds log_interval{5000};
  /// A line ("still running") when nothing was written for this long (0: none).
  std::chrono::milliseconds heartbeat{30000};

  /// The defaults, with log_interval taken from the environment variable
  /// SUBEVICT_PROGRESS_INTERVAL (seconds >= 0, e.g. 0 for a line per unit) when it is set to one.
  [[nodiscard]] static ProgressTiming from_environment();
};

/// Reports units of work as they finish. Thread-safe: `advance` may be called from any thread.
/// Writes nothing when `quiet` or when total <= 0.
class Progress {
 public:
  /// `label` names the work ("inspect", "fit layer"), `total` the units, `unit` their name in the
  /// per-line form ("head"). `stream` is stderr unless a test passes another.
  Progress(std::string label, long long total, std::string unit, bool quiet = false, std::FILE* stream = stderr,
           ProgressTiming timing = ProgressTiming::from_environment());
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  /// Stops the heartbeat and ends a redrawn terminal line.
  ~Progress();

  /// Marks `units` more units as done; `what` (may be empty) describes the unit just finished (with
  /// units = 0, a note on work in progress, which later heartbeat lines repeat). The ETA reads
  /// "unknown" until a unit has finished.
  void advance(long long units = 1, const std::string& what = {});

  /// True when output goes to a terminal (the line is redrawn in place).
  bool on_terminal() const { return terminal_; }

 private:
  /// Writes the line for the current state (mutex_ held).
  void write(std::chrono::steady_clock::time_point now, const std::string& what);
  /// The heartbeat thread's loop.
  void beat();

  std::string label_, unit_, note_;
  long long total_, done_ = 0;
  bool quiet_, terminal_, written_ = false, stopping_ = false;
  std::FILE* stream_;
  ProgressTiming timing_;
  std::chrono::steady_clock::time_point start_, last_draw_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::thread heartbeat_;
};

}  // namespace subevict
