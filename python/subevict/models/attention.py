"""Attention of a layer's query heads over per-KV-head caches, in float32 with torch.

A cache is given as a keep mask over (query, key) pairs per KV head; the softmax runs over the
kept keys only (every other key has weight exactly 0), with torch's max-subtracted (log-sum-exp)
softmax. The full causal mask and a mask built from a cache schedule go through the same code, so
a schedule that keeps every token reproduces the full model bit for bit."""

from __future__ import annotations


def causal_keep(tokens, kv_heads, window=None):
    """The full cache: keep[h, i, j] = j <= i, and i - j < window on a sliding-window layer (bool
    [kv_heads, tokens, tokens])."""
    import torch

    keep = torch.ones(tokens, tokens, dtype=torch.bool).tril()
    if window is not None:
        keep = keep.triu(1 - window)
    return keep.expand(kv_heads, tokens, tokens)


def keep_from_last_step(last_step, out=None):
    """The keep mask of irreversible caches given by their schedules: last_step [kv_heads, n]
    (int; t_j = the last step whose cache S_i holds token j, j - 1 when evicted on arrival), so
    j is in S_i for i in [j, t_j] and query i attends over G_i = S_{i-1} + {i}: keep[h, i, j] =
    (j == i) or (j < i <= t_j + 1). `out`: a contiguous bool tensor of the result's shape to
    fill instead of a new one (a worker thread filling its KV head's slice)."""
    import torch

    t = torch.as_tensor(last_step, dtype=torch.int64)
    n = t.shape[-1]
    keep = torch.le(torch.arange(n).view(n, 1), t.unsqueeze(-2) + 1, out=out).tril_()
    keep.diagonal(dim1=-2, dim2=-1).fill_(True)
    return keep


def keep_from_sets(chosen, kv_heads, tokens):
    """The keep mask of reversible caches: chosen[h][i] holds the past tokens query i attends to
    besides itself (the per-step oracle's sets)."""
    import torch

    return torch.stack([keep_from_row_sets(chosen[h], tokens) for h in range(kv_heads)])


def keep_from_row_sets(chosen, tokens):
    """One KV head's keep_from_sets: bool [tokens, tokens] from chosen[i], the past tokens query i
    attends to besides itself."""
    import numpy as np
    import torch

    keep = torch.zeros(tokens, tokens, dtype=torch.bool)
    index = torch.arange(tokens)
    keep[index, index] = True
    sizes = [len(members) for members in chosen]
    if sum(sizes):
        rows = torch.from_numpy(np.repeat(np.arange(tokens), sizes))
        columns = torch.from_numpy(np.concatenate(chosen).astype(np.int64))
        keep[rows, columns] = True
    return keep


# Query rows per block of `attend`: query i reads keys j <= i only, so a block of rows multiplies
# with the keys up to its last row, about half the products of the full square at n >> this.
ATTEND_BLOCK_ROWS = 256


def attend(q, k, v, scale, keep, first_row=0):
    """Each query head's attention output over its KV head's kept keys.

    q: float32 [q_heads, m, d], the query rows at positions [first_row, first_row + m) (default
    every row: m = n); k, v: float32 [kv_heads, n, d] (query head h reads KV head
    h // (q_heads / kv_heads)); keep: bool [kv_heads, m, n] with each row keeping itself and
    nothing after it (every cache is causal). Returns float32 [q_heads, m, d].
    Queries go in blocks of ATTEND_BLOCK_ROWS rows, each over the keys up to its last row.
    Cost O(q_heads m n d) at most, memory O(g n ATTEND_BLOCK_ROWS) at a time."""
    import torch

    q_heads, kv_heads, m = q.shape[0], k.shape[0], q.shape[1]
    group = q_heads // kv_heads
    out = torch.empty(q_heads, m, v.shape[2], dtype=q.dtype)
    for h in range(kv_heads):
        rows = slice(h * group, (h + 1) * group)
        for first in range(0, m, ATTEND_BLOCK_ROWS):
            last = min(m, first + ATTEND_BLOCK_ROWS)
            end = first_row + last
            scores = torch.matmul(q[rows, first:last], k[h, :end].transpose(0, 1)) * scale
            scores.masked_fill_(~keep[h, first:last, :end], float("-inf"))
            out[rows, first:last] = torch.matmul(torch.softmax(scores, dim=-1), v[h, :end])
    return out
