"""_subevict.StreamingCache (docs/eviction.md "Resumable runs"): a head's
rows appended as a prompt run and then one token at a time give the caches and evictions of one
_simulate call over all rows; bad arguments raise InputError naming them."""

import numpy as np
import pytest

import subevict
from subevict import _subevict


@pytest.mark.parametrize("policy", ["h2o", "tova", "snapkv", "keydiff", "expected_attention", "random"])
def test_a_prompt_then_single_tokens_give_the_simulators_caches(policy):
    w = subevict.generate("tiny-gqa", tokens=80, layers=2, seed=3)
    layer, kv, budget, seed, prompt = 1, 1, 12, 7, 50
    g = w.group_size
    q = np.ascontiguousarray(w.q[layer, kv * g:(kv + 1) * g])  # (g, n, d)
    k, v = np.ascontiguousarray(w.k[layer, kv]), np.ascontiguousarray(w.v[layer, kv])
    [cell] = subevict.simulate(w, policy, budget=budget, layers=layer, kv_heads=kv, optimum="none", seed=seed,
                               record_cache=True)
    reference = cell["policies"][policy]
    run = _subevict.StreamingCache(policy, budget, g, w.head_dim, w.score_scale, seed=seed, capacity=w.tokens,
                                   model_layer=layer, kv_head=kv)
    c = np.ascontiguousarray
    evicted, cache = run.extend(c(q[:, :prompt]), c(k[:prompt]), c(v[:prompt]))
    assert np.array_equal(evicted, reference["evicted"][:prompt])
    assert np.array_equal(cache, reference["cache"][prompt - 1])
    for i in range(prompt, w.tokens):
        evicted, cache = run.extend(c(q[:, i:i + 1]), c(k[i:i + 1]), c(v[i:i + 1]))
        assert evicted.tolist() == [reference["evicted"][i]]
        assert np.array_equal(cache, reference["cache"][i]), f"step {i}"
    assert run.tokens == w.tokens


def test_bad_arguments_are_refused_naming_them():
    with pytest.raises(subevict.InputError, match="policy"):
        _subevict.StreamingCache("h2o-oracle", 4, 1, 8, 0.3, capacity=16)
    with pytest.raises(subevict.InputError, match="bogus"):
        _subevict.StreamingCache("bogus", 4, 1, 8, 0.3, capacity=16)
    with pytest.raises(subevict.InputError, match="capacity"):
        _subevict.StreamingCache("h2o", 4, 1, 8, 0.3, capacity=0)
    run = _subevict.StreamingCache("h2o", 4, 2, 8, 0.3, capacity=6)
    rows = np.zeros((2, 4, 8), np.float32)
    with pytest.raises(subevict.InputError, match="StreamingCache: q: expected shape"):
        run.extend(rows[:1], rows[0], rows[0])
    with pytest.raises(subevict.InputError, match="k: expected"):
        run.extend(rows, rows[0].astype(np.float64), rows[0])
    run.extend(rows, rows[0], rows[0])
    with pytest.raises(subevict.InputError, match="capacity left, 2"):
        run.extend(rows, rows[0], rows[0])
    assert run.tokens == 4
