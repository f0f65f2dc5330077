// Workloads: the Workload class with zero-copy NumPy views of Q, K and V, generation from presets
// and profiles, .safetensors/.npy input and output, exact and tracked attention, and the
// statistics of `subevict workload inspect`.
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cmath>
#include <optional>

#include "bindings.hpp"
#include "core/attention.hpp"
#include "core/generator.hpp"
#include "core/generator_profile.hpp"
#include "core/input_error.hpp"
#include "core/presets.hpp"
#include "core/workload.hpp"
#include "core/workload_io.hpp"
#include "core/workload_stats.hpp"

namespace subevict::python {

using namespace nb::literals;

namespace {

nb::dict shape_dict(const Shape& s) {
  nb::dict d;
  d["layers"] = s.layers;
  d["q_heads"] = s.q_heads;
  d["kv_heads"] = s.kv_heads;
  d["tokens"] = s.tokens;
  d["head_dim"] = s.head_dim;
  return d;
}

/// A read-only [layers, heads, tokens, head_dim] view of one tensor, keeping `w` alive.
nb::ndarray<nb::numpy, const float> tensor_view(const Workload& w, const std::vector<float>& data, int heads) {
  const Shape& s = w.shape();
  const std::size_t shape[4] = {std::size_t(s.layers), std::size_t(heads), std::size_t(s.tokens),
                                std::size_t(s.head_dim)};
  return nb::ndarray<nb::numpy, const float>(data.data(), 4, shape, nb::find(&w));
}

/// Copies a 4-D float32 tensor argument into `out`, checking its shape against `expected` (entries
/// < 0 are free and set from the array).
void read_tensor(const AnyArray& a, const char* name, std::size_t expected[4], std::vector<float>& out) {
  const float* data = checked_data<float>(a, 4, "Workload", name);
  for (int i = 0; i < 4; ++i) {
    if (a.shape(std::size_t(i)) == 0) {
      throw InputError("Workload", name, "every dimension >= 1", "shape " + shape_text(a));
    }
    if (expected[i] != std::size_t(-1) && expected[i] != a.shape(std::size_t(i))) {
      throw InputError("Workload", name, "shape [layers, heads, tokens, head_dim] agreeing with q's " +
                                             std::string("(layers, tokens and head_dim equal; kv_heads dividing q_heads)"),
                       shape_text(a));
    }
    expected[i] = a.shape(std::size_t(i));
  }
  out.assign(data, data + a.size());
}

Workload make_workload(const AnyArray& q, const AnyArray& k, const AnyArray& v, std::optional<double> score_scale,
                       const std::map<std::string, std::string>& metadata, std::optional<std::vector<int>> windows) {
  std::size_t qs[4] = {std::size_t(-1), std::size_t(-1), std::size_t(-1), std::size_t(-1)};
  std::vector<float> qd, kd, vd;
  read_tensor(q, "q", qs, qd);
  std::size_t ks[4] = {qs[0], std::size_t(-1), qs[2], qs[3]};
  read_tensor(k, "k", ks, kd);
  std::size_t vs[4] = {ks[0], ks[1], ks[2], ks[3]};
  read_tensor(v, "v", vs, vd);
  Shape shape;
  const auto fits = [](std::size_t x) { return x > 0 && x <= std::size_t(std::numeric_limits<int>::max()); };
  for (std::size_t x : {qs[0], qs[1], ks[1], qs[2], qs[3]}) {
    if (!fits(x)) throw InputError("Workload", "shape", "every dimension in [1, 2^31 - 1]", shape_text(q));
  }
  shape.layers = int(qs[0]);
  shape.q_heads = int(qs[1]);
  shape.kv_heads = int(ks[1]);
  shape.tokens = int(qs[2]);
  shape.head_dim = int(qs[3]);
  if (shape.q_heads % shape.kv_heads != 0) {
    throw InputError("Workload", "k", "kv_heads dividing q_heads = " + std::to_string(shape.q_heads),
                     std::to_string(shape.kv_heads));
  }
  try {
    shape.validate();
  } catch (const std::invalid_argument& e) {
    throw InputError("Workload", "shape", "a valid shape", e.what());
  }
  Workload w(shape);
  w.q_data() = std::move(qd);
  w.k_data() = std::move(kd);
  w.v_data() = std::move(vd);
  if (score_scale) {
    if (!(std::isfinite(*score_scale) && *score_scale > 0)) {
      throw InputError("Workload", "score_scale", "a finite number > 0", std::to_string(*score_scale));
    }
    w.set_score_scale(*score_scale);
  }
  if (windows) {
    try {
      w.set_windows(*windows);
    } catch (const std::invalid_argument& e) {
      throw InputError("Workload", "windows", "one window >= 0 per layer (0: global)", e.what());
    }
  }
  w.metadata = metadata;
  require_finite(w, "Workload", "(eviction and attention need finite Q, K, V)");
  return w;
}

void check_layer_head(const Workload& w, int layer, int head, int heads, const char* what) {
  if (layer < 0 || layer >= w.shape().layers) {
    throw InputError("attention", "layer", "0 <= layer < " + std::to_string(w.shape().layers), std::to_string(layer));
  }
  if (head < 0 || head >= heads) {
    throw InputError("attention", what, "0 <= head < " + std::to_string(heads), std::to_string(head));
  }
}

nb::dict stats_dict(const HeadStatistics& s) {
  nb::dict d;
  d["layer"] = s.layer;
  d["q_head"] = s.q_head;
  d["kv_head"] = s.kv_head;
  d["window"] = s.window;
  for_each_statistic([&](const char* name, double HeadStatistics::*member) { d[name] = s.*member; });
  return d;
}

}  // namespace

void bind_workload(nb::module_& m) {
  nb::class_<Workload>(m, "Workload",
                       "Q, K and V of every layer (float32, [layer][head][token][dim]), the input of every "
                       "experiment. Made by generate(), read_workload() or Workload(q, k, v).")
      .def(
          "__init__",
          [](Workload* self, const AnyArray& q, const AnyArray& k, const AnyArray& v, std::optional<double> scale,
             std::optional<std::map<std::string, std::string>> metadata, std::optional<std::vector<int>> windows) {
            new (self) Workload(
                make_workload(q, k, v, scale, metadata.value_or(std::map<std::string, std::string>{}), windows));
          },
          "q"_a, "k"_a, "v"_a, "score_scale"_a = nb::none(), "metadata"_a = nb::none(), "windows"_a = nb::none(),
          "A workload from arrays (copied): q float32 [layers, q_heads, tokens, head_dim], k and v float32 "
          "[layers, kv_heads, tokens, head_dim], C-contiguous and finite, kv_heads dividing q_heads (query heads "
          "grouped contiguously per KV head). score_scale: s_ij = scale <q_i, k_j> (default 1/sqrt(head_dim)). "
          "windows: each layer's attention mask, 0 global, W a sliding window of W keys (default: all global).")
      .def_prop_ro("shape", [](const Workload& w) { return shape_dict(w.shape()); },
                   "{'layers', 'q_heads', 'kv_heads', 'tokens', 'head_dim'} as a dict.")
      .def_prop_ro("layers", [](const Workload& w) { return w.shape().layers; })
      .def_prop_ro("q_heads", [](const Workload& w) { return w.shape().q_heads; })
      .def_prop_ro("kv_heads", [](const Workload& w) { return w.shape().kv_heads; })
      .def_prop_ro("tokens", [](const Workload& w) { return w.shape().tokens; })
      .def_prop_ro("head_dim", [](const Workload& w) { return w.shape().head_dim; })
      .def_prop_ro("group_size", [](const Workload& w) { return w.shape().group_size(); },
                   "Query heads per KV head (g).")
      .def_prop_ro("q", [](const Workload& w) { return tensor_view(w, w.q_data(), w.shape().q_heads); },
                   "Read-only view [layers, q_heads, tokens, head_dim] (no copy; keeps the workload alive).")
      .def_prop_ro("k", [](const Workload& w) { return tensor_view(w, w.k_data(), w.shape().kv_heads); },
                   "Read-only view [layers, kv_heads, tokens, head_dim] (no copy).")
      .def_prop_ro("v", [](const Workload& w) { return tensor_view(w, w.v_data(), w.shape().kv_heads); },
                   "Read-only view [layers, kv_heads, tokens, head_dim] (no copy).")
      .def_prop_ro("score_scale", &Workload::score_scale, "The softmax scale: s_ij = score_scale <q_i, k_j>.")
      .def_prop_ro("windows", &Workload::windows,
                   "Each layer's attention mask: 0 global causal, W a sliding window of W keys (query i sees "
                   "keys i - W < j <= i).")
      .def_prop_ro("metadata", [](const Workload& w) { return w.metadata; },
                   "Provenance (generator, preset, seed, source model) as a dict of strings (a copy).")
      .def("write", [](const Workload& w, const std::string& path) {
            nb::gil_scoped_release release;
            write_workload(path, w);
          }, "path"_a,
          "Writes FILE.safetensors (float32, metadata and score scale kept) or, for any other path, a directory "
          "of q.npy, k.npy, v.npy (the scale must then be the default).")
      .def("__eq__", [](const Workload& a, const Workload& b) { return a == b; })
      .def("__repr__", [](const Workload& w) { return "subevict.Workload(" + to_string(w.shape()) + ")"; });

  m.def(
      "generate",
      [](const std::string& preset, int tokens, std::optional<int> layers, std::uint64_t seed,
         std::optional<std::string> profile, const std::string& generator, bool uniform,
         std::optional<std::map<std::string, double>> params, int threads) {
        if (threads < 0) throw InputError("generate", "threads", "an integer >= 0", std::to_string(threads));
        WorkloadSpec spec =
            profile ? spec_from_profile(read_profile(*profile), tokens, layers.value_or(0), seed)
                    : spec_from_preset(preset, tokens, layers.value_or(1), seed,
                                       uniform ? PresetParams::kUniform : PresetParams::kProfile);
        spec.kind = parse_generator_kind(generator);
        if (spec.kind == GeneratorKind::kGaussian) {
          spec.layer_params.clear();
          spec.profile.clear();
        }
        if (params) {
          std::vector<LlmLikeParams*> targets = {&spec.llm};
          for (LlmLikeParams& layer : spec.layer_params) targets.push_back(&layer);
          for (const auto& [key, value] : *params) {
            bool known = false;
            std::string names;
            for (LlmLikeParams* target : targets) {
              for_each_llm_param(*target, [&](const char* name, auto& field, const char*) {
                if (target == targets.front()) names += (names.empty() ? "" : ", ") + std::string(name);
                if (key == name) {
                  using Field = std::decay_t<decltype(field)>;
                  if (std::is_integral_v<Field> && value != std::floor(value)) {
                    throw InputError("generate", "params[" + key + "]", "an integer", std::to_string(value));
                  }
                  field = Field(value);
                  known = true;
                }
              });
            }
            if (!known) throw InputError("generate", "params", "LLM-like parameter names (" + names + ")", key);
          }
        }
        nb::gil_scoped_release release;
        return generate_workload(spec, threads);
      },
      "preset"_a = "llama2-7b", "tokens"_a = 0, "layers"_a = nb::none(), "seed"_a = 0, "profile"_a = nb::none(),
      "generator"_a = "llm-like", "uniform"_a = false, "params"_a = nb::none(), "threads"_a = 0,
      "Generates a workload, bit-identical to `subevict workload generate` with the same arguments: a preset's "
      "shape (presets()) with its per-layer profile (uniform=True: the defaults in every layer) or a profile FILE.toml "
      "(tokens required); tokens 0: the preset's default; layers: the model's first N layers (default 1 for a "
      "preset, every layer of a profile); generator 'llm-like' or 'gaussian'; params: LLM-like parameters "
      "replacing the profile's value in every layer (e.g. {'sink_logit': 0}).");

  m.def(
      "read_workload",
      [](const std::string& path, bool allow_nonfinite) {
        ReadOptions options;
        options.allow_nonfinite = allow_nonfinite;
        nb::gil_scoped_release release;
        return read_workload(path, options);
      },
      "path"_a, "allow_nonfinite"_a = false,
      "Reads FILE.safetensors (F32, F16, BF16 or F64 tensors layers.{l}.q/k/v) or a directory of q.npy, k.npy, "
      "v.npy. NaN/Inf are refused unless allow_nonfinite.");
  m.def(
      "write_workload",
      [](const std::string& path, const Workload& w) {
        nb::gil_scoped_release release;
        write_workload(path, w);
      },
      "path"_a, "workload"_a, "Workload.write(path).");

  m.def(
      "presets",
      []() {
        nb::list out;
        for (const Preset& p : presets()) {
          nb::dict d;
          d["name"] = p.name;
          d["layers"] = p.layers;
          d["q_heads"] = p.q_heads;
          d["kv_heads"] = p.kv_heads;
          d["head_dim"] = p.head_dim;
          d["rope_base"] = p.rope_base;
          d["default_tokens"] = p.default_tokens;
          d["note"] = p.note;
          out.append(d);
        }
        return out;
      },
      "The named model shapes generate() accepts, as dicts.");

  m.def(
      "attention",
      [](const Workload& w, int layer, int q_head) {
        check_layer_head(w, layer, q_head, w.shape().q_heads, "q_head");
        Eigen::MatrixXd a;
        {
          nb::gil_scoped_release release;
          a = causal_attention(w.q(layer, q_head), w.k(layer, w.shape().kv_head_of(q_head)), w.score_scale(),
                               w.window(layer));
        }
        return matrix_array(a);
      },
      "workload"_a, "layer"_a, "q_head"_a,
      "The exact causal attention matrix A (n x n float64, row i the softmax of s_ij over j <= i, zeros above the "
      "diagonal, and before key i - W + 1 on a layer with a sliding window of W keys) of one query head. Memory "
      "8 n^2 bytes.");

  m.def(
      "tracked_attention",
      [](const Workload& w, int layer, int q_head, int step, const AnyArray& members) {
        check_layer_head(w, layer, q_head, w.shape().q_heads, "q_head");
        if (step < 0 || step >= w.shape().tokens) {
          throw InputError("tracked_attention", "step", "0 <= step < " + std::to_string(w.shape().tokens),
                           std::to_string(step));
        }
        const std::int64_t* t = checked_data<std::int64_t>(members, 1, "tracked_attention", "members");
        std::vector<bool> in_set(std::size_t(step) + 1, false);
        const int first = first_visible_key(step, w.window(layer));
        for (std::size_t e = 0; e < members.shape(0); ++e) {
          if (t[e] < first || t[e] > step) {
            throw InputError("tracked_attention", "members",
                             "tokens in [" + std::to_string(first) + ", step = " + std::to_string(step) + "]" +
                                 (first > 0 ? " (the layer's sliding window)" : ""),
                             std::to_string(t[e]));
          }
          in_set[std::size_t(t[e])] = true;
        }
        if (members.shape(0) == 0) throw InputError("tracked_attention", "members", "at least one token");
        const Eigen::VectorXd logits =
            causal_logits(w.q(layer, q_head), w.k(layer, w.shape().kv_head_of(q_head)), step, w.score_scale());
        return owned_array(tracked_attention(logits, in_set));
      },
      "workload"_a, "layer"_a, "q_head"_a, "step"_a, "members"_a,
      "The tracked attention of query `step` over the cached tokens `members` (int64): softmax restricted to them, "
      "exactly 0 on the other tokens 0..step (length step + 1, float64).");

  m.def(
      "inspect",
      [](const Workload& w, std::optional<std::vector<int>> layers, std::optional<std::vector<int>> q_heads,
         int threads) {
        InspectOptions options;
        options.layers = layers.value_or(std::vector<int>{});
        options.q_heads = q_heads.value_or(std::vector<int>{});
        options.threads = threads;
        std::vector<HeadStatistics> heads;
        {
          nb::gil_scoped_release release;
          heads = inspect_workload(w, options);
        }
        nb::list per_head;
        for (const HeadStatistics& s : heads) per_head.append(stats_dict(s));
        nb::list per_layer;
        for (const LayerStatistics& l : per_layer_statistics(heads)) {
          nb::dict d = stats_dict(l.mean);
          d["layer"] = l.layer;
          d["heads"] = l.heads;
          d["sink_head_rate"] = l.sink_head_rate;
          per_layer.append(d);
        }
        nb::dict out;
        out["heads"] = per_head;
        out["layers"] = per_layer;
        out["mean"] = stats_dict(mean_statistics(heads));
        out["sink_head_rate"] = sink_head_rate(heads);
        return out;
      },
      "workload"_a, "layers"_a = nb::none(), "q_heads"_a = nb::none(), "threads"_a = 0,
      "The statistics of `subevict workload inspect` (core/workload_stats.hpp) per (layer, query head), per layer "
      "and their mean: {'heads': [...], 'layers': [...], 'mean': {...}, 'sink_head_rate': float}. layers, q_heads: "
      "ascending lists (default: all).");
}

}  // namespace subevict::python
