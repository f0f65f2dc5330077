#pragma once
/// \file
/// Decisions files: recorded eviction schedules of one or every (layer, KV head) of a workload,
/// as .npy (docs/eviction.md "Recorded decisions"), evaluated through the simulator like a
/// built-in policy; and the export of any schedule in the same format.
///
/// The array's rank says what it holds:
/// - rank 1, (n,): eviction steps (recorded_schedule.hpp), one schedule for EVERY (layer, KV head)
///   evaluated (a head-independent rule such as a fixed window);
/// - rank 3, (L, H, n): eviction steps of layer l, KV head h at [l, h]; H = the workload's KV heads
///   and L > every layer evaluated (a file may cover more layers than a run selects). A row whose
///   entries are all −1 is "not recorded" (the export writes it for heads not simulated); reading it
///   for an evaluated head is an error;
/// - rank 2, (n, n) / rank 4, (L, H, n, n): keep masks, row i = S_i, with the same rules.
/// Eviction steps: any integer dtype; keep masks: bool or uint8 (entries 0/1).

#include <cstdint>
#include <string>
#include <vector>

#include "core/read_options.hpp"
#include "core/shape.hpp"
#include "core/workload.hpp"
#include "greedy/eviction/evaluation/simulator.hpp"
#include "greedy/eviction/process/recorded_schedule.hpp"

namespace subevict::greedy {

/// Which form a decisions file holds.
enum class DecisionsForm { kEvictionSteps, kKeepMask };

/// A decisions file held in memory.
struct DecisionsFile {
  std::string path;
  DecisionsForm form = DecisionsForm::kEvictionSteps;
  int layers = 0;    ///< L, or 0 when the file holds one record for every head (rank 1 or 2)
  int kv_heads = 0;  ///< H, or 0 likewise
  int tokens = 0;    ///< n
  std::vector<std::int64_t> steps;  ///< eviction steps, C order (form kEvictionSteps)
  std::vector<std::uint8_t> mask;   ///< keep masks, C order (form kKeepMask)

  /// "PATH" for a shared record, "PATH layer l KV head h" otherwise (how errors name a record).
  [[nodiscard]] std::string record_name(int layer, int kv_head) const;

  /// Admits the record of (layer, kv_head) at budget k and prefill P on a layer whose sliding
  /// window is `window` keys (0: global; recorded_schedule.hpp states the window's rules).
  /// Throws InputError(record_name, ...) for a layer or head the file does not cover, a row that
  /// is not recorded (all −1), and every rule the record breaks (naming the first bad step).
  [[nodiscard]] AdmittedSchedule admit(int layer, int kv_head, int budget, int prefill,
                                       ScheduleAdmission admission, int window = 0) const;
};

/// The layout (form, L, H, n) of a decisions array of `shape`, its values not yet filled in; `name`
/// becomes DecisionsFile::path (how errors name the record). Throws InputError(name, "shape", ...)
/// for a rank other than 1 to 4, zero layers or KV heads, a keep mask that is not square in its
/// last two axes, and sizes beyond int. The one shape rule of read_decisions and of arrays handed
/// in from elsewhere (the Python package).
[[nodiscard]] DecisionsFile decisions_layout(const std::string& name, const std::vector<std::size_t>& shape);

/// Reads a decisions file (.npy, any integer dtype for eviction steps, bool/uint8 for keep masks).
/// Throws InputError(path, ...) for the container (core/npy.hpp parse_npy_integers), a rank other
/// than 1 to 4, a keep mask that is not square in its last two axes or not bool/uint8 valued, and
/// sizes beyond int. O(file size).
[[nodiscard]] DecisionsFile read_decisions(const std::string& path, const ReadOptions& options = {});

/// Throws InputError(file.path, ...) unless the file fits `shape` for the selected `layers`:
/// n = shape.tokens, and for per-head files H = shape.kv_heads and L > every selected layer.
void check_decisions_fit(const DecisionsFile& file, const Shape& shape, const std::vector<int>& layers);

/// The label of a decisions file's trace: "recorded:STEM" (the file name without directory and
/// ".npy").
[[nodiscard]] std::string decisions_label(const std::string& path);

/// One recorded run: the admitted schedule and the simulator's trace of its replay.
struct RecordedRun {
  AdmittedSchedule admitted;
  Trace trace;
};

/// Admits the record of (layer, kv_head) at options.budget, options.prefill and the layer's window
/// (Workload::window), then simulates it
/// with RecordedPolicy (trace.policy = `label`). Throws as DecisionsFile::admit and simulate. Cost:
/// one simulation (simulator.hpp).
[[nodiscard]] RecordedRun simulate_recorded(const Workload& workload, int layer, int kv_head,
                                            const DecisionsFile& file, const std::string& label,
                                            const SimulationOptions& options, ScheduleAdmission admission);

/// Eviction steps of a set of heads in the decisions-file layout (L, H, n), int64, ready for
/// write_npy / npy_file_bytes: rows of heads never `set` stay −1 ("not recorded").
struct ScheduleArray {
  int layers = 0, kv_heads = 0, tokens = 0;
  std::vector<std::int64_t> steps;  ///< L * H * n entries, C order

  /// An array of −1 for L layers, H KV heads and n tokens (all ≥ 0).
  ScheduleArray(int layers, int kv_heads, int tokens);
  /// Stores eviction_steps(last_step) at [layer, kv_head]. Throws std::invalid_argument for an
  /// index out of range, a schedule of another length or t_j out of range.
  void set(int layer, int kv_head, const std::vector<int>& last_step);
  /// The shape {L, H, n}.
  [[nodiscard]] std::vector<std::size_t> shape() const;
};

}  // namespace subevict::greedy
