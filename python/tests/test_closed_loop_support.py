"""What the closed loop asks of the package (docs/closed_loop.md): budget sizes and policy specs
resolved as simulate does, the optimum without policies, and a one-layer workload simulated as a
layer of a larger model (model_layer). The closed loop itself needs torch and a real model: its
tests are tests/closed_loop/ (run in the project's .venv)."""

import numpy as np
import pytest

import subevict


def test_budget_size_resolves_as_simulate():
    assert subevict.budget_size(0.2, 100) == 20
    assert subevict.budget_size(0.001, 100) == 1
    assert subevict.budget_size(37, 100) == 37
    assert subevict.budget_size(500, 100) == 100  # sizes are capped at n
    for bad in (0, -0.5, 2.5, float("nan")):
        with pytest.raises(subevict.InputError, match="budget"):
            subevict.budget_size(bad, 100)


def test_parse_budgets_reads_a_list_as_simulate_does():
    """The library's budget parser (the closed loop's --budgets): ratios as floats, sizes as ints,
    every bad item refused naming it, never an exception of another kind."""
    got = subevict.parse_budgets("0.05, 0.1,64,1e2")
    assert got == [0.05, 0.1, 64, 100] and [type(x) for x in got] == [float, float, int, int]
    for bad in ("inf", "0.1,-inf", "nan", "1e400", "0", "-0.5", "2.5", "3e9", "ten", "0.2x"):
        with pytest.raises(subevict.InputError, match=r"^closed_loop: --budgets: expected a ratio in \(0, 1\) "
                                                      r"of the sequence length or an integer size in \[1, "
                                                      r"2147483647\], got \S+$"):
            subevict.parse_budgets(bad, "closed_loop", "--budgets")
    for empty in ("", ",", " , "):
        with pytest.raises(subevict.InputError, match="at least one budget"):
            subevict.parse_budgets(empty)


def test_policy_specs_split_a_list_into_specs_that_parse_back_alone():
    specs = subevict.policy_specs("h2o:heavy=0.25,tova,streamingllm:sinks=2,snapkv:window=4,pooling=max,kernel=3")
    assert len(specs) == 4
    assert specs[1] == "tova"
    for spec in specs:
        assert subevict.policy_specs(spec) == [spec]
    with pytest.raises(subevict.InputError, match="bogus"):
        subevict.policy_specs("h2o,bogus")


def one_layer(w, layer):
    """Layer `layer` of `w` as a workload of its own."""
    return subevict.Workload(np.ascontiguousarray(w.q[layer:layer + 1]), np.ascontiguousarray(w.k[layer:layer + 1]),
                             np.ascontiguousarray(w.v[layer:layer + 1]), score_scale=w.score_scale)


def test_model_layer_makes_a_one_layer_workload_behave_as_that_layer():
    w = subevict.generate("tiny-gqa", tokens=64, layers=3, seed=5)
    single = one_layer(w, 2)
    policies = "l2norm,random"
    whole = subevict.simulate(w, policies, budget=12, layers=2, optimum="none", seed=9)
    as_layer = subevict.simulate(single, policies, budget=12, layers=0, optimum="none", seed=9, model_layer=2)
    as_zero = subevict.simulate(single, policies, budget=12, layers=0, optimum="none", seed=9)
    for a, b, c in zip(whole, as_layer, as_zero):
        for label in ("l2norm", "random"):
            assert np.array_equal(a["policies"][label]["last_step"], b["policies"][label]["last_step"])
        # Without model_layer it is layer 0: l2norm skips it, random draws another stream.
        assert not c["policies"]["l2norm"]["compressed"] and a["policies"]["l2norm"]["compressed"]
        assert not np.array_equal(a["policies"]["random"]["last_step"], c["policies"]["random"]["last_step"])
    with pytest.raises(subevict.InputError, match="model_layer"):
        subevict.simulate(w, "local", budget=12, layers=[0, 1], model_layer=1)


def test_the_optimum_alone_needs_no_policy():
    w = subevict.generate("tiny-gqa", tokens=48, layers=1, seed=2)
    [cell] = subevict.simulate(w, [], budget=10, kv_heads=0)
    assert cell["policies"] == {}
    [reference] = subevict.simulate(w, "local", budget=10, kv_heads=0)
    assert cell["optimum"]["total"] == reference["optimum"]["total"]
    assert np.array_equal(cell["optimum"]["last_step"], reference["optimum"]["last_step"])
    with pytest.raises(subevict.InputError, match="at least one policy"):
        subevict.simulate(w, [], budget=10, optimum="none")


def test_policy_mass_from_gains_equals_the_simulators_metrics():
    """The closed loop runs its policies without metrics and values their schedules on the
    optimum's gains: the same decisions, the same mass within double rounding, no output error."""
    from subevict import _subevict

    w = subevict.generate("tiny-gqa", tokens=96, layers=2, seed=4)
    policies = ["h2o", "tova", "streamingllm", "random"]
    args = (w, policies, [0.1, 0.3], [1], None, "flow", 1e-4, 3, 16, False, False, None, False)
    reference = _subevict._simulate(*args)
    fast = _subevict._simulate(*args, policy_mass_from_gains=True)
    assert len(reference) == len(fast) == 2 * w.kv_heads
    for a, b in zip(reference, fast):
        assert a["optimum"]["total"] == b["optimum"]["total"]
        for label in policies:
            x, y = a["policies"][label], b["policies"][label]
            assert np.array_equal(x["last_step"], y["last_step"])
            assert y["total_retained_mass"] == pytest.approx(x["total_retained_mass"], rel=1e-12)
            assert np.allclose(x["retained_mass"], y["retained_mass"], rtol=0, atol=1e-12)
            assert y["total_retained_mass"] <= b["optimum"]["total"] * (1 + 1e-9)
            assert y["mean_output_error"] is None and x["mean_output_error"] >= 0
    # A Python policy keeps the simulator's metrics (the flag applies to built-ins alone).
    [cell] = _subevict._simulate(w, [subevict.ScorePolicy(lambda step, cache, q, K, V: -cache.astype(float), name="s")],
                                 [0.2], [0], [0], "flow", 1e-4, 0, 16, False, False, None, False,
                                 policy_mass_from_gains=True)
    assert cell["policies"]["s"]["mean_output_error"] is not None
