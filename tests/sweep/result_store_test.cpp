// Tests sweep/result_store.hpp: insert, reopen and skip (resume), merge, bit-exact round trips.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>

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

}  // namespace
}  // namespace subevict::sweep
