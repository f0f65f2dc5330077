#include "greedy/eviction/evaluation/recorded_decisions.hpp"

#include <algorithm>
#include <filesystem>
#include <limits>
#include <span>
#include <stdexcept>

#include "core/input_error.hpp"
#include "core/mapped_file.hpp"
#include "core/npy.hpp"
#include "greedy/eviction/policies/recorded_policy.hpp"
#include "greedy/eviction/process/head_group.hpp"

namespace subevict::greedy {
namespace {

std::string shape_text(const std::vector<std::size_t>& shape) {
  std::string text = "(";
  for (std::size_t a = 0; a < shape.size(); ++a) text += (a ? ", " : "") + std::to_string(shape[a]);
  return text + (shape.size() == 1 ? ",)" : ")");
}

int checked_int(std::size_t value, const std::string& path, const std::string& shape) {
  if (value > std::size_t(std::numeric_limits<int>::max() - 1)) {
    throw InputError(path, "shape", "dimensions below 2^31 - 1", shape);
  }
  return int(value);
}

}  // namespace

std::string DecisionsFile::record_name(int layer, int kv_head) const {
  if (layers == 0) return path;
  return path + " layer " + std::to_string(layer) + " KV head " + std::to_string(kv_head);
}

AdmittedSchedule DecisionsFile::admit(int layer, int kv_head, int budget, int prefill,
                                      ScheduleAdmission admission, int window) const {
  const std::string name = record_name(layer, kv_head);
  std::size_t record = 0;
  if (layers > 0) {
    if (layer < 0 || layer >= layers || kv_head < 0 || kv_head >= kv_heads) {
      throw InputError(path, "layer " + std::to_string(layer) + " KV head " + std::to_string(kv_head),
                       "a record of the file's " + std::to_string(layers) + " layers and " +
                           std::to_string(kv_heads) + " KV heads",
                       "none");
    }
    record = std::size_t(layer) * std::size_t(kv_heads) + std::size_t(kv_head);
  }
  const std::size_t n = std::size_t(tokens);
  if (form == DecisionsForm::kEvictionSteps) {
    const std::span<const std::int64_t> row(steps.data() + record * n, n);
    if (layers > 0 && n > 0 && std::all_of(row.begin(), row.end(), [](std::int64_t e) { return e == -1; })) {
      throw InputError(name, "record", "a recorded schedule",
                       "every entry -1 (not recorded: the exporting run did not simulate this head)");
    }
    return admit_eviction_steps(row, budget, prefill, admission, name, window);
  }
  return admit_keep_mask(std::span<const std::uint8_t>(mask.data() + record * n * n, n * n), tokens, budget,
                         prefill, admission, name, window);
}

DecisionsFile decisions_layout(const std::string& name, const std::vector<std::size_t>& shape) {
  const std::string shown = shape_text(shape);
  DecisionsFile out;
  out.path = name;
  if (shape.empty() || shape.size() > 4) {
    throw InputError(name, "shape",
                     "(n,) or (layers, kv_heads, n) eviction steps, or (n, n) or (layers, kv_heads, n, n) keep "
                     "masks",
                     shown);
  }
  const bool mask = shape.size() % 2 == 0;
  out.form = mask ? DecisionsForm::kKeepMask : DecisionsForm::kEvictionSteps;
  if (shape.size() >= 3) {
    out.layers = checked_int(shape[0], name, shown);
    out.kv_heads = checked_int(shape[1], name, shown);
    if (out.layers == 0 || out.kv_heads == 0) {
      throw InputError(name, "shape", "at least one layer and one KV head", shown);
    }
  }
  out.tokens = checked_int(shape.back(), name, shown);
  if (mask && shape[shape.size() - 2] != shape.back()) {
    throw InputError(name, "shape", "a keep mask square in its last two axes (n, n)", shown);
  }
  return out;
}

DecisionsFile read_decisions(const std::string& path, const ReadOptions& options) {
  const MappedFile file(path, options.max_bytes);
  DecisionsFile out = decisions_layout(path, npy_shape(file.bytes(), path));
  if (out.form == DecisionsForm::kKeepMask) {
    out.mask = parse_npy_integers<std::uint8_t>(file.bytes(), path, options).data;
  } else {
    out.steps = parse_npy_integers<std::int64_t>(file.bytes(), path, options).data;
  }
  return out;
}

void check_decisions_fit(const DecisionsFile& file, const Shape& shape, const std::vector<int>& layers) {
  if (file.tokens != shape.tokens) {
    throw InputError(file.path, "tokens", "n = " + std::to_string(shape.tokens) + " (the workload's)",
                     std::to_string(file.tokens));
  }
  if (file.layers == 0) return;
  if (file.kv_heads != shape.kv_heads) {
    throw InputError(file.path, "KV heads", std::to_string(shape.kv_heads) + " (the workload's)",
                     std::to_string(file.kv_heads));
  }
  for (int layer : layers) {
    if (layer >= file.layers) {
      throw InputError(file.path, "layers",
                       "a record of every selected layer (layer " + std::to_string(layer) + ")",
                       std::to_string(file.layers) + " layers");
    }
  }
}

std::string decisions_label(const std::string& path) {
  std::filesystem::path p(path);
  std::string stem = p.filename().string();
  if (stem.size() > 4 && stem.ends_with(".npy")) stem.resize(stem.size() - 4);
  return "recorded:" + stem;
}

RecordedRun simulate_recorded(const Workload& workload, int layer, int kv_head, const DecisionsFile& file,
                              const std::string& label, const SimulationOptions& options,
                              ScheduleAdmission admission) {
  RecordedRun run;
  run.admitted = file.admit(layer, kv_head, options.budget, options.prefill, admission, workload.window(layer));
  RecordedPolicy policy(label, run.admitted.last_step, file.record_name(layer, kv_head));
  run.trace = simulate(head_group(workload, layer, kv_head), policy, options);
  return run;
}

ScheduleArray::ScheduleArray(int layers_, int kv_heads_, int tokens_)
    : layers(layers_), kv_heads(kv_heads_), tokens(tokens_) {
  if (layers < 0 || kv_heads < 0 || tokens < 0) throw std::invalid_argument("ScheduleArray: negative size");
  steps.assign(std::size_t(layers) * std::size_t(kv_heads) * std::size_t(tokens), -1);
}

void ScheduleArray::set(int layer, int kv_head, const std::vector<int>& last_step) {
  if (layer < 0 || layer >= layers || kv_head < 0 || kv_head >= kv_heads || int(last_step.size()) != tokens) {
    throw std::invalid_argument("ScheduleArray::set: (layer " + std::to_string(layer) + ", KV head " +
                                std::to_string(kv_head) + ", " + std::to_string(last_step.size()) +
                                " tokens) does not fit the array");
  }
  const std::vector<std::int64_t> e = eviction_steps(last_step);
  std::copy(e.begin(), e.end(),
            steps.begin() + std::ptrdiff_t((std::size_t(layer) * std::size_t(kv_heads) + std::size_t(kv_head)) *
                                           std::size_t(tokens)));
}

std::vector<std::size_t> ScheduleArray::shape() const {
  return {std::size_t(layers), std::size_t(kv_heads), std::size_t(tokens)};
}

}  // namespace subevict::greedy
