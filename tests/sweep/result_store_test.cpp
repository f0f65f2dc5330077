// Tests sweep/result_store.hpp: insert, reopen and skip (resume), merge, bit-exact round trips.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>

#include "core/input_error.hpp"
#include "sweep/result_store.hpp"

namespace subevict::sweep {
namespace {

namespace fs = std::filesystem;

class ResultStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("subevict_store_test_" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

ResultRow row(int i) {
  Job job;
  job.workload = spec_from_preset("tiny", 16, 1, std::uint64_t(i));
  job.policy = "h2o";
  job.budget_kind = BudgetKind::kSize;
  job.budget_value = 4;
  JobResult r;
  r.groups = 2;
  r.budget_size = 4;
  r.mean_retained_mass = std::nextafter(0.5, 1.0) + i * 1e-3;  // values that need all 17 digits
  r.mean_total_variation = 1.0 - r.mean_retained_mass;
  r.mean_output_error = 1.0 / 3.0 + i;
  if (i % 2 == 0) {
    r.optimum_mean_retained_mass = 0.9;
    r.ratio_to_optimum = r.mean_retained_mass / 0.9;
  }
  if (i % 3 != 2) r.oracle_mean_retained_mass = 0.95;
  return ResultRow::of(job, r);
}

bool same(const ResultRow& a, const ResultRow& b) {
  auto bits = [](double x, double y) { return std::memcmp(&x, &y, sizeof x) == 0; };
  auto opt = [&](const std::optional<double>& x, const std::optional<double>& y) {
    return x.has_value() == y.has_value() && (!x || bits(*x, *y));
  };
  const JobResult &p = a.result, &q = b.result;
  return a.id == b.id && a.params == b.params && a.preset == b.preset && a.tokens == b.tokens &&
         a.layers == b.layers && a.seed == b.seed && a.policy == b.policy && a.budget_kind == b.budget_kind &&
         bits(a.budget_value, b.budget_value) && a.optimum == b.optimum && p.groups == q.groups &&
         p.budget_size == q.budget_size && bits(p.mean_retained_mass, q.mean_retained_mass) &&
         bits(p.mean_total_variation, q.mean_total_variation) && bits(p.mean_output_error, q.mean_output_error) &&
         p.uncompressed_groups == q.uncompressed_groups &&
         opt(p.optimum_mean_retained_mass, q.optimum_mean_retained_mass) &&
         opt(p.oracle_mean_retained_mass, q.oracle_mean_retained_mass) && opt(p.ratio_to_optimum, q.ratio_to_optimum);
}

TEST_F(ResultStoreTest, RowsSurviveReopeningBitForBitAndRerunsSkipThem) {
  std::vector<ResultRow> rows;
  for (int i = 0; i < 6; ++i) rows.push_back(row(i));
  {
    ResultStore store(path("r.sqlite"));
    for (int i = 0; i < 4; ++i) EXPECT_TRUE(store.insert(rows[i]));
  }  // closed: as after a finished (or killed) process
  ResultStore store(path("r.sqlite"));
  EXPECT_EQ(store.ids().size(), 4u);
  for (int i = 0; i < 6; ++i) {
    // A rerun inserts only what is missing; a repeated insert keeps the first row.
    if (!store.ids().count(rows[i].id)) {
      EXPECT_TRUE(store.insert(rows[i]));
    }
  }
  EXPECT_FALSE(store.insert(rows[0]));
  const auto back = store.rows();
  ASSERT_EQ(back.size(), 6u);
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
  for (std::size_t i = 0; i < back.size(); ++i) EXPECT_TRUE(same(back[i], rows[i])) << i;
  EXPECT_EQ(store.integrity_check(), "ok");
}

TEST_F(ResultStoreTest, MergeGathersDisjointAndOverlappingPartsOnce) {
  {
    ResultStore a(path("rank-0.sqlite")), b(path("rank-1.sqlite"));
    for (int i = 0; i < 5; ++i) (i % 2 ? a : b).insert(row(i));
    a.insert(row(0));  // overlap: present in both parts
  }
  ResultStore all(path("results.sqlite"));
  EXPECT_EQ(all.merge(path("rank-0.sqlite")), 3);
  EXPECT_EQ(all.merge(path("rank-1.sqlite")), 2);
  EXPECT_EQ(all.merge(path("rank-1.sqlite")), 0);
  EXPECT_EQ(all.ids().size(), 5u);
  const auto rows = all.rows();
  for (int i = 0; i < 5; ++i) {
    const auto it = std::find_if(rows.begin(), rows.end(), [&](const auto& r) { return r.id == row(i).id; });
    ASSERT_NE(it, rows.end());
    EXPECT_TRUE(same(*it, row(i)));
  }
}

TEST_F(ResultStoreTest, RejectsFilesThatAreNotStoresNamingThem) {
  {
    std::FILE* f = std::fopen(path("junk.sqlite").c_str(), "wb");
    std::fputs("this is not a database, just some text long enough to be looked at", f);
    std::fclose(f);
  }
  try {
    ResultStore store(path("junk.sqlite"));
    ADD_FAILURE();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("junk.sqlite"), std::string::npos) << e.what();
  }
  EXPECT_THROW(ResultStore(path("missing.sqlite"), true), InputError);
  ResultStore store(path("ok.sqlite"));
  EXPECT_THROW((void)store.merge(path("junk.sqlite")), InputError);
}

/// Runs `sql` on the database at `path` directly (to store values ResultStore::insert never writes).
void execute(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* error = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error);
  EXPECT_EQ(rc, SQLITE_OK) << (error ? error : "") << " in: " << sql;
  sqlite3_free(error);
  sqlite3_close(db);
}

TEST_F(ResultStoreTest, ReadsIntegerColumnsAtTheirLimitsAndRejectsValuesOutside) {
  const std::string int_max = std::to_string(std::numeric_limits<int>::max());
  const std::string beyond = std::to_string(std::int64_t(std::numeric_limits<int>::max()) + 1);
  // (assignments, accepted, needles of the error). row(0) has tokens 16, groups 2, budget_size 4.
  struct Case {
    std::string set;
    bool accepted;
    std::vector<std::string> needles;
  };
  const std::vector<Case> cases = {
      {"tokens = " + int_max + ", budget_size = " + int_max, true, {}},
      {"tokens = " + beyond, false, {"column tokens", "an integer in [1, " + int_max + "]", "got " + beyond}},
      {"tokens = 1, budget_size = 1", true, {}},
      {"tokens = 0", false, {"column tokens", "[1, ", "got 0"}},
      {"tokens = -1", false, {"column tokens", "got -1"}},
      {"tokens = 4294967312", false, {"column tokens", "got 4294967312"}},  // 2^32 + 16: int would read 16
      {"tokens = 16.5", false, {"column tokens", "the non-integer '16.5'"}},
      {"layers = " + int_max, true, {}},
      {"layers = 1", true, {}},
      {"layers = " + beyond, false, {"column layers", "an integer in [1, " + int_max + "]", "got " + beyond}},
      {"layers = 0", false, {"column layers", "got 0"}},
      {"layers = 'x'", false, {"column layers", "the non-integer 'x'"}},
      {"groups = " + int_max, true, {}},
      {"groups = 1, uncompressed_groups = 1", true, {}},
      {"groups = " + beyond, false, {"column groups", "an integer in [1, " + int_max + "]", "got " + beyond}},
      {"groups = 0", false, {"column groups", "got 0"}},
      {"groups = -2147483648", false, {"column groups", "got -2147483648"}},
      {"budget_size = 16", true, {}},
      {"budget_size = 1", true, {}},
      {"budget_size = 17", false, {"column budget_size", "an integer in [1, 16] (budget_size <= tokens)", "got 17"}},
      {"budget_size = " + beyond, false, {"column budget_size", "got " + beyond}},
      {"budget_size = 0", false, {"column budget_size", "got 0"}},
      {"uncompressed_groups = 2", true, {}},
      {"uncompressed_groups = 0", true, {}},
      {"uncompressed_groups = 3", false, {"column uncompressed_groups", "[0, 2] (uncompressed_groups <= groups)", "got 3"}},
      {"uncompressed_groups = -1", false, {"column uncompressed_groups", "got -1"}},
      {"uncompressed_groups = " + beyond, false, {"column uncompressed_groups", "got " + beyond}},
  };
  const ResultRow original = row(0);
  int n = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.set);
    const std::string file = path("limits-" + std::to_string(n++) + ".sqlite");
    ResultStore(file).insert(original);
    execute(file, "UPDATE results SET " + c.set);
    ResultStore store(file, true);
    if (c.accepted) {
      std::vector<ResultRow> back;
      ASSERT_NO_THROW(back = store.rows());
      ASSERT_EQ(back.size(), 1u);
      // What SQLite itself stores, read independently of ResultStore, arrived unchanged.
      const ResultRow& r = back[0];
      sqlite3* db = nullptr;
      ASSERT_EQ(sqlite3_open_v2(file.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
      sqlite3_stmt* st = nullptr;
      ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT tokens, layers, groups, budget_size, uncompressed_groups FROM results",
                                   -1, &st, nullptr),
                SQLITE_OK);
      ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
      EXPECT_EQ(r.tokens, sqlite3_column_int64(st, 0));
      EXPECT_EQ(r.layers, sqlite3_column_int64(st, 1));
      EXPECT_EQ(r.result.groups, sqlite3_column_int64(st, 2));
      EXPECT_EQ(r.result.budget_size, sqlite3_column_int64(st, 3));
      EXPECT_EQ(r.result.uncompressed_groups, sqlite3_column_int64(st, 4));
      sqlite3_finalize(st);
      sqlite3_close(db);
      continue;
    }
    try {
      (void)store.rows();
      ADD_FAILURE() << "accepted";
    } catch (const InputError& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.rfind(file + ": row '" + original.id + "' ", 0), 0u) << what;  // the file, then the row
      for (const std::string& needle : c.needles) EXPECT_NE(what.find(needle), std::string::npos) << what;
    }
  }
}

}  // namespace
}  // namespace subevict::sweep
