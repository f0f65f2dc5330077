#include "core/progress.hpp"

#include <unistd.h>

#include <cmath>
#include <cstdlib>

namespace subevict {
namespace {

/// "42 s", "3.5 min", "1.2 h".
std::string duration_text(double seconds) {
  char text[32];
  if (seconds < 90) {
    std::snprintf(text, sizeof text, "%.0f s", seconds);
  } else if (seconds < 5400) {
    std::snprintf(text, sizeof text, "%.1f min", seconds / 60);
  } else {
    std::snprintf(text, sizeof text, "%.1f h", seconds / 3600);
  }
  return text;
}

}  // namespace

ProgressTiming ProgressTiming::from_environment() {
  ProgressTiming timing;
  if (const char* text = std::getenv("SUBEVICT_PROGRESS_INTERVAL")) {
    char* end = nullptr;
    const double seconds = std::strtod(text, &end);
    if (end != text && *end == '\0' && std::isfinite(seconds) && seconds >= 0.0 && seconds <= 86400.0) {
      timing.log_interval = std::chrono::milliseconds(static_cast<long long>(seconds * 1000.0));
    }
  }
  return timing;
}

Progress::Progress(std::string label, long long total, std::string unit, bool quiet, std::FILE* stream,
                   ProgressTiming timing)
    : label_(std::move(label)),
      unit_(std::move(unit)),
      total_(total),
      quiet_(quiet || total <= 0),
      terminal_(isatty(fileno(stream)) != 0),
      stream_(stream),
      timing_(timing),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {
  if (!quiet_ && timing_.heartbeat.count() > 0) heartbeat_ = std::thread([this] { beat(); });
}

Progress::~Progress() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (heartbeat_.joinable()) heartbeat_.join();
  if (!quiet_ && terminal_ && written_) std::fputc('\n', stream_);
}

void Progress::advance(long long units, const std::string& what) {
  if (quiet_) return;
  std::lock_guard<std::mutex> lock(mutex_);
  done_ += units;
  if (units == 0 && !what.empty()) note_ = what;
  if (units > 0) note_.clear();
  const auto now = std::chrono::steady_clock::now();
  const bool last = done_ >= total_;
  const auto interval = terminal_ ? std::chrono::milliseconds(200) : timing_.log_interval;
  if (written_ && !last && now - last_draw_ < interval) return;
  write(now, what);
}

void Progress::write(std::chrono::steady_clock::time_point now, const std::string& what) {
  last_draw_ = now;
  written_ = true;
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const double rate = elapsed > 0 ? double(done_) / elapsed : 0.0;
  const double eta = rate > 0 ? double(total_ - done_) / rate : 0.0;
  // Before the first unit finishes there is no rate to project from (a note with 0 units, such as
  // a long head's round, must not claim "ETA 0 s").
  const std::string eta_text = done_ > 0 ? duration_text(eta) : std::string("unknown");
  if (terminal_) {
    std::fprintf(stream_, "\r%s: %lld/%lld %s (%.3g/s, %s elapsed, ETA %s)   ", label_.c_str(), done_, total_,
                 unit_.c_str(), rate, duration_text(elapsed).c_str(), eta_text.c_str());
  } else {
    std::fprintf(stream_, "%s: %lld/%lld %s%s%s, %s elapsed, ETA %s\n", label_.c_str(), done_, total_,
                 unit_.c_str(), what.empty() ? "" : " ", what.c_str(), duration_text(elapsed).c_str(),
                 eta_text.c_str());
  }
  std::fflush(stream_);
}

void Progress::beat() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    const auto due = last_draw_ + timing_.heartbeat;
    if (wake_.wait_until(lock, due, [this] { return stopping_; })) break;
    if (done_ >= total_) {  // the last line is written: nothing runs any more
      wake_.wait(lock, [this] { return stopping_; });
      break;
    }
    const auto now = std::chrono::steady_clock::now();
    if (now - last_draw_ < timing_.heartbeat) continue;
    write(now, note_.empty() ? std::string("(still running)") : note_ + " (still running)");
  }
}

}  // namespace subevict
