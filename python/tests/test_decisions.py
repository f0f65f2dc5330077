"""subevict.Decisions, the Python side of `subevict simulate --decisions`: a recorded schedule from
anywhere replayed under the same process, metrics and optimum. Exported schedules (a trace's
last_step + 1) read back reproduce the h2o trace and OPT, a keep mask and a per-head record give
the same, the command line agrees to its last printed digit, and every malformed schedule raises
InputError naming the first bad step."""

import csv
import re

import numpy as np
import pytest

import subevict

N, K = 96, 24


@pytest.fixture(scope="module")
def tiny(tiny_gqa_file):
    w = subevict.read_workload(str(tiny_gqa_file))
    [cell] = subevict.simulate(w, ["h2o", "local"], budget=K, kv_heads=1)
    return w, cell


def keep_mask(steps):
    i = np.arange(len(steps))[:, None]
    j = np.arange(len(steps))[None, :]
    return (j <= i) & (i < steps[None, :])


def replay(w, decisions, kv_heads=1, optimum="none"):
    return subevict.simulate(w, [decisions], budget=K, kv_heads=kv_heads, optimum=optimum)


def test_an_exported_h2o_schedule_reproduces_its_trace(tiny):
    w, cell = tiny
    h2o = cell["policies"]["h2o"]
    steps = h2o["last_step"].astype(np.int64) + 1
    for form in (steps, keep_mask(steps), keep_mask(steps).astype(np.uint8)):
        [again] = replay(w, subevict.Decisions(form, "h2o"))
        trace = again["policies"]["recorded:h2o"]
        assert trace["total_retained_mass"] == h2o["total_retained_mass"]
        np.testing.assert_array_equal(trace["retained_mass"], h2o["retained_mass"])
        np.testing.assert_array_equal(trace["output_error"], h2o["output_error"])
        np.testing.assert_array_equal(trace["evicted"], h2o["evicted"])
        assert not trace["converted"] and trace["changed_tokens"] == 0


def test_the_optimums_schedule_as_decisions_reproduces_opt(tiny):
    w, cell = tiny
    steps = cell["optimum"]["last_step"].astype(np.int64) + 1
    [again] = replay(w, subevict.Decisions(steps, "opt"))
    assert again["policies"]["recorded:opt"]["total_retained_mass"] == pytest.approx(cell["optimum"]["total"],
                                                                                     rel=1e-12)


def test_a_per_head_record_replays_each_head_and_equals_the_command_line(tiny, tiny_gqa_file, cli, tmp_path):
    w, _ = tiny
    cells = subevict.simulate(w, ["h2o"], budget=K, kv_heads=[0, 1])
    steps = np.stack([c["policies"]["h2o"]["last_step"].astype(np.int64) + 1 for c in cells])[None]  # (1, 2, n)
    again = replay(w, subevict.Decisions(steps, "h2o"), kv_heads=[0, 1], optimum="flow")
    for c, a in zip(cells, again):
        assert a["policies"]["recorded:h2o"]["total_retained_mass"] == c["policies"]["h2o"]["total_retained_mass"]
    np.save(tmp_path / "h2o.npy", steps)
    out = tmp_path / "cli"
    cli("simulate", "--workload", tiny_gqa_file, "--layers", "0", "--heads", "all", "--budget", K, "--policies",
        "local", "--decisions", tmp_path / "h2o.npy", "--no-plots", "--quiet", "-o", out)
    with open(out / "summary.csv", newline="") as f:
        summary = [r for r in csv.DictReader(f) if r["policy"] == "recorded:h2o"]
    assert len(summary) == 2
    for r in summary:
        a = again[int(r["kv_head"])]
        assert float(r["total_retained_mass"]) == pytest.approx(
            a["policies"]["recorded:h2o"]["total_retained_mass"], rel=1e-9)
        assert float(r["optimum_total"]) == pytest.approx(a["optimum"]["total"], rel=1e-9)


def test_an_early_eviction_is_converted_only_when_asked(tiny):
    w, cell = tiny
    steps = cell["policies"]["local"]["last_step"].astype(np.int64) + 1
    early = steps.copy()
    early[2] = 4  # evicted at step 4 while the cache holds 4 < k
    with pytest.raises(subevict.InputError, match="step 4: expected no eviction while the cache holds fewer than"):
        replay(w, subevict.Decisions(early, "early"))
    [converted] = replay(w, subevict.Decisions(early, "early", to_process=True))
    trace = converted["policies"]["recorded:early"]
    assert trace["converted"] and trace["changed_tokens"] >= 1
    # the process form keeps every token at least as long as recorded: at least the record's value
    recorded = subevict.schedule_value(subevict.gain_matrix(w, 0, 1), (early - 1).tolist()) / cell["group_size"]
    assert trace["total_retained_mass"] >= recorded * (1 - 1e-12)
    assert recorded < cell["policies"]["local"]["total_retained_mass"]


def local_steps():
    return np.array([min(j + K, N) for j in range(N)], dtype=np.int64)


def malformed():
    before = local_steps(); before[40] = 5  # noqa: E702 (token 40 evicted at step 5)
    over = local_steps(); over[3] = N  # noqa: E702 (the cache holds k + 1 after step 27)
    twice = local_steps(); twice[3] = twice[4] = K + 3  # noqa: E702 (step 27 evicts tokens 3 and 4)
    mask = keep_mask(local_steps())
    mask[K + 1, 0], mask[K + 1, 1] = True, False  # token 0 evicted at step 24 comes back at step 25
    return [
        (before, "step 5: expected only tokens that have arrived evicted at step 5"),
        (over, f"step {K + 3}: expected a cache of at most k = {K} tokens"),
        (twice, f"step {K + 3}: expected exactly one eviction per step once the cache is full"),
        (np.full(N, N, dtype=np.int64), f"step {K}: expected a cache of at most k = {K} tokens"),
        (np.where(np.arange(N) == 7, -1, local_steps()), "token 7: expected an eviction step in [7, 96]"),
        (local_steps()[:-1], "tokens: expected n = 96 (the workload's), got 95"),
        (np.tile(local_steps(), (1, 3, 1)), "KV heads: expected 2 (the workload's), got 3"),
        (mask, f"step {K + 1}: expected an evicted token never returns"),
        (local_steps().astype(np.float64), "(eviction steps): expected a int64 array, got float64"),
        (local_steps().astype(np.int32), "(eviction steps): expected a int64 array, got int32"),
        (mask.astype(np.int64), "(a keep mask): expected a uint8 (or bool) array, got int64"),
        (np.asfortranarray(np.tile(local_steps(), (2, 2, 1)).transpose(1, 0, 2)), "C-contiguous"),
        (np.zeros((1, 1, 1, 1, N), dtype=np.int64), "shape: expected (n,) or (layers, kv_heads, n)"),
        (np.zeros((N, N - 1), dtype=np.uint8), "shape: expected a keep mask square in its last two axes"),
    ]


@pytest.mark.parametrize("array, message", malformed())
def test_a_malformed_schedule_raises_naming_the_first_bad_step(tiny, array, message):
    w, _ = tiny
    with pytest.raises(subevict.InputError, match=re.escape(message)) as error:
        replay(w, subevict.Decisions(array, "bad"))
    assert "decisions recorded:bad" in str(error.value)


def test_an_unrecorded_head_is_refused(tiny):
    w, _ = tiny
    steps = np.stack([local_steps(), np.full(N, -1, dtype=np.int64)])[None]
    with pytest.raises(subevict.InputError, match="layer 0 KV head 1: record: expected a recorded schedule"):
        replay(w, subevict.Decisions(steps, "partial"), kv_heads=[0, 1])
