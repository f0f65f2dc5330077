// Tests sweep/result_store.hpp: insert, reopen and skip (resume), merge, bit-exact round trips.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/index_set.hpp"
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
      {"layers = '0,14,28-31'", true, {}},
      {"layers = '7'", true, {}},
      {"layers = ''", false, {"column layers", "a layer set such as \"0,14,28-31\"", "got nothing"}},
      {"layers = 'x'", false, {"column layers", "got 'x'"}},
      {"layers = '1,'", false, {"column layers", "got '1,'"}},
      {"layers = '-1'", false, {"column layers", "got '-1'"}},
      {"layers = '1 - 3'", false, {"column layers", "got '1 - 3'"}},
      {"layers = x'3031'", false, {"column layers", "got '01'"}},  // the text's bytes, but a BLOB
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
      EXPECT_EQ(r.layers, reinterpret_cast<const char*>(sqlite3_column_text(st, 1)));
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

TEST_F(ResultStoreTest, StoresTheLayerSetTheJobRan) {
  // The layers column holds Job::run_layers(), not the generated count: a set, every layer of a
  // count, and the single layer of a one-layer workload.
  Job job;
  job.workload = spec_from_preset("tiny", 16, 4, 3);
  job.policy = "h2o";
  JobResult result;
  result.groups = 2;
  result.budget_size = 2;
  // (Job::layers, generated layers)
  const std::vector<std::pair<std::vector<int>, int>> cases = {{{1, 3}, 4}, {{0, 2, 3}, 4}, {{}, 4},
                                                               {{}, 2},     {{}, 1},        {{3}, 4}};
  const std::vector<std::string> expected = {"1,3", "0,2-3", "0-3", "0-1", "0", "3"};
  ResultStore store(path("sets.sqlite"));
  std::map<std::string, std::string> by_id;
  for (std::size_t c = 0; c < cases.size(); ++c) {
    job.layers = cases[c].first;
    job.workload.shape.layers = cases[c].second;
    const ResultRow row = ResultRow::of(job, result);
    EXPECT_EQ(row.layers, expected[c]) << c;
    EXPECT_EQ(row.layers, format_index_set(job.run_layers())) << c;
    EXPECT_TRUE(store.insert(row)) << c;
    by_id[row.id] = expected[c];
  }
  const auto rows = store.rows();
  ASSERT_EQ(rows.size(), cases.size());
  for (const ResultRow& r : rows) EXPECT_EQ(r.layers, by_id.at(r.id)) << r.id;
}

/// The CREATE TABLE of schema version 0 (no user_version), as subevict wrote it before the layers
/// column held the layer set.
constexpr const char* kVersion0Table =
    "CREATE TABLE IF NOT EXISTS results ("
    "id TEXT PRIMARY KEY NOT NULL, params TEXT NOT NULL, preset TEXT NOT NULL, tokens INTEGER NOT NULL, "
    "layers INTEGER NOT NULL, seed INTEGER NOT NULL, policy TEXT NOT NULL, budget_kind TEXT NOT NULL, "
    "budget_value REAL NOT NULL, optimum TEXT NOT NULL, groups INTEGER NOT NULL, budget_size INTEGER NOT NULL, "
    "mean_retained_mass REAL NOT NULL, mean_total_variation REAL NOT NULL, mean_output_error REAL NOT NULL, "
    "uncompressed_groups INTEGER NOT NULL, optimum_mean_retained_mass REAL, oracle_mean_retained_mass REAL, "
    "ratio_to_optimum REAL) WITHOUT ROWID";

/// One integer or text of the database at `path` (read directly, not through ResultStore).
std::string query(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr), SQLITE_OK) << sql;
  std::string out;
  if (sqlite3_step(st) == SQLITE_ROW) {
    const unsigned char* t = sqlite3_column_text(st, 0);
    out = t ? reinterpret_cast<const char*>(t) : "";
  }
  sqlite3_finalize(st);
  sqlite3_close(db);
  return out;
}

/// `row` as a version-0 INSERT: its `layers` replaced by the generated count.
std::string version0_insert(const ResultRow& row, int count) {
  const JobResult& r = row.result;
  return "INSERT INTO results VALUES ('" + row.id + "', '" + row.params + "', '" + row.preset + "', " +
         std::to_string(row.tokens) + ", " + std::to_string(count) + ", " + std::to_string(row.seed) + ", '" +
         row.policy + "', '" + row.budget_kind + "', " + exact_text(row.budget_value) + ", '" + row.optimum + "', " +
         std::to_string(r.groups) + ", " + std::to_string(r.budget_size) + ", " + exact_text(r.mean_retained_mass) +
         ", " + exact_text(r.mean_total_variation) + ", " + exact_text(r.mean_output_error) + ", " +
         std::to_string(r.uncompressed_groups) + ", NULL, NULL, NULL)";
}

TEST_F(ResultStoreTest, MigratesAVersion0StoreToTheLayerSets) {
  // Version 0 stored the generated count; the set a job ran is its params' layer_set, or every
  // generated layer without one.
  Job job;
  job.workload = spec_from_preset("tiny", 16, 4, 3);
  job.policy = "h2o";
  JobResult result;
  result.groups = 2;
  result.budget_size = 2;
  result.mean_retained_mass = 0.25;
  job.layers = {1, 3};
  const ResultRow with_set = ResultRow::of(job, result);
  job.layers = {};
  const ResultRow every = ResultRow::of(job, result);
  job.workload.shape.layers = 1;
  const ResultRow one = ResultRow::of(job, result);
  const std::string old = path("old.sqlite");
  execute(old, std::string(kVersion0Table) + "; " + version0_insert(with_set, 4) + "; " + version0_insert(every, 4) +
                   "; " + version0_insert(one, 1));
  ASSERT_EQ(query(old, "PRAGMA user_version"), "0");
  auto expect_sets = [&](const std::vector<ResultRow>& rows) {
    ASSERT_EQ(rows.size(), 3u);
    for (const ResultRow& r : rows) {
      EXPECT_EQ(r.layers, r.id == with_set.id ? "1,3" : r.id == every.id ? "0-3" : "0") << r.id;
      EXPECT_EQ(r.result.mean_retained_mass, 0.25);
    }
  };
  {
    // Read-only: the rows read in the current schema, the file unchanged.
    const ResultStore store(old, true);
    expect_sets(store.rows());
  }
  EXPECT_EQ(query(old, "PRAGMA user_version"), "0");
  EXPECT_EQ(query(old, "SELECT type FROM pragma_table_info('results') WHERE name = 'layers'"), "INTEGER");
  {
    // Merged from a version-0 part: converted on the way.
    ResultStore gathered(path("gathered.sqlite"));
    EXPECT_EQ(gathered.merge(old), 3);
    expect_sets(gathered.rows());
  }
  {
    // Opened for writing: migrated in place, rows kept, new rows stored as sets.
    ResultStore store(old);
    expect_sets(store.rows());
    EXPECT_EQ(store.integrity_check(), "ok");
  }
  EXPECT_EQ(query(old, "PRAGMA user_version"), "1");
  EXPECT_EQ(query(old, "SELECT type FROM pragma_table_info('results') WHERE name = 'layers'"), "TEXT");
  EXPECT_EQ(query(old, "SELECT layers FROM results WHERE id = '" + with_set.id + "'"), "1,3");
  ResultStore again(old);  // a second open changes nothing
  expect_sets(again.rows());
  EXPECT_TRUE(again.insert(row(1)));
  EXPECT_EQ(again.rows().size(), 4u);
}

TEST_F(ResultStoreTest, RefusesStoresItCannotMigrateOrRead) {
  auto error_of = [](const std::string& file, bool read_only) -> std::string {
    try {
      ResultStore store(file, read_only);
      (void)store.rows();
    } catch (const InputError& e) {
      return e.what();
    }
    return "accepted";
  };
  // A version-0 row whose count is not one: nothing is migrated, the error names the file and row.
  const std::string bad = path("bad.sqlite");
  execute(bad, std::string(kVersion0Table) + "; " + version0_insert(row(0), 1) + "; " + version0_insert(row(1), 0));
  std::string what = error_of(bad, false);
  EXPECT_EQ(what.rfind(bad + ": results store: expected rows that migrate to schema version 1", 0), 0u) << what;
  EXPECT_NE(what.find("the file is unchanged"), std::string::npos) << what;
  EXPECT_NE(what.find("row '" + row(1).id + "' column layers"), std::string::npos) << what;
  EXPECT_EQ(query(bad, "PRAGMA user_version"), "0");
  EXPECT_EQ(query(bad, "SELECT count(*) FROM results"), "2");
  // A version-0 layer_set that is not a set.
  const std::string bad_set = path("bad_set.sqlite");
  ResultRow odd = row(2);
  odd.params += ";layer_set=2-x;policy=h2o";
  execute(bad_set, std::string(kVersion0Table) + "; " + version0_insert(odd, 3));
  what = error_of(bad_set, true);
  EXPECT_NE(what.find(bad_set + ": row '" + odd.id + "' column params: expected a layer_set"), std::string::npos)
      << what;
  // A newer subevict's version, and a version whose layers column has the other schema's type.
  const std::string newer = path("newer.sqlite");
  ResultStore(newer).insert(row(0));
  execute(newer, "PRAGMA user_version = 2");
  for (bool read_only : {false, true}) {
    what = error_of(newer, read_only);
    EXPECT_EQ(what.rfind(newer + ": results store: expected schema version 0 or 1", 0), 0u) << what;
    EXPECT_NE(what.find("got 2 (written by a newer subevict"), std::string::npos) << what;
  }
  const std::string mixed = path("mixed.sqlite");
  execute(mixed, std::string(kVersion0Table) + "; PRAGMA user_version = 1");
  what = error_of(mixed, true);
  const std::string wrong_type = ": results store: expected column layers of type TEXT in schema version 1, got INTEGER";
  EXPECT_EQ(what.rfind(mixed + wrong_type, 0), 0u) << what;
}

}  // namespace
}  // namespace subevict::sweep
