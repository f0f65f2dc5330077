"""subevict.simulate(optimum_rows=R): the row-restricted ("question-aware") offline optimum, checked
against the explicit network simplex (subevict.offline_optimum) on the gain matrix whose rows
outside R numpy sets to 0 here, and against the policies' own per-step masses summed over R."""

import numpy as np
import pytest

import subevict

BUDGETS = [9, 30]
RNG_SEED = 3


def question_rows(n, span):
    """A question span of `span` rows near the end, a few scattered rows, and a duplicate (merged).
    Up to n / 8 rows the library computes R's rows alone, beyond it the whole head (both here)."""
    rng = np.random.default_rng(RNG_SEED)
    rows = list(range(n - 4 - span, n - 4)) + list(rng.choice(n - 12, size=5, replace=False)) + [n - 5]
    return rows, np.unique(rows)


def restricted_optimum(w, layer, kv_head, k, unique_rows):
    """OPT of W' / g by the explicit network: W' keeps W's rows in R, zeros elsewhere."""
    gains = subevict.gain_matrix(w, layer, kv_head)
    masked = np.zeros_like(gains)
    masked[unique_rows] = gains[unique_rows]
    opt = subevict.offline_optimum(masked, k)
    assert opt["status"] == "optimal"
    g = w.shape["q_heads"] // w.shape["kv_heads"]
    return opt["total"] / g


@pytest.mark.parametrize("optimum, span", [("flow", 8), ("certified", 8), ("flow", 3)])
def test_the_row_optimum_equals_the_explicit_network_and_bounds_every_policy(tiny_gqa_file, optimum, span):
    w = subevict.read_workload(str(tiny_gqa_file))
    n = w.shape["tokens"]
    rows, unique_rows = question_rows(n, span)
    cells = subevict.simulate(w, "h2o,tova,local,random,snapkv", BUDGETS, layers=0, optimum=optimum, gap=1e-9,
                              optimum_rows=rows)
    plain = subevict.simulate(w, [], BUDGETS, layers=0, optimum="flow")
    assert len(cells) == len(plain) == w.shape["kv_heads"] * len(BUDGETS)
    off = np.setdiff1d(np.arange(n), unique_rows)
    for cell, full in zip(cells, plain):
        want = restricted_optimum(w, 0, cell["kv_head"], cell["budget_size"], unique_rows)
        got = cell["optimum"]
        assert got["total"] == pytest.approx(want, rel=1e-8)
        assert got["step_mass"][off].max() == 0.0
        assert got["step_mass"][unique_rows].sum() == pytest.approx(got["total"], rel=1e-12)
        # Knowing R keeps more on R than the mass optimum, and the oracle bounds both.
        assert full["optimum"]["step_mass"][unique_rows].sum() <= got["total"] * (1 + 1e-9)
        assert got["total"] <= cell["oracle"]["total"] * (1 + 1e-9)
        assert cell["oracle"]["per_step"][off].max() == 0.0
        for label, trace in cell["policies"].items():
            assert trace["retained_mass"][unique_rows].sum() <= got["total"] * (1 + 1e-9), label


@pytest.mark.parametrize("rows, message", [
    ([], "simulate: optimum_rows: expected at least one query row, got none"),
    ([3, 96], "simulate: optimum_rows: expected row indices in [0, 96), got 96"),
    ([-1], "simulate: optimum_rows: expected row indices in [0, 96), got -1"),
    (["3"], "simulate: optimum_rows: expected ints, got '3'"),
])
def test_bad_rows_are_refused_in_one_line(tiny_gqa_file, rows, message):
    w = subevict.read_workload(str(tiny_gqa_file))
    with pytest.raises(subevict.InputError) as info:
        subevict.simulate(w, "h2o", 9, layers=0, optimum_rows=rows)
    assert str(info.value) == message


def test_rows_need_an_optimum(tiny_gqa_file):
    w = subevict.read_workload(str(tiny_gqa_file))
    with pytest.raises(subevict.InputError, match="^simulate: optimum_rows: expected an optimum to restrict"):
        subevict.simulate(w, "h2o", 9, layers=0, optimum="none", optimum_rows=[3])
