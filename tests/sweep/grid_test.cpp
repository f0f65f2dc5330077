// Tests sweep/grid.hpp: grid parsing and validation, the cartesian product, job ids, sharding.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <set>
#include <string>

#include "core/input_error.hpp"
#include "sweep/grid.hpp"

namespace subevict::sweep {
namespace {

const std::string kGrid = R"(
[workload]
presets = ["tiny", "tiny-gqa"]
tokens = [16, 24]
layers = 1
seeds = [0, 1, 2]
[workload.params]
heavy_logit = [0.0, 1.2]
[policy]
names = ["h2o", "local"]
[budget]
ratios = [0.25, 0.5]
sizes = [4]
[optimum]
modes = ["flow", "none"]
)";

/// Expects parse_grid(text) to throw InputError whose message holds every needle.
void expect_rejected(const std::string& text, const std::vector<std::string>& needles) {
  try {
    (void)parse_grid(text, "grid.toml");
    ADD_FAILURE() << "accepted:\n" << text;
  } catch (const InputError& e) {
    const std::string what = e.what();
    for (const auto& n : needles) EXPECT_NE(what.find(n), std::string::npos) << what << " lacks " << n;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
}

/// A minimal valid grid with `extra` appended to the given table's body.
std::string grid_with(const std::string& workload, const std::string& policy, const std::string& budget,
                      const std::string& tail = "") {
  return "[workload]\npresets = [\"tiny\"]\ntokens = [16]\n" + workload + "\n[policy]\nnames = [\"h2o\"]\n" +
         policy + "\n[budget]\n" + budget + "\n" + tail;
}

TEST(Grid, ProductHasOneJobPerCellSortedByUniqueId) {
  const std::vector<Job> jobs = parse_grid(kGrid, "grid.toml");
  // presets 2 x tokens 2 x seeds 3 x heavy_logit 2 x policies 2 x budgets 3 x modes 2.
  ASSERT_EQ(jobs.size(), std::size_t(2 * 2 * 3 * 2 * 2 * 3 * 2));
  std::set<std::string> ids, canonical;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    ids.insert(jobs[i].id());
    canonical.insert(jobs[i].canonical());
    if (i > 0) {
      EXPECT_LT(jobs[i - 1].id(), jobs[i].id());
    }
    EXPECT_EQ(jobs[i].id().size(), 16u);
  }
  EXPECT_EQ(ids.size(), jobs.size());
  EXPECT_EQ(canonical.size(), jobs.size());
  for (const Job& j : jobs) {
    EXPECT_EQ(j.workload.shape.layers, 1);
    EXPECT_TRUE(j.workload.shape.tokens == 16 || j.workload.shape.tokens == 24);
    EXPECT_TRUE(j.workload.llm.heavy_logit == 0.0 || j.workload.llm.heavy_logit == 1.2);
  }
}

TEST(Grid, DefaultsFillOmittedKeysAndDuplicatesCollapse) {
  const auto jobs = parse_grid("[workload]\npresets = [\"tiny\"]\ntokens = [16]\n[policy]\nnames = [\"h2o\", \"h2o\"]\n"
                               "[budget]\nsizes = [2, 2]\n", "g");
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0].workload.seed, 0u);
  EXPECT_EQ(jobs[0].workload.shape.layers, 1);
  EXPECT_EQ(jobs[0].optimum, greedy::OptimumMode::kFlow);
  EXPECT_EQ(jobs[0].budget_size(), 2);
  // tokens 0 is the preset's default (tiny: 32); a ratio resolves as max(1, round(r n)).
  const auto dflt = parse_grid("[workload]\npresets=\"tiny\"\ntokens=0\n[policy]\nnames=\"local\"\n[budget]\nratios=0.1\n", "g");
  ASSERT_EQ(dflt.size(), 1u);
  EXPECT_EQ(dflt[0].workload.shape.tokens, 32);
  EXPECT_EQ(dflt[0].budget_size(), 3);
}

TEST(Grid, JobIdsDoNotDependOnTheOrderOfTheLists) {
  const std::string permuted = R"(
[optimum]
modes = ["none", "flow"]
[budget]
sizes = [4]
ratios = [0.5, 0.25]
[policy]
names = ["local", "h2o"]
[workload]
seeds = [2, 0, 1]
layers = [1]
tokens = [24, 16]
presets = ["tiny-gqa", "tiny"]
[workload.params]
heavy_logit = [1.2, 0.0]
)";
  const auto a = parse_grid(kGrid, "a.toml");
  const auto b = parse_grid(permuted, "b.toml");
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].id(), b[i].id());
    EXPECT_EQ(a[i].canonical(), b[i].canonical());
  }
}

TEST(Grid, RejectsUnknownKeysNamingTheKeyAndTable) {
  expect_rejected(grid_with("tokenz = [4]", "", "ratios = [0.5]"), {"grid.toml", "tokenz", "[workload]"});
  expect_rejected(grid_with("", "horizn = 3", "ratios = [0.5]"), {"horizn", "[policy]"});
  expect_rejected(grid_with("", "", "ratio = [0.5]"), {"'ratio'", "[budget]"});
  expect_rejected(grid_with("", "", "ratios = [0.5]", "[optimum]\nmode = [\"flow\"]\n"), {"'mode'", "[optimum]"});
  expect_rejected(grid_with("[workload.params]\ncolour = 1", "", "ratios = [0.5]"), {"colour", "[workload.params]"});
  expect_rejected(grid_with("", "", "ratios = [0.5]", "[extras]\n"), {"extras", "top level"});
}

TEST(Grid, RejectsEmptyGridsNamingTheKey) {
  expect_rejected(grid_with("seeds = []", "", "ratios = [0.5]"), {"[workload] seeds", "non-empty"});
  expect_rejected(grid_with("", "", "ratios = []"), {"[budget] ratios", "non-empty"});
  expect_rejected("[workload]\npresets = []\n[policy]\nnames=[\"h2o\"]\n[budget]\nratios=[0.5]\n", {"[workload] presets"});
  expect_rejected("[workload]\npresets = [\"tiny\"]\n[policy]\nnames=[]\n[budget]\nratios=[0.5]\n", {"[policy] names"});
  expect_rejected(grid_with("", "", ""), {"[budget]", "ratios", "sizes"});
  expect_rejected("[policy]\nnames=[\"h2o\"]\n[budget]\nratios=[0.5]\n", {"[workload]"});
  expect_rejected("[workload]\npresets=[\"tiny\"]\n[budget]\nratios=[0.5]\n", {"[policy]"});
  expect_rejected(grid_with("", "", "ratios = [0.5]", "[optimum]\nmodes = []\n"), {"[optimum] modes"});
}

TEST(Grid, RejectsInvalidBudgetsNamingTheKey) {
  expect_rejected(grid_with("", "", "ratios = [0.0]"), {"[budget] ratios", "(0, 1]"});
  expect_rejected(grid_with("", "", "ratios = [-0.5]"), {"[budget] ratios"});
  expect_rejected(grid_with("", "", "ratios = [1.5]"), {"[budget] ratios", "1.5"});
  expect_rejected(grid_with("", "", "sizes = [0]"), {"[budget] sizes", ">= 1"});
  expect_rejected(grid_with("", "", "sizes = [-3]"), {"[budget] sizes"});
  expect_rejected(grid_with("", "", "sizes = [17]"), {"[budget] sizes", "16", "17"});  // tokens = 16
  expect_rejected(grid_with("", "", "sizes = [2.5]"), {"[budget] sizes", "integer"});
  expect_rejected(grid_with("", "", "ratios = [\"half\"]"), {"[budget] ratios", "number"});
  // ratio 1 keeps everything and is valid; size = tokens too.
  EXPECT_EQ(parse_grid(grid_with("", "", "ratios = [1.0]\nsizes = [16]"), "g").size(), 2u);
}

TEST(Grid, RejectsUnknownNamesAndBadValuesNamingTheKey) {
  expect_rejected("[workload]\npresets = [\"llama9\"]\n[policy]\nnames=[\"h2o\"]\n[budget]\nratios=[0.5]\n",
                  {"[workload] presets", "llama9", "tiny"});
  expect_rejected("[workload]\npresets = [\"tiny\"]\n[policy]\nnames=[\"h2o\", \"h3o\"]\n[budget]\nratios=[0.5]\n",
                  {"[policy] names", "h3o", "tova"});
  expect_rejected(grid_with("", "", "ratios = [0.5]", "[optimum]\nmodes = [\"exact\"]\n"), {"[optimum] modes", "exact"});
  expect_rejected(grid_with("layers = [5]", "", "ratios = [0.5]"), {"[workload] layers", "5"});
  expect_rejected(grid_with("seeds = [-1]", "", "ratios = [0.5]"), {"[workload] seeds"});
  expect_rejected(grid_with("[workload.params]\nsink_logit = [-2.0]", "", "ratios = [0.5]"), {"[workload.params]", "sink_logit"});
  expect_rejected(grid_with("[workload.params]\nsinks = [2.5]", "", "ratios = [0.5]"), {"[workload.params] sinks", "integer"});
  // Integral parameters beyond int: rejected with the value, not cast (undefined behaviour).
  expect_rejected(grid_with("[workload.params]\nsinks = [3e9]", "", "ratios = [0.5]"), {"[workload.params] sinks", "3000000000"});
  expect_rejected(grid_with("[workload.params]\ntoken_types = [-3e9]", "", "ratios = [0.5]"), {"token_types", "-3000000000"});
  expect_rejected(grid_with("", "horizon = 0", "ratios = [0.5]"), {"[policy] horizon"});
  // streamingllm keeps 4 sinks: a budget k = 2 cannot hold them (found before any job runs).
  expect_rejected("[workload]\npresets = [\"tiny\"]\ntokens = [16]\n[policy]\nnames=[\"local\", \"streamingllm\"]\n"
                  "[budget]\nsizes=[8, 2]\n", {"[policy] names", "k = 2", "streamingllm", "sinks"});
  expect_rejected("[workload\npresets = 1\n", {"grid.toml", "line 1"});
}

TEST(Grid, TheH2oExampleSpansTheH2oBudgetsAndPolicies) {
  const auto jobs = read_grid(SUBEVICT_SOURCE_DIR "/docs/examples/h2o_budgets.toml");
  std::set<double> ratios;
  std::set<std::string> policies;
  for (const Job& j : jobs) {
    EXPECT_EQ(j.budget_kind, BudgetKind::kRatio);
    EXPECT_EQ(j.optimum, greedy::OptimumMode::kFlow);
    EXPECT_EQ(j.workload.kind, GeneratorKind::kLlmLike);
    ratios.insert(j.budget_value);
    policies.insert(j.policy);
  }
  EXPECT_EQ(ratios, (std::set<double>{0.04, 0.1, 0.2, 0.6}));
  EXPECT_EQ(policies, (std::set<std::string>{"h2o", "local", "streamingllm", "tova", "l2norm", "random"}));
  EXPECT_EQ(jobs.size(), std::size_t(3 * 2 * 6 * 4));
}

TEST(Shard, ParsesIOverN) {
  EXPECT_EQ(parse_shard("0/1"), (std::pair<int, int>{0, 1}));
  EXPECT_EQ(parse_shard("3/8"), (std::pair<int, int>{3, 8}));
  for (const char* bad : {"", "1", "2/2", "-1/2", "1/0", "a/b", "1/2x", "1//2"}) {
    EXPECT_THROW((void)parse_shard(bad), InputError) << bad;
  }
}

RC_GTEST_PROP(Shard, ShardsPartitionTheJobsAndBalanceThem, ()) {
  const int seeds = *rc::gen::inRange(1, 6);
  const int count = *rc::gen::inRange(1, 9);
  std::string list;
  for (int s = 0; s < seeds; ++s) list += (s ? ", " : "") + std::to_string(s);
  const auto jobs = parse_grid("[workload]\npresets=[\"tiny\"]\ntokens=[8]\nseeds=[" + list +
                                   "]\n[policy]\nnames=[\"h2o\",\"local\",\"random\"]\n[budget]\nsizes=[1,2]\n",
                               "g");
  std::multiset<std::string> seen;
  std::size_t smallest = jobs.size(), largest = 0;
  for (int i = 0; i < count; ++i) {
    const auto part = shard_jobs(jobs, i, count);
    smallest = std::min(smallest, part.size());
    largest = std::max(largest, part.size());
    for (std::size_t p = 0; p < part.size(); ++p) {
      seen.insert(part[p].id());
      RC_ASSERT(part[p].id() == jobs[std::size_t(i) + p * std::size_t(count)].id());
    }
  }
  RC_ASSERT(seen.size() == jobs.size());  // the union covers every job ...
  RC_ASSERT(std::set<std::string>(seen.begin(), seen.end()).size() == jobs.size());  // ... once
  RC_ASSERT(largest - smallest <= 1);
}

}  // namespace
}  // namespace subevict::sweep
