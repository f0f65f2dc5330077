#pragma once
/// \file
/// Reading and writing Workloads (Q, K, V of every layer) as files.
///
/// Naming convention, format "subevict.qkv.v1":
///
/// - One `.safetensors` file holding, for each layer l = 0, ..., L-1 (decimal, no leading zeros),
///   the tensors
///     `layers.{l}.q`  shape [q_heads, tokens, head_dim]
///     `layers.{l}.k`  shape [kv_heads, tokens, head_dim]
///     `layers.{l}.v`  shape [kv_heads, tokens, head_dim]
///   in C order, query heads grouped contiguously per KV head (Workload::kv_head_of), and
///   optionally, in every layer or in none, the same heads before RoPE:
///     `layers.{l}.q_pre`  shape [q_heads, tokens, head_dim] (the shape of q)
///     `layers.{l}.k_pre`  shape [kv_heads, tokens, head_dim] (the shape of k)
///   with, exactly when they are present, the rotary parameters in `__metadata__` (core/rotary.hpp):
///   "rotary_bases" one RoPE base per layer, comma separated (17 significant digits), "rotary_dims"
///   the rotated entries of each head vector (even, <= head_dim), "rotary_pairing" "rotate_half"
///   (Hugging Face's pairing of entry j with j + rotary_dims/2; the only one read). Written as
///   F32; read from F32, F16, BF16 or F64. `__metadata__` holds "format": "subevict.qkv.v1",
///   "score_scale": the softmax scale as a decimal written with max_digits10 (17 significant
///   digits, so it reads back bit-exactly), "attention_windows": each layer's mask as comma-separated
///   integers, 0 global causal, W a sliding window of W keys (written only when some layer has a
///   window; absent means every layer global), and every entry of Workload::metadata. On read both
///   keys are optional: without "format" the file is accepted if its tensor names follow the
///   convention; without "score_scale" the scale is the default 1/sqrt(head_dim). Every other
///   metadata entry goes to Workload::metadata.
/// - A directory `DIR` holding `q.npy` [layers, q_heads, tokens, head_dim], `k.npy` and `v.npy`
///   [layers, kv_heads, tokens, head_dim], '<f4' or '<f8' (converted to float). This form has no
///   place for metadata or a score scale: reading yields empty metadata and the default scale, and
///   no pre-RoPE tensors (they need the rotary parameters).
///
/// Export from PyTorch: for each layer stack the post-RoPE query and key states and the value
/// states of one sequence (batch index 0) as [heads, tokens, head_dim] and save them with
/// safetensors.torch.save_file under the names above.

#include <string>
#include <string_view>
#include <vector>

#include "core/read_options.hpp"
#include "core/workload.hpp"

namespace subevict {

/// The value of `__metadata__["format"]` in workload files.
inline constexpr std::string_view kWorkloadFormat = "subevict.qkv.v1";

/// Reads a workload: a directory is read as the q.npy/k.npy/v.npy triple, anything else as a
/// .safetensors file (see the file comment for both conventions). Beyond the format checks of
/// read_npy/read_safetensors (finiteness and options.max_bytes included), throws InputError
/// naming the file and the tensor when: a tensor name does not follow the convention (the error
/// states the expected pattern), layers are not numbered contiguously from 0, a layer lacks q, k
/// or v, a tensor's rank is wrong, a dimension is 0 or exceeds INT_MAX, tokens or head_dim differ
/// between q, k and v, k and v differ, kv_heads does not divide q_heads, a layer's shapes differ
/// from layer 0's, the whole shape fails Shape::validate, "format" is not kWorkloadFormat, or
/// "score_scale" is not a positive finite decimal, or "attention_windows" is not one integer >= 0
/// per layer; and for the pre-RoPE tensors when a layer has q_pre without k_pre or some layers
/// have them and others not, a q_pre / k_pre shape differs from its q / k, they are present
/// without one of the rotary_* entries or an entry is present without them, "rotary_bases" is not
/// one finite base > 1 per layer, "rotary_dims" not an even count from 2 to head_dim, or
/// "rotary_pairing" not "rotate_half". Peak memory is about twice the workload.
Workload read_workload(const std::string& path, const ReadOptions& options = {});

/// Writes `workload`: a path ending in ".safetensors" gets one file (F32, metadata and score scale
/// included); any other path is a directory, created with its parents if missing, that receives
/// q.npy, k.npy and v.npy as '<f4' (each written atomically; the triple as a whole is not). The
/// directory form drops Workload::metadata and cannot store a score scale or rotary parameters,
/// so it throws InputError when the workload's scale is not the default 1/sqrt(head_dim) or it
/// has pre-RoPE tensors rather than lose them; the file form throws when layers rotate different
/// numbers of dims (the file records one count).
/// Also throws InputError(path, ...) when Workload::metadata uses the reserved keys "format" or
/// "score_scale", "attention_windows" or "rotary_*", when the directory form is asked for sliding windows it
/// cannot store, when the tensors' sizes disagree with the shape (e.g. a default-constructed
/// Workload), or when a file cannot be written.
void write_workload(const std::string& path, const Workload& workload);

/// Throws InputError(source, "layer L TENSOR", "finite values " + why, "NaN at query head h, token
/// i, dim d") for the first NaN or Inf in Q, K or V of the given layers and KV heads (Q over the
/// query heads of each KV head's group), in the order layer, tensor q/k/v, head, token, dim. For
/// commands that read with allow_nonfinite but compute on part of the workload. O(entries checked).
void require_finite(const Workload& workload, const std::vector<int>& layers, const std::vector<int>& kv_heads,
                    const std::string& source, const std::string& why);

/// require_finite over every layer and KV head of `workload`.
void require_finite(const Workload& workload, const std::string& source, const std::string& why);

}  // namespace subevict
