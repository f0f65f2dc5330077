// Tests core/progress.hpp on a file stream (not a terminal): lines with done/total, elapsed and
// ETA, at most one per interval besides the first and the last, a heartbeat line while a unit
// runs; nothing when quiet or when there is no work.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "core/progress.hpp"

namespace subevict {
namespace {

/// What `write` printed into a temporary file.
template <class Write>
std::string captured(Write write) {
  std::FILE* file = std::tmpfile();
  write(file);
  std::fflush(file);
  std::rewind(file);
  std::string text;
  for (int c; (c = std::fgetc(file)) != EOF;) text += char(c);
  std::fclose(file);
  return text;
}

using std::chrono::milliseconds;

/// Every advance writes a line, no heartbeat.
constexpr ProgressTiming kEveryLine{milliseconds(0), milliseconds(0)};

int count_lines(const std::string& text) {
  int lines = 0;
  for (char c : text) lines += c == '\n';
  return lines;
}

TEST(Progress, WritesALinePerUnitToAFileWithoutAnInterval) {
  const std::string text = captured([](std::FILE* file) {
    Progress progress("fit", 3, "layers", false, file, kEveryLine);
    EXPECT_FALSE(progress.on_terminal());
    progress.advance(1, "(layer 0)");
    progress.advance();
    progress.advance();
  });
  EXPECT_NE(text.find("fit: 1/3 layers (layer 0), "), std::string::npos) << text;
  EXPECT_NE(text.find("fit: 3/3 layers, "), std::string::npos) << text;
  EXPECT_NE(text.find("elapsed, ETA 0 s\n"), std::string::npos) << text;
  EXPECT_EQ(count_lines(text), 3);
}

TEST(Progress, ALogGetsTheFirstAndTheLastLineAndAtMostOnePerInterval) {
  const auto start = std::chrono::steady_clock::now();
  const std::string text = captured([](std::FILE* file) {
    Progress progress("inspect", 270, "heads", false, file);  // the default 5 s interval
    for (int k = 0; k < 270; ++k) progress.advance();
  });
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(text.find("inspect: 1/270 heads, "), 0u) << text;
  EXPECT_NE(text.find("inspect: 270/270 heads, "), std::string::npos) << text;
  EXPECT_LE(count_lines(text), 2 + int(seconds / 5.0)) << text;
}

TEST(Progress, AHeartbeatLineRepeatsTheNoteWhileAUnitRuns) {
  const std::string text = captured([](std::FILE* file) {
    Progress progress("simulate", 1, "heads", false, file, {milliseconds(5000), milliseconds(40)});
    progress.advance(0, "(head 0: round 1)");
    std::this_thread::sleep_for(milliseconds(300));
    progress.advance(1);
    std::this_thread::sleep_for(milliseconds(200));  // nothing after the last line
  });
  EXPECT_NE(text.find("simulate: 0/1 heads (head 0: round 1) (still running), "), std::string::npos) << text;
  const std::size_t last = text.find("simulate: 1/1 heads, ");
  ASSERT_NE(last, std::string::npos) << text;
  EXPECT_EQ(text.find('\n', last), text.size() - 1) << text;  // the last line is the last one written
  EXPECT_GE(count_lines(text), 3) << text;
  EXPECT_LE(count_lines(text), 2 + 300 / 40 + 1) << text;
}

TEST(Progress, TheEnvironmentSetsTheLogInterval) {
  ::setenv("SUBEVICT_PROGRESS_INTERVAL", "0", 1);
  EXPECT_EQ(ProgressTiming::from_environment().log_interval, milliseconds(0));
  ::setenv("SUBEVICT_PROGRESS_INTERVAL", "2.5", 1);
  EXPECT_EQ(ProgressTiming::from_environment().log_interval, milliseconds(2500));
  ::setenv("SUBEVICT_PROGRESS_INTERVAL", "-1", 1);  // not a duration: the default
  EXPECT_EQ(ProgressTiming::from_environment().log_interval, milliseconds(5000));
  ::setenv("SUBEVICT_PROGRESS_INTERVAL", "5s", 1);
  EXPECT_EQ(ProgressTiming::from_environment().log_interval, milliseconds(5000));
  ::unsetenv("SUBEVICT_PROGRESS_INTERVAL");
  EXPECT_EQ(ProgressTiming::from_environment().log_interval, milliseconds(5000));
  EXPECT_EQ(ProgressTiming::from_environment().heartbeat, milliseconds(30000));
}

TEST(Progress, NoHeartbeatWithoutOne) {
  const std::string text = captured([](std::FILE* file) {
    Progress progress("simulate", 1, "heads", false, file, kEveryLine);
    progress.advance(0, "(head 0: round 1)");
    std::this_thread::sleep_for(milliseconds(100));
    progress.advance(1);
  });
  EXPECT_EQ(text.find("still running"), std::string::npos) << text;
  EXPECT_EQ(count_lines(text), 2) << text;
}

TEST(Progress, ANoteBeforeTheFirstUnitHasNoEta) {
  const std::string text = captured([](std::FILE* file) {
    Progress progress("simulate", 2, "heads", false, file);
    progress.advance(0, "(head 0: round 1)");
    progress.advance(1);
  });
  EXPECT_NE(text.find("simulate: 0/2 heads (head 0: round 1), "), std::string::npos) << text;
  EXPECT_NE(text.find("elapsed, ETA unknown\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("ETA unknown", text.find('\n')), std::string::npos) << text;  // the unit's line projects
}

TEST(Progress, QuietOrEmptyWorkWritesNothing) {
  EXPECT_EQ(captured([](std::FILE* file) {
              Progress progress("x", 5, "units", true, file);
              progress.advance();
            }),
            "");
  EXPECT_EQ(captured([](std::FILE* file) {
              Progress progress("x", 0, "units", false, file);
              progress.advance();
            }),
            "");
}

TEST(Progress, CountsUnitsFromManyThreads) {
  const std::string text = captured([](std::FILE* file) {
    Progress progress("work", 400, "units", false, file, kEveryLine);
    std::vector<std::thread> pool;
    for (int t = 0; t < 4; ++t) pool.emplace_back([&progress] {
      for (int k = 0; k < 100; ++k) progress.advance();
    });
    for (auto& t : pool) t.join();
  });
  EXPECT_NE(text.find("work: 400/400 units"), std::string::npos);
  EXPECT_EQ(count_lines(text), 400);
}

}  // namespace
}  // namespace subevict
