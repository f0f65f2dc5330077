"""simulate(..., overlap=True): each policy's cache against the optimum's, step by step, restated here
from the two schedules and W alone, and equal to the command line's overlap.csv."""

import csv

import numpy as np
import pytest

import subevict

K = 24


def attended(last_step, i):
    """G_i = S_{i-1} + {i}: the tokens j < i with t_j >= i - 1, and i."""
    return set(np.flatnonzero(last_step[:i] >= i - 1).tolist()) | {i}


def test_the_overlap_restated_from_the_schedules(tiny_gqa_file):
    w = subevict.read_workload(str(tiny_gqa_file))
    [cell] = subevict.simulate(w, ["h2o", "local", "tova"], budget=K, kv_heads=1, overlap=True)
    gains = subevict.gain_matrix(w, 0, 1)
    g = cell["group_size"]
    opt = cell["optimum"]["last_step"]
    for name, trace in cell["policies"].items():
        o = trace["overlap_with_optimum"]
        for i in range(w.tokens):
            a, b = attended(trace["last_step"], i), attended(opt, i)
            assert o["jaccard"][i] == pytest.approx(len(a & b) / len(a | b), abs=1e-15)
            assert o["policy_only_mass"][i] == pytest.approx(sum(gains[i, j] for j in a - b) / g, abs=1e-12)
            assert o["optimum_only_mass"][i] == pytest.approx(sum(gains[i, j] for j in b - a) / g, abs=1e-12)
        # the masses decompose the per-step gap to the optimum exactly
        np.testing.assert_allclose(trace["retained_mass"] - cell["optimum"]["step_mass"],
                                   o["policy_only_mass"] - o["optimum_only_mass"], atol=1e-12)
        assert o["mean_jaccard"] == pytest.approx(o["jaccard"].mean(), rel=1e-12)
        assert o["jaccard"].min() < 1  # h2o, local and tova all differ from OPT somewhere at this budget


def test_the_overlap_equals_the_command_line(tiny_gqa_file, cli, tmp_path):
    w = subevict.read_workload(str(tiny_gqa_file))
    cells = subevict.simulate(w, ["h2o", "local"], budget=K, kv_heads=[0, 1], overlap=True)
    cli("simulate", "--workload", tiny_gqa_file, "--heads", "all", "--budget", K, "--policies", "h2o,local",
        "--schedules", "--no-plots", "--quiet", "-o", tmp_path)
    with open(tmp_path / "overlap.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 2 * 2 * w.tokens
    for r in rows:
        o = cells[int(r["kv_head"])]["policies"][r["policy"]]["overlap_with_optimum"]
        i = int(r["step"])
        assert float(r["jaccard_to_optimum"]) == pytest.approx(o["jaccard"][i], rel=1e-9, abs=1e-12)
        assert float(r["policy_only_mass"]) == pytest.approx(o["policy_only_mass"][i], rel=1e-9, abs=1e-12)
        assert float(r["optimum_only_mass"]) == pytest.approx(o["optimum_only_mass"][i], rel=1e-9, abs=1e-12)


def test_no_overlap_without_the_exact_optimum(tiny_gqa_file):
    w = subevict.read_workload(str(tiny_gqa_file))
    [cell] = subevict.simulate(w, ["h2o"], budget=K, kv_heads=0, optimum="oracle", overlap=True)
    assert "overlap_with_optimum" not in cell["policies"]["h2o"]
    [cell] = subevict.simulate(w, ["h2o"], budget=K, kv_heads=0)
    assert "overlap_with_optimum" not in cell["policies"]["h2o"]
