#include "core/progress.hpp"

#include <unistd.h>

#include <cmath>

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

Progress::Progress(std::string label, long long total, std::string unit, bool quiet, std::FILE* stream)
    : label_(std::move(label)),
      unit_(std::move(unit)),
      total_(total),
      quiet_(quiet || total <= 0),
      terminal_(isatty(fileno(stream)) != 0),
      stream_(stream),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {}

Progress::~Progress() {
  if (!quiet_ && terminal_ && done_ > 0) std::fputc('\n', stream_);
}

void Progress::advance(long long units, const std::string& what) {
  if (quiet_) return;
  std::lock_guard<std::mutex> lock(mutex_);
  done_ += units;
  const auto now = std::chrono::steady_clock::now();
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const double rate = elapsed > 0 ? double(done_) / elapsed : 0.0;
  const double eta = rate > 0 ? double(total_ - done_) / rate : 0.0;
  // Before the first unit finishes there is no rate to project from (a note with 0 units, such as
  // a long head's round, must not claim "ETA 0 s").
  const std::string eta_text = done_ > 0 ? duration_text(eta) : std::string("unknown");
  if (terminal_) {
    if (done_ < total_ && now - last_draw_ < std::chrono::milliseconds(200)) return;
    last_draw_ = now;
    std::fprintf(stream_, "\r%s: %lld/%lld %s (%.3g/s, ETA %s)   ", label_.c_str(), done_, total_, unit_.c_str(),
                 rate, eta_text.c_str());
  } else {
    std::fprintf(stream_, "%s: %lld/%lld %s%s%s, %s elapsed, ETA %s\n", label_.c_str(), done_, total_,
                 unit_.c_str(), what.empty() ? "" : " ", what.c_str(), duration_text(elapsed).c_str(),
                 eta_text.c_str());
  }
  std::fflush(stream_);
}

}  // namespace subevict
