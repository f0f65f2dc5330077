#pragma once
/// \file
/// Which tokens of an LLM-like layer are sink tokens (LlmLikeParams::sink_token_rate): the one
/// test the host generator (core/llm_like_model.cpp) and the device one
/// (kernels/detail/backend_detail.hpp) share, so both key the same tokens as sinks. nvcc reads it.

#include <cstdint>

#include "core/counter_rng.hpp"

namespace subevict {

/// The first token of stretch s of `count` equal stretches of the `later` tokens after the first
/// sinks (as an offset from the first later token): floor(s · later / count).
SUBEVICT_HD inline std::int64_t sink_stretch_start(std::int64_t s, int count, int later) {
  return s * std::int64_t(later) / count;
}

/// The later sink token of stretch s (an offset from the first later token): at the place
/// uniform(seed, (kSinkToken, 0, 0), s) draws within the stretch.
SUBEVICT_HD inline std::int64_t sink_in_stretch(std::uint64_t seed, std::int64_t s, int count, int later) {
  const std::int64_t start = sink_stretch_start(s, count, later), end = sink_stretch_start(s + 1, count, later);
  const double u = uniform(seed, stream_id(Stream::kSinkToken, 0, 0), std::uint64_t(s));
  return start + std::int64_t(u * double(end - start));
}

/// Whether token j of `tokens` is a sink token of a layer whose first `sinks` tokens are sinks and
/// whose `count` later sink tokens lie one in each of `count` equal stretches of the later tokens
/// (LlmLikeParams::sink_token_rate; count 0: none, and no draw is made).
SUBEVICT_HD inline bool is_sink_token(std::uint64_t seed, int sinks, int count, int tokens, int j) {
  if (j < sinks) return true;
  const int later = tokens - sinks;
  if (count <= 0 || later <= 0) return false;
  const std::int64_t offset = j - sinks;
  // The stretch holding the offset: the largest s with start(s) <= offset (s0 is within one of it).
  std::int64_t s = offset * count / later;
  while (s + 1 < count && sink_stretch_start(s + 1, count, later) <= offset) ++s;
  while (s > 0 && sink_stretch_start(s, count, later) > offset) --s;
  return sink_in_stretch(seed, s, count, later) == offset;
}

}  // namespace subevict
