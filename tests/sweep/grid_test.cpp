// Tests sweep/grid.hpp: grid parsing and validation, the cartesian product, job ids, sharding.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <set>
#include <string>

#include "core/input_error.hpp"
#include "core/tolerance.hpp"
#include "greedy/eviction/evaluation/head_evaluation.hpp"
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

TEST(Grid, PolicyNamesTakeParametersAndJobsCarryTheLabel) {
  const auto jobs = parse_grid("[workload]\npresets = [\"tiny\"]\ntokens = [16]\n[policy]\nnames = [\"h2o\", "
                               "\"h2o:recent=0.75,heavy=0.25\", \"streamingllm:sinks=1\"]\n[budget]\nsizes = [4]\n",
                               "g");
  std::set<std::string> labels, ids;
  for (const Job& j : jobs) {
    labels.insert(j.policy);
    ids.insert(j.id());
  }
  EXPECT_EQ(labels, (std::set<std::string>{"h2o", "h2o:heavy=0.25,recent=0.75", "streamingllm:sinks=1"}));
  EXPECT_EQ(ids.size(), 3u);
  // Every labelled job runs: its label parses back to the policy with its parameters.
  for (const Job& j : jobs) (void)run_job(j);
  expect_rejected(grid_with("", "", "sizes = [4]").replace(grid_with("", "", "sizes = [4]").find("\"h2o\""), 5,
                                                           "\"h2o:sink=1\""),
                  {"[policy] names", "unknown key 'sink'", "heavy, recent"});
  expect_rejected(grid_with("", "", "sizes = [4]").replace(grid_with("", "", "sizes = [4]").find("\"h2o\""), 5,
                                                           "\"h2o:heavy=3,recent=3\""),
                  {"[policy] names", "k = 4", "h2o:heavy=3,recent=3"});
}

/// A grid of llama3-8b (32 layers, 8 KV heads) at 16 tokens with the given [workload] layers.
std::string layers_grid(const std::string& layers) {
  return "[workload]\npresets = [\"llama3-8b\"]\ntokens = [16]\nlayers = " + layers +
         "\n[policy]\nnames = [\"h2o\"]\n[budget]\nsizes = [4]\n[optimum]\nmodes = [\"none\"]\n";
}

/// The mean over the KV heads of `layers` of h2o's mean retained mass Σ_i r_i / n on `spec`,
/// evaluated head by head (the quantity run_job reports as mean_retained_mass).
double h2o_mean_retained_mass(const WorkloadSpec& spec, const std::vector<int>& layers, int budget) {
  const Workload w = generate_workload(spec, 1);
  greedy::HeadEvaluationOptions options;
  options.budget = budget;
  options.optimum = greedy::OptimumMode::kNone;
  double sum = 0;
  int groups = 0;
  for (int layer : layers) {
    for (int kv = 0; kv < w.shape().kv_heads; ++kv) {
      const greedy::HeadEvaluation e =
          greedy::evaluate_head(w, layer, kv, {greedy::parse_policy_spec("h2o", "test", "policy", 16)}, options);
      sum += e.traces.front().total_retained_mass() / e.heads / w.shape().tokens;
      ++groups;
    }
  }
  return sum / groups;
}

TEST(Grid, AStringOfLayersIsALayerSetAndAJobRunsExactlyThoseLayers) {
  const auto jobs = parse_grid(layers_grid("\"1,3\""), "grid.toml");
  ASSERT_EQ(jobs.size(), 1u);
  const Job& job = jobs[0];
  EXPECT_EQ(job.workload.shape.layers, 4);  // layers 0-3 are generated ...
  EXPECT_EQ(job.layers, (std::vector<int>{1, 3}));  // ... and 1 and 3 are run
  EXPECT_NE(job.canonical().find(";layers=4;layer_set=1,3;"), std::string::npos) << job.canonical();
  const JobResult r = run_job(job);
  EXPECT_EQ(r.groups, 2 * 8);  // two layers x 8 KV heads
  const double expected = h2o_mean_retained_mass(job.workload, {1, 3}, 4);
  EXPECT_TRUE(near(r.mean_retained_mass, expected, Tol<double>::sum(16))) << r.mean_retained_mass << " vs " << expected;
  // The layers matter: the first two layers, or all four, give other means.
  for (const std::vector<int>& other : {std::vector<int>{0, 1}, std::vector<int>{0, 1, 2, 3}}) {
    EXPECT_FALSE(near(h2o_mean_retained_mass(job.workload, other, 4), expected, Tol<double>::sum(16)));
  }
}

TEST(Grid, AnIntegerOfLayersStaysACountAndPrefixSetsAreTheSameJob) {
  const auto count = parse_grid(layers_grid("2"), "g");
  ASSERT_EQ(count.size(), 1u);
  EXPECT_EQ(count[0].workload.shape.layers, 2);
  EXPECT_TRUE(count[0].layers.empty());
  EXPECT_EQ(count[0].canonical().find("layer_set"), std::string::npos);
  EXPECT_EQ(run_job(count[0]).groups, 2 * 8);
  // "0-1" is the first two layers, the count 2: one job, one id. "all" is the count 0.
  const auto mixed = parse_grid(layers_grid("[2, \"0-1\", \"1\", \"all\", 0]"), "g");
  ASSERT_EQ(mixed.size(), 3u);
  std::set<std::string> ids;
  for (const Job& j : mixed) ids.insert(j.id());
  EXPECT_TRUE(ids.count(count[0].id()));
  const auto all = parse_grid(layers_grid("0"), "g");
  EXPECT_EQ(all[0].workload.shape.layers, 32);
  EXPECT_TRUE(ids.count(all[0].id()));
  const auto one = parse_grid(layers_grid("\"1\""), "g");
  EXPECT_EQ(one[0].workload.shape.layers, 2);
  EXPECT_EQ(one[0].layers, (std::vector<int>{1}));
  EXPECT_TRUE(ids.count(one[0].id()));
}

TEST(Grid, RejectsBadLayerSetsNamingTheFileTheKeyAndTheValue) {
  expect_rejected(layers_grid("\"1,32\""), {"grid.toml", "[workload] layers = \"1,32\"", "layers 0-31", "got 32"});
  expect_rejected(layers_grid("\"1,3,1\""), {"grid.toml", "[workload] layers = \"1,3,1\"", "1 (listed twice"});
  expect_rejected(layers_grid("\"3-1\""), {"grid.toml", "[workload] layers = \"3-1\"", "3-1 (reversed)"});
  expect_rejected(layers_grid("\"\""), {"grid.toml", "[workload] layers", "empty"});
  expect_rejected(layers_grid("\"-1\""), {"grid.toml", "[workload] layers = \"-1\""});
  expect_rejected(layers_grid("[1.5]"), {"grid.toml", "[workload] layers", "a layer set"});
  // The set is read against every preset's layers: 3 is beyond tiny's two.
  expect_rejected("[workload]\npresets = [\"llama3-8b\", \"tiny\"]\ntokens = [16]\nlayers = \"1,3\"\n[policy]\n"
                  "names = [\"h2o\"]\n[budget]\nsizes = [4]\n",
                  {"grid.toml", "[workload] layers = \"1,3\" for preset tiny", "layers 0-1", "got 3"});
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
