"""The masked attention of subevict.models (attend): queries go in blocks of ATTEND_BLOCK_ROWS rows,
each over the keys up to its last row. Blocking must not change what a query sees: against one
block over every key (the definition), on causal, windowed and evicted masks; the evicted mask
against its definition."""

import numpy as np
import pytest
import torch

from subevict import models
from subevict.models import attention

# float32 softmax and products over a different number of (masked) columns: the sums run in
# another order; measured differences are ~1e-7.
BLOCKING_TOL = 1e-5


def masks(n, kv_heads, generator):
    causal = models.causal_keep(n, kv_heads)
    window = models.causal_keep(n, kv_heads, window=17)
    last_step = torch.randint(0, n, (kv_heads, n), generator=generator)
    last_step = torch.maximum(last_step, torch.arange(n) - 1)  # t_j in [j - 1, n - 1]
    return {"causal": causal, "window": window, "evicted": models.keep_from_last_step(last_step)}


@pytest.mark.parametrize("mask", ["causal", "window", "evicted"])
def test_blocks_of_queries_equal_one_block_over_every_key(monkeypatch, mask):
    generator = torch.Generator().manual_seed(3)
    n, kv_heads, group, d = 200, 2, 3, 16
    q = torch.randn(kv_heads * group, n, d, generator=generator)
    k = torch.randn(kv_heads, n, d, generator=generator)
    v = torch.randn(kv_heads, n, d, generator=generator)
    keep = masks(n, kv_heads, generator)[mask]
    monkeypatch.setattr(attention, "ATTEND_BLOCK_ROWS", n)  # one block: every query over every key
    whole = models.attend(q, k, v, 0.25, keep)
    for rows in (1, 7, 64, 199):
        monkeypatch.setattr(attention, "ATTEND_BLOCK_ROWS", rows)
        blocked = models.attend(q, k, v, 0.25, keep)
        assert torch.allclose(blocked, whole, rtol=0, atol=BLOCKING_TOL), (mask, rows)
    # A key the mask drops has no effect: changing every dropped value leaves the output alone.
    monkeypatch.setattr(attention, "ATTEND_BLOCK_ROWS", 64)
    dropped = ~keep[:, -1, :]  # keys the last query does not see
    v2 = v.clone()
    v2[dropped] += 100.0
    assert torch.allclose(models.attend(q, k, v2, 0.25, keep)[:, -1], models.attend(q, k, v, 0.25, keep)[:, -1],
                          rtol=0, atol=BLOCKING_TOL)


@pytest.mark.parametrize("seed", range(4))
def test_keep_from_last_step_is_its_definition_with_and_without_out(seed):
    """keep[h, i, j] = (j == i) or (j < i <= t_j + 1), for schedules with tokens evicted on
    arrival (t_j = j - 1), kept to the end (t_j = n - 1) and in between; a filled `out` equals a
    new mask."""
    rng = np.random.default_rng(seed)
    heads, n = 2, 37
    last_step = np.minimum(np.arange(n) - 1 + rng.integers(0, 12, size=(heads, n)), n - 1)
    want = torch.zeros(heads, n, n, dtype=torch.bool)
    for h in range(heads):
        for i in range(n):
            for j in range(n):
                want[h, i, j] = bool(j == i or j < i <= last_step[h, j] + 1)
    assert torch.equal(models.keep_from_last_step(last_step), want)
    out = torch.ones(heads, n, n, dtype=torch.bool)
    for h in range(heads):
        models.keep_from_last_step(last_step[h], out=out[h])
    assert torch.equal(out, want)
