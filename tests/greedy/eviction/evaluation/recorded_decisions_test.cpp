// Tests greedy/eviction/evaluation/recorded_decisions.*: decisions files written and read back in
// every layout reproduce the built-in h2o traces exactly and the optimum's schedule reproduces
// OPT; malformed and misfitting files are rejected with messages naming the file, head and step.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <string>
#include <unistd.h>
#include <vector>

#include "core/generator.hpp"
#include "core/input_error.hpp"
#include "core/npy.hpp"
#include "greedy/eviction/evaluation/head_evaluation.hpp"
#include "greedy/eviction/evaluation/recorded_decisions.hpp"
#include "greedy/eviction/process/recorded_schedule.hpp"

namespace subevict::greedy {
namespace {

class Scratch {
 public:
  Scratch() {
    static std::atomic<int> counter{0};
    dir_ = std::filesystem::temp_directory_path() /
           ("subevict_decisions_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    std::filesystem::create_directories(dir_);
  }
  ~Scratch() {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

 private:
  std::filesystem::path dir_;
};

Workload small_workload() {
  WorkloadSpec spec;
  spec.shape = Shape{2, 4, 2, 40, 8};
  spec.seed = 5;
  return generate_workload(spec, 1);
}

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(RecordedDecisions, ExportedH2oSchedulesReadBackReproduceTheTracesExactly) {
  const Workload w = small_workload();
  Scratch scratch;
  const int k = 9;
  ScheduleArray array(2, 2, 40);
  std::vector<HeadEvaluation> cells;
  HeadEvaluationOptions options;
  options.budget = k;
  options.optimum = OptimumMode::kFlow;
  for (int layer = 0; layer < 2; ++layer) {
    for (int kv = 0; kv < 2; ++kv) {
      cells.push_back(evaluate_head(w, layer, kv, std::vector<std::string>{"h2o"}, options));
      array.set(layer, kv, cells.back().traces[0].last_step());
    }
  }
  const std::string file = scratch.path("h2o.npy");
  write_npy(file, TensorView<std::int64_t>{array.shape(), array.steps});
  const DecisionsFile decisions = read_decisions(file);
  EXPECT_EQ(decisions.form, DecisionsForm::kEvictionSteps);
  EXPECT_EQ(decisions.layers, 2);
  EXPECT_EQ(decisions.kv_heads, 2);
  EXPECT_EQ(decisions.tokens, 40);
  check_decisions_fit(decisions, w.shape(), {0, 1});
  EXPECT_EQ(decisions_label(file), "recorded:h2o");
  SimulationOptions sim;
  sim.budget = k;
  for (const HeadEvaluation& cell : cells) {
    const Trace& original = cell.traces[0];
    const RecordedRun run = simulate_recorded(w, cell.layer, cell.kv_head, decisions, "recorded:h2o", sim,
                                              ScheduleAdmission::kExact);
    EXPECT_FALSE(run.admitted.converted);
    EXPECT_EQ(run.trace.policy, "recorded:h2o");
    EXPECT_EQ(run.trace.layer, cell.layer);
    EXPECT_EQ(run.trace.kv_head, cell.kv_head);
    EXPECT_EQ(run.trace.head_retained_mass, original.head_retained_mass);
    EXPECT_EQ(run.trace.head_output_error, original.head_output_error);
    EXPECT_EQ(run.trace.total_retained_mass(), original.total_retained_mass());
    EXPECT_EQ(mean_output_error(run.trace), mean_output_error(original));
    EXPECT_EQ(run.trace.last_step(), original.last_step());
  }

  // The optimum's schedules, exported and read back, reproduce OPT.
  ScheduleArray opt_array(2, 2, 40);
  for (const HeadEvaluation& cell : cells) {
    ASSERT_TRUE(cell.has_optimum);
    opt_array.set(cell.layer, cell.kv_head, cell.optimum.last_step);
  }
  const std::string opt_file = scratch.path("OPT.npy");
  write_npy(opt_file, TensorView<std::int64_t>{opt_array.shape(), opt_array.steps});
  const DecisionsFile opt = read_decisions(opt_file);
  for (const HeadEvaluation& cell : cells) {
    const RecordedRun run =
        simulate_recorded(w, cell.layer, cell.kv_head, opt, "recorded:OPT", sim, ScheduleAdmission::kExact);
    EXPECT_EQ(run.trace.last_step(), cell.optimum.last_step);
    EXPECT_NEAR(run.trace.total_retained_mass(), cell.optimum.value, 1e-12 * 40 * cell.heads);
    EXPECT_LE(cell.traces[0].total_retained_mass(), run.trace.total_retained_mass() + 1e-9);
  }
}

TEST(RecordedDecisions, SharedRecordsAndKeepMasks) {
  const Workload w = small_workload();
  Scratch scratch;
  SimulationOptions sim;
  sim.budget = 6;
  const HeadEvaluation local = [&] {
    HeadEvaluationOptions o;
    o.budget = 6;
    o.optimum = OptimumMode::kNone;
    return evaluate_head(w, 1, 0, std::vector<std::string>{"local"}, o);
  }();
  const std::vector<int> t = local.traces[0].last_step();
  // (n,): one record for every head; local is head-independent.
  const std::vector<std::int64_t> e = eviction_steps(t);
  write_npy(scratch.path("window.npy"), TensorView<std::int64_t>{{40}, e});
  // (n, n) keep mask as bool-valued uint8, and (L, H, n, n).
  const std::vector<std::uint8_t> m = keep_mask(t);
  write_npy(scratch.path("mask.npy"), TensorView<std::uint8_t>{{40, 40}, m});
  std::vector<std::uint8_t> masks;
  for (int r = 0; r < 4; ++r) masks.insert(masks.end(), m.begin(), m.end());
  write_npy(scratch.path("masks.npy"), TensorView<std::uint8_t>{{2, 2, 40, 40}, masks});
  for (const std::string name : {"window.npy", "mask.npy", "masks.npy"}) {
    const DecisionsFile d = read_decisions(scratch.path(name));
    EXPECT_EQ(d.form, name == "window.npy" ? DecisionsForm::kEvictionSteps : DecisionsForm::kKeepMask) << name;
    for (int layer = 0; layer < 2; ++layer) {
      for (int kv = 0; kv < 2; ++kv) {
        const RecordedRun run = simulate_recorded(w, layer, kv, d, "r", sim, ScheduleAdmission::kExact);
        EXPECT_EQ(run.trace.last_step(), t) << name;
        if (layer == 1 && kv == 0) {
          EXPECT_EQ(run.trace.head_retained_mass, local.traces[0].head_retained_mass);
        }
      }
    }
  }
  // Errors name the record: a bad mask entry, with its (layer, KV head) and step.
  masks[std::size_t(3) * 1600 + 7 * 40 + 2] = 2;  // layer 1, KV head 1, S_7 holds token 2 as "2"
  write_npy(scratch.path("bad_masks.npy"), TensorView<std::uint8_t>{{2, 2, 40, 40}, masks});
  const DecisionsFile bad = read_decisions(scratch.path("bad_masks.npy"));
  EXPECT_EQ(error_of([&] { (void)bad.admit(1, 1, 6, 0, ScheduleAdmission::kExact); }),
            scratch.path("bad_masks.npy") +
                " layer 1 KV head 1: step 7: expected keep-mask entries 0 or 1, got entry (7, 2) = 2");
  EXPECT_NO_THROW((void)bad.admit(1, 0, 6, 0, ScheduleAdmission::kExact));
}

TEST(RecordedDecisions, MisfittingAndMalformedFilesAreRejected) {
  const Workload w = small_workload();
  Scratch scratch;
  const auto write = [&](const std::string& name, std::vector<std::size_t> shape, std::int64_t fill) {
    std::size_t count = 1;
    for (std::size_t d : shape) count *= d;
    write_npy(scratch.path(name), TensorView<std::int64_t>{shape, std::vector<std::int64_t>(count, fill)});
    return scratch.path(name);
  };
  // Rank 0 and 5.
  for (const auto& shape : {std::vector<std::size_t>{}, std::vector<std::size_t>{1, 1, 1, 1, 1}}) {
    const std::string f = write("rank.npy", shape, 0);
    EXPECT_NE(error_of([&] { (void)read_decisions(f); }).find(f + ": shape: expected (n,) or (layers, kv_heads, n)"),
              std::string::npos);
  }
  EXPECT_NE(error_of([&] { (void)read_decisions(write("ns.npy", {40, 39}, 0)); })
                .find("shape: expected a keep mask square in its last two axes (n, n), got (40, 39)"),
            std::string::npos);
  // Zero layers or zero KV heads, in schedules and in keep masks: each axis refused on its own.
  for (const auto& shape : {std::vector<std::size_t>{0, 2, 40}, std::vector<std::size_t>{2, 0, 40},
                            std::vector<std::size_t>{0, 2, 8, 8}, std::vector<std::size_t>{2, 0, 8, 8}}) {
    EXPECT_NE(error_of([&] { (void)read_decisions(write("noheads.npy", shape, 0)); })
                  .find("shape: expected at least one layer and one KV head"),
              std::string::npos)
        << shape[0] << " " << shape[1];
  }
  // A keep mask stored as int64 is read if its values fit a byte; 300 does not.
  EXPECT_NE(error_of([&] { (void)read_decisions(write("m300.npy", {4, 4}, 300)); }).find("values: expected integers in [0, 255], got 300 at element 0"),
            std::string::npos);
  // Floats are no schedule.
  write_npy(scratch.path("float.npy"), Tensor<double>{{4}, {4, 4, 4, 4}});
  EXPECT_NE(error_of([&] { (void)read_decisions(scratch.path("float.npy")); }).find("descr: expected an integer or bool dtype"),
            std::string::npos);
  // Fit: n, KV heads, layers.
  const DecisionsFile shortfile = read_decisions(write("short.npy", {39}, 39));
  EXPECT_EQ(error_of([&] { check_decisions_fit(shortfile, w.shape(), {0}); }),
            scratch.path("short.npy") + ": tokens: expected n = 40 (the workload's), got 39");
  const DecisionsFile heads = read_decisions(write("heads.npy", {2, 3, 40}, 40));
  EXPECT_NE(error_of([&] { check_decisions_fit(heads, w.shape(), {0}); }).find("KV heads: expected 2 (the workload's), got 3"),
            std::string::npos);
  const DecisionsFile one_layer = read_decisions(write("layer.npy", {1, 2, 40}, -1));
  EXPECT_NO_THROW(check_decisions_fit(one_layer, w.shape(), {0}));
  EXPECT_NE(error_of([&] { check_decisions_fit(one_layer, w.shape(), {0, 1}); })
                .find("layers: expected a record of every selected layer (layer 1), got 1 layers"),
            std::string::npos);
  // Rows of -1 are "not recorded".
  EXPECT_EQ(error_of([&] { (void)one_layer.admit(0, 1, 40, 0, ScheduleAdmission::kExact); }),
            scratch.path("layer.npy") +
                " layer 0 KV head 1: record: expected a recorded schedule, got every entry -1 (not recorded: the "
                "exporting run did not simulate this head)");
  EXPECT_NE(error_of([&] { (void)one_layer.admit(1, 0, 40, 0, ScheduleAdmission::kExact); })
                .find("layer 1 KV head 0: expected a record of the file's 1 layers and 2 KV heads"),
            std::string::npos);
  // A shared never-evicting record at k = 6: over budget at step 6, named with the file alone.
  const DecisionsFile keep_all = read_decisions(write("all.npy", {40}, 40));
  EXPECT_EQ(error_of([&] { (void)keep_all.admit(1, 1, 6, 0, ScheduleAdmission::kExact); }),
            scratch.path("all.npy") +
                ": step 6: expected a cache of at most k = 6 tokens (the budget), got 7 tokens after step 6 (nothing "
                "evicted)");
  // ScheduleArray guards its indices.
  ScheduleArray array(1, 1, 3);
  EXPECT_THROW(array.set(1, 0, {2, 2, 2}), std::invalid_argument);
  EXPECT_THROW(array.set(0, 0, {2, 2}), std::invalid_argument);
  array.set(0, 0, {2, 0, 2});
  EXPECT_EQ(array.steps, (std::vector<std::int64_t>{3, 1, 3}));
}

}  // namespace
}  // namespace subevict::greedy
