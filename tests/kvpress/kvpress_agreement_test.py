"""subevict's policies with kvpress's names against kvpress 0.5.5's own `score()` code
(scripts/kvpress_wheel.py runs its wheel under Debian's torch), at the first full step: the
workload's tokens 0..k are G_k, a prefill of k + 1 tokens to kvpress, whose press keeps the top k
of its scores; subevict's policy evicts one member of G_k at step k. Random Q, K, V (several seeds,
shapes with GQA, float32); the workload runs longer than k + 1 tokens so that a decision at step k
that reads the future length is caught.

The evicted token agrees when kvpress scores it at most NEAR_TIE (relative to the largest score
magnitude) above its lowest score: an exact tie (lagkv's ranks) or a float32 near-tie, since
kvpress scores in float32 and subevict in double. Skipped, with the reason, where kvpress's wheel
cannot be fetched or imported.

`python tests/kvpress/kvpress_agreement_test.py` prints the agreement of every case (the numbers of
docs/eviction.md's "kvpress's names").
"""

from __future__ import annotations

import sys
import types
from pathlib import Path

import numpy as np
import pytest

sys.dont_write_bytecode = True  # leave no __pycache__ in scripts/
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
import kvpress_wheel  # noqa: E402

subevict = pytest.importorskip("subevict")

#: Relative gap under which two kvpress scores count as tied: float32 rounding of scores that sum
#: O(n d) products (kvpress's precision), far below any gap the comparison means to resolve.
NEAR_TIE = 2e-5

SEEDS = range(10)
#: (query heads, KV heads, head dim, budget k): GQA groups of 1, 2, 3 and 8; k + 1 over kvpress's
#: defaults where a case needs it (snapkv's window 64, lagkv's two partitions).
SHAPES = [(4, 2, 16, 24), (6, 3, 8, 40), (8, 1, 32, 70), (2, 2, 16, 130)]
#: Tokens after G_k in the workload (they must not change the decision at step k).
EXTRA_TOKENS = 9


def _kv():
    try:
        return kvpress_wheel.load()
    except kvpress_wheel.Unavailable as e:
        print(f"kvpress comparison skipped: {e}", file=sys.stderr)
        pytest.skip(f"kvpress's wheel cannot be loaded: {e}")


class _IdentitySketch:
    """torch with randn giving sqrt(r) [I | 0]: kvpress's leverage sketch Phi = randn / sqrt(r) becomes the
    identity embedding of R^d in R^r (r >= d), so that kvpress's sketched leverage with its jitter 1e-2 is the
    exact ridge leverage with lambda = 1e-2, subevict's default (the sketch's randomness is kvpress's
    approximation, not its rule)."""

    def __init__(self, torch):
        self._torch = torch

    def __getattr__(self, name):
        return getattr(self._torch, name)

    def randn(self, *shape, device=None, dtype=None):
        *batch, d, r = shape
        eye = self._torch.zeros(d, r, dtype=dtype)
        eye[:, :d] = self._torch.eye(d, dtype=dtype) * float(np.sqrt(r))
        return eye.expand(*batch, d, r).clone()


def _causal_attention(q, k, scale):
    """[q_heads, n, n] causal softmax attention in double (the attentions eager models hand kvpress)."""
    g = q.shape[0] // k.shape[0]
    out = []
    for h in range(q.shape[0]):
        logits = scale * q[h].astype(np.float64) @ k[h // g].astype(np.float64).T
        logits[np.triu_indices(logits.shape[0], 1)] = -np.inf
        logits -= logits.max(axis=1, keepdims=True)
        p = np.exp(logits)
        out.append(p / p.sum(axis=1, keepdims=True))
    return np.stack(out)


def _case(seed, shape):
    """Q [q_heads, n, d], K and V [kv_heads, n, d] float32, n = k + 1 + EXTRA_TOKENS."""
    q_heads, kv_heads, d, k = shape
    n = k + 1 + EXTRA_TOKENS
    rng = np.random.default_rng([seed, q_heads, kv_heads, d, k])
    q = (1.5 * rng.standard_normal((q_heads, n, d)) + 0.5 * rng.standard_normal(d)).astype(np.float32)
    keys = (rng.standard_normal((kv_heads, n, d)) * rng.uniform(0.5, 2.0, (kv_heads, n, 1))).astype(np.float32)
    v = (rng.standard_normal((kv_heads, n, d)) * rng.uniform(0.5, 2.0, (kv_heads, n, 1))).astype(np.float32)
    return q, keys, v


def _press(kv, name, k):
    """kvpress's press (or a callable scoring one KV head group) for each compared subevict spec, k the budget."""
    p = kv
    ratio = 1.0 - k / (k + 1)  # kvpress's compression ratio of a prefill of k + 1 tokens kept to k
    presses = {
        "knorm": lambda: p.knorm_press.KnormPress(),
        "keydiff": lambda: p.keydiff_press.KeyDiffPress(),
        "observed_attention": lambda: p.observed_attention_press.ObservedAttentionPress(),
        "streaming_llm": lambda: p.streaming_llm_press.StreamingLLMPress(),
        "snapkv:window=8,pooling=avg,kernel=5": lambda: p.snapkv_press.SnapKVPress(window_size=8),
        "snapkv:window=16,pooling=avg,kernel=3": lambda: p.snapkv_press.SnapKVPress(window_size=16, kernel_size=3),
        "snapkv:window=64,pooling=avg,kernel=5": lambda: p.snapkv_press.SnapKVPress(),
        "expected_attention": lambda: p.expected_attention_press.ExpectedAttentionPress(),
        "expected_attention:use_covariance=0": lambda: p.expected_attention_press.ExpectedAttentionPress(
            use_covariance=False),
        "lagkv:lag_size=8": lambda: p.lagkv_press.LagKVPress(lag_size=8),
        "lagkv": lambda: p.lagkv_press.LagKVPress(),
        "cur": lambda: p.cur_press.CURPress(),
        "cap": lambda: p.cap_press.CapPress(),
        "leverage": lambda: p.leverage_press.LeverageScorePress(),
        "compactor": lambda: p.compactor_press.CompactorPress(compression_ratio=ratio),
        "compactor:chunk_size=16,sink_size_start=2": lambda: p.compactor_press.CompactorPress(
            compression_ratio=ratio, chunk_size=16, sink_size_start=2),
        "compactor:blending=0.8": lambda: p.compactor_press.CompactorPress(compression_ratio=ratio, blending=0.8),
        "non_causal_attention:chunk_size=16": lambda: p.non_causal_attention_press.NonCausalAttnPress(
            chunk_size=16),
        "non_causal_attention": lambda: p.non_causal_attention_press.NonCausalAttnPress(),
    }
    return presses[name]()


#: The specs compared, each with the shapes where kvpress defines it (its window, partitions or
#: sketch fit in k + 1 tokens and d).
CASES = {
    "knorm": SHAPES,
    "keydiff": SHAPES,
    "observed_attention": SHAPES,
    "streaming_llm": SHAPES,
    "snapkv:window=8,pooling=avg,kernel=5": SHAPES,
    "snapkv:window=16,pooling=avg,kernel=3": SHAPES,
    "snapkv:window=64,pooling=avg,kernel=5": [s for s in SHAPES if s[3] > 64],
    "expected_attention": SHAPES,
    "expected_attention:use_covariance=0": SHAPES,
    "lagkv:lag_size=8": SHAPES,
    "lagkv": [(2, 1, 16, 300)],
    "cur": SHAPES,
    "cap": SHAPES,
    "leverage": SHAPES,
    "compactor": SHAPES,
    "compactor:chunk_size=16,sink_size_start=2": SHAPES,
    "compactor:blending=0.8": SHAPES,
    "non_causal_attention:chunk_size=16": SHAPES,
    "non_causal_attention": SHAPES,
}


def kvpress_scores(kv, spec, q, keys, v, k, per_kv_head=False):
    """kvpress's scores [kv_heads, k + 1] of G_k = tokens 0..k. per_kv_head: one score() call per KV head
    (with its query heads), so that statistics kvpress takes over the whole layer are per KV head."""
    torch = kv.torch
    q, keys, v = q[:, :k + 1], keys[:, :k + 1], v[:, :k + 1]
    if per_kv_head:
        g = q.shape[0] // keys.shape[0]
        return np.concatenate([kvpress_scores(kv, spec, q[h * g:(h + 1) * g], keys[h:h + 1], v[h:h + 1], k)
                               for h in range(keys.shape[0])])
    press = _press(kv, spec, k)
    attentions = _causal_attention(q, keys, 1.0 / np.sqrt(q.shape[2])) if spec == "observed_attention" else None
    sketched = (kv.leverage_press,)
    saved = [m.torch for m in sketched]
    for m in sketched:
        m.torch = _IdentitySketch(torch)
    try:
        return kvpress_wheel.score(press, q, keys, v, attentions=attentions)
    finally:
        for m, t in zip(sketched, saved):
            m.torch = t


def subevict_evicted(spec, q, keys, v, k):
    """The token each KV head's policy evicts at step k (the first full step), from a workload of all n tokens."""
    w = subevict.Workload(np.ascontiguousarray(q[None]), np.ascontiguousarray(keys[None]),
                          np.ascontiguousarray(v[None]))
    cells = subevict.simulate(w, [spec], budget=[float(k)], optimum="none")
    return [int(next(iter(cell["policies"].values()))["evicted"][k]) for cell in sorted(cells, key=lambda c: c["kv_head"])]


def agrees(scores, evicted):
    """True when kvpress's score of `evicted` is within NEAR_TIE of its lowest score."""
    scale = float(np.max(np.abs(scores[np.isfinite(scores)])))
    return bool(scores[evicted] - scores.min() <= NEAR_TIE * max(scale, 1e-30))


def compare(spec, per_kv_head=False):
    """(agreeing, total) decisions of `spec` over its cases, and the first disagreement."""
    kv = _kv()
    agreeing = total = 0
    first = None
    for shape in CASES[spec]:
        k = shape[3]
        for seed in SEEDS:
            q, keys, v = _case(seed, shape)
            scores = kvpress_scores(kv, spec, q, keys, v, k, per_kv_head)
            for h, t in enumerate(subevict_evicted(spec, q, keys, v, k)):
                ok = agrees(scores[h], t)
                agreeing += ok
                total += 1
                if not ok and first is None:
                    first = (f"shape (q_heads, kv_heads, d, k) = {shape}, seed {seed}, KV head {h}: subevict "
                             f"evicts {t} (kvpress score {scores[h][t]:.9g}), kvpress's lowest is "
                             f"{int(np.argmin(scores[h]))} ({scores[h].min():.9g})")
    return agreeing, total, first


#: Specs whose kvpress statistics span the layer's KV heads, compared one KV head at a time
#: (docs/eviction.md: subevict's policies run per KV head).
PER_KV_HEAD = {"compactor", "compactor:chunk_size=16,sink_size_start=2", "compactor:blending=0.8"}


@pytest.mark.parametrize("spec", list(CASES))
def test_first_full_step_agrees_with_kvpress(spec):
    agreeing, total, first = compare(spec, per_kv_head=spec in PER_KV_HEAD)
    assert agreeing == total, f"{spec}: {agreeing}/{total} decisions agree with kvpress; first: {first}"


def test_near_tie_tolerance_separates_distinct_scores():
    # The tolerance accepts float32 rounding and refuses a real gap: a token scored 1e-3 above the lowest of
    # scores of magnitude 1 is not a tie, one scored 1e-7 above is.
    scores = np.array([1.0, 0.5, 0.501, 0.5000001])
    assert agrees(scores, 1) and agrees(scores, 3) and not agrees(scores, 2)


if __name__ == "__main__":
    for name in CASES:
        try:
            a, t, first = compare(name, per_kv_head=name in PER_KV_HEAD)
        except subevict.InputError as e:
            print(f"{name}: not a policy here ({e})", flush=True)
            continue
        line = f"{name}: {a}/{t} = {100.0 * a / t:.1f}%"
        if name in PER_KV_HEAD:
            la, lt, _ = compare(name)
            line += f" (kvpress's layer-wide z-scores: {la}/{lt} = {100.0 * la / lt:.1f}%)"
        print(line, flush=True)


def test_the_loaders_rotary_is_relative():
    # kvpress_wheel.rotary (for pre-RoPE comparisons) is a rotary embedding: norms are kept and
    # <R_m q, R_n k> depends only on n - m.
    torch = _kv().torch
    rng = np.random.default_rng(3)
    q, k = (torch.as_tensor(rng.standard_normal(16)) for _ in range(2))
    cos, sin = kvpress_wheel.rotary(torch, torch.arange(40), 16, rope_theta=10000.0, dtype=torch.float64)

    def rotate(x, m):
        return x * cos[m] + torch.cat((-x[8:], x[:8])) * sin[m]

    assert abs(float(rotate(k, 7).norm() - k.norm())) < 1e-12
    assert abs(float(rotate(q, 3) @ rotate(k, 11) - rotate(q, 23) @ rotate(k, 31))) < 1e-9
    assert abs(float(rotate(q, 3) @ rotate(k, 11) - q @ k)) > 1e-3  # not the identity


def test_kvpress_leaves_its_compressed_cache_in_score_order():
    # docs/eviction.md: kvpress's decoding loop differs from subevict's streaming rule after the first
    # compression because ScorerPress.compress keeps the entries in torch.topk's order (by descending
    # score), not in token order; position-based scorers then read a shuffled cache. The values carry
    # their token in channel 0.
    kv = _kv()
    q, keys, v = _case(0, (2, 1, 8, 24))
    v = v.copy()
    v[:, :, 0] = np.arange(v.shape[1])
    _, kept = kvpress_wheel.compress(kv.knorm_press.KnormPress(compression_ratio=0.5), q, keys, v)
    order = kept[0, :, 0].astype(int)
    norms = np.linalg.norm(keys[0].astype(np.float64), axis=1)
    assert list(order) != sorted(order), "kvpress kept its cache in token order"
    assert list(order) == list(np.argsort(norms, kind="stable")[:len(order)])  # knorm: lowest norm first
