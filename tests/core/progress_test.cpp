// Tests core/progress.hpp on a file stream (not a terminal): one line per finished unit with
// done/total, elapsed and ETA; nothing when quiet or when there is no work.
#include <gtest/gtest.h>

#include <cstdio>
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

TEST(Progress, WritesALinePerUnitToAFile) {
  const std::string text = captured([](std::FILE* file) {
    Progress progress("fit", 3, "layers", false, file);
    EXPECT_FALSE(progress.on_terminal());
    progress.advance(1, "(layer 0)");
    progress.advance();
    progress.advance();
  });
  EXPECT_NE(text.find("fit: 1/3 layers (layer 0), "), std::string::npos) << text;
  EXPECT_NE(text.find("fit: 3/3 layers, "), std::string::npos) << text;
  EXPECT_NE(text.find("elapsed, ETA 0 s\n"), std::string::npos) << text;
  int lines = 0;
  for (char c : text) lines += c == '\n';
  EXPECT_EQ(lines, 3);
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
    Progress progress("work", 400, "units", false, file);
    std::vector<std::thread> pool;
    for (int t = 0; t < 4; ++t) pool.emplace_back([&progress] {
      for (int k = 0; k < 100; ++k) progress.advance();
    });
    for (auto& t : pool) t.join();
  });
  EXPECT_NE(text.find("work: 400/400 units"), std::string::npos);
  int lines = 0;
  for (char c : text) lines += c == '\n';
  EXPECT_EQ(lines, 400);
}

}  // namespace
}  // namespace subevict
