#pragma once
/// \file
/// Counter-based randomness (Random123 Philox4x32-10). Every random number in a workload is a pure
/// function of (seed s, tensor id t, element e): no state, no dependence on thread count or
/// evaluation order, and the same bits on every backend (the functions compile for CUDA devices).
///
/// Mapping: counter = {e mod 2^32, e / 2^32, t mod 2^32, t / 2^32}, key = {s mod 2^32, s / 2^32}.
/// One Philox call yields 4 words; uniform52 uses 2 words, so a call serves one pair of normals
/// (Box-Muller on the two uniforms). Element e of a normal stream reads pair e / 2, component e % 2.

#include <Random123/philox.h>

#include <cstdint>

#include "core/portable_math.hpp"

namespace subevict {

/// Four 32-bit words for counter `block` of tensor `tensor` under `seed`.
SUBEVICT_HD inline r123::Philox4x32::ctr_type philox_block(std::uint64_t seed, std::uint64_t tensor,
                                                           std::uint64_t block) {
  r123::Philox4x32 rng;
  const r123::Philox4x32::ctr_type counter = {
      {std::uint32_t(block), std::uint32_t(block >> 32), std::uint32_t(tensor),
       std::uint32_t(tensor >> 32)}};
  const r123::Philox4x32::key_type key = {{std::uint32_t(seed), std::uint32_t(seed >> 32)}};
  return rng(counter, key);
}

/// A double in the open interval (0, 1) from 52 random bits: (k + 1/2) 2^-52 with k uniform in
/// [0, 2^52). (With 53 bits the largest value, 1 - 2^-54, would round to 1.)
SUBEVICT_HD inline double uniform52(std::uint32_t hi, std::uint32_t lo) {
  const std::uint64_t k = (std::uint64_t(hi >> 6) << 26) | std::uint64_t(lo >> 6);
  return (double(k) + 0.5) * (1.0 / 4503599627370496.0);
}

/// Uniform double in (0, 1): element e of uniform stream `tensor` (uses words 0-1 of block e).
SUBEVICT_HD inline double uniform(std::uint64_t seed, std::uint64_t tensor, std::uint64_t e) {
  const auto r = philox_block(seed, tensor, e);
  return uniform52(r.v[0], r.v[1]);
}

/// The pair of independent standard normals of block `pair` (Box-Muller with portable math).
SUBEVICT_HD inline void normal_pair(std::uint64_t seed, std::uint64_t tensor, std::uint64_t pair,
                                    double* z0, double* z1) {
  const auto r = philox_block(seed, tensor, pair);
  const double u1 = uniform52(r.v[0], r.v[1]);
  const double u2 = uniform52(r.v[2], r.v[3]);
  const double radius = std::sqrt(-2.0 * portable::log(u1));
  double s, c;
  portable::sincos_2pi(u2, &s, &c);
  *z0 = radius * c;
  *z1 = radius * s;
}

/// Element e of standard-normal stream `tensor` under `seed`.
SUBEVICT_HD inline double normal(std::uint64_t seed, std::uint64_t tensor, std::uint64_t e) {
  double z0, z1;
  normal_pair(seed, tensor, e / 2, &z0, &z1);
  return (e % 2 == 0) ? z0 : z1;
}

/// Stream ids: one per (purpose, layer, head), so that no two tensors share counters.
enum class Stream : std::uint32_t {
  kQueryContent = 1,
  kKeyContent = 2,
  kValue = 3,
  kTokenType = 4,
  kKeyNormBias = 5,
  kTypeSalience = 6,
  kDirections = 7,
  kSinkHead = 8,  ///< uniform element 0 of (layer, q_head): whether that query head attends to sinks
  kSinkToken = 9,  ///< uniform element s of (0, 0): where in stretch s its later sink token lies
};

/// Tensor id of `stream` for (layer, head): stream in the top 16 bits, then 24 bits each.
SUBEVICT_HD inline std::uint64_t stream_id(Stream stream, std::uint32_t layer, std::uint32_t head) {
  return (std::uint64_t(stream) << 48) | (std::uint64_t(layer & 0xffffffu) << 24) |
         std::uint64_t(head & 0xffffffu);
}

}  // namespace subevict
