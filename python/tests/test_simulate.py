"""simulate and the offline optimum from Python equal `subevict simulate` on the same inputs: every
number of results.json bit for bit, and every number of summary.csv and steps.csv to the last
printed digit."""

import csv
import json

import numpy as np
import pytest

import subevict

POLICIES = "h2o,tova,l2norm:skip_first=0,random,streamingllm:sinks=2,h2o-oracle"


def printed(x):
    """A number as the command line prints it in CSV files (10 significant digits), read back."""
    return float(f"{x:.10g}")


@pytest.fixture(scope="module")
def runs(tiny_gqa_file, cli, tmp_path_factory):
    out = tmp_path_factory.mktemp("simulate")
    cli("simulate", "--workload", tiny_gqa_file, "--layers", "0", "--heads", "all", "--budget", "0.2", "--budgets", "9",
        "--policies", POLICIES, "--seed", 3, "--backend", "reference", "--no-plots", "--quiet", "-o", out)
    doc = json.loads((out / "results.json").read_text())
    w = subevict.read_workload(str(tiny_gqa_file))
    mine = subevict.simulate(w, POLICIES, budget=[0.2, 9], layers=0, seed=3)
    return doc, mine, out, w


def test_results_json_equal_bit_for_bit(runs):
    doc, mine, _, _ = runs
    assert len(doc["heads"]) == len(mine) == 4
    for theirs, cell in zip(doc["heads"], mine):
        for key in ("layer", "kv_head", "budget", "budget_size", "group_size"):
            assert cell[key] == theirs[key], key
        assert cell["optimum"]["total"] == theirs["optimum"]["total"]
        assert cell["optimum"]["upper_bound"] == theirs["optimum"]["upper_bound"]
        assert cell["optimum"]["arcs"] == theirs["optimum"]["arcs"]
        assert cell["oracle_total"] == theirs["oracle_total"]
        assert sorted(cell["policies"]) == sorted(theirs["policies"])  # JSON objects are sorted by key
        for label, trace in cell["policies"].items():
            for key, value in theirs["policies"][label].items():
                assert trace[key] == value, (label, key)


def test_csv_files_equal_to_the_last_printed_digit(runs):
    _, mine, out, _ = runs
    cells = {(c["layer"], c["kv_head"], c["budget_size"]): c for c in mine}
    with open(out / "summary.csv") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 4 * len(mine[0]["policies"])
    for row in rows:
        cell = cells[(int(row["layer"]), int(row["kv_head"]), int(row["budget_size"]))]
        trace = cell["policies"][row["policy"]]
        assert float(row["total_retained_mass"]) == printed(trace["total_retained_mass"])
        assert float(row["mean_output_error"]) == printed(trace["mean_output_error"])
        assert float(row["optimum_total"]) == printed(cell["optimum"]["total"])
        assert float(row["oracle_total"]) == printed(cell["oracle_total"])
    with open(out / "steps.csv") as f:
        steps = list(csv.DictReader(f))
    checked = 0
    for row in steps:
        cell = cells[(int(row["layer"]), int(row["kv_head"]), 19)]  # the main budget 0.2 n = 19
        i = int(row["step"])
        if row["policy"] == "OPT":
            value = cell["optimum"]["step_mass"][i]
        elif row["policy"] == "U":
            value = cell["oracle"]["per_step"][i]
        else:
            value = cell["policies"][row["policy"]]["retained_mass"][i]
        assert float(row["retained_mass"]) == printed(value), row
        checked += 1
    assert checked == 2 * 96 * (len(mine[0]["policies"]) + 2)


def test_the_offline_optimum_alone_agrees_with_simulates(runs):
    # simulate's optimum is the command line's solver; offline_optimum() on the gain matrix solves the
    # same problem (equal value up to rounding; an optimal schedule need not be unique).
    _, mine, _, w = runs
    for cell in mine:
        gains = subevict.gain_matrix(w, cell["layer"], cell["kv_head"])
        opt = subevict.offline_optimum(gains, cell["budget_size"])
        g = cell["group_size"]
        assert opt["status"] == "optimal"
        assert opt["total"] / g == pytest.approx(cell["optimum"]["total"], rel=1e-9)
        assert opt["total"] <= opt["upper_bound"] + 1e-12
        assert subevict.schedule_value(gains, opt["last_step"]) == pytest.approx(opt["total"], rel=1e-12)
        assert subevict.schedule_value(gains, cell["optimum"]["last_step"]) / g == pytest.approx(
            cell["optimum"]["total"], rel=1e-9)
        oracle = subevict.step_oracle(gains, cell["budget_size"])
        assert oracle["total"] / g == pytest.approx(cell["oracle_total"], rel=1e-9)
        for trace in cell["policies"].values():
            assert trace["total_retained_mass"] <= cell["optimum"]["total"] * (1 + 1e-12)


def test_traces_hold_per_step_arrays_and_caches():
    w = subevict.generate("tiny-gqa", tokens=50, seed=1)
    [cell] = subevict.simulate(w, ["h2o"], budget=10, kv_heads=[0], optimum="none", record_cache=True)
    trace = cell["policies"]["h2o"]
    n, g = 50, cell["group_size"]
    assert trace["retained_mass"].shape == (n,) and trace["head_retained_mass"].shape == (n, g)
    assert trace["evicted"].dtype == np.int32 and (trace["evicted"][:10] == -1).all()
    assert len(trace["cache"]) == n and all(len(c) == min(i + 1, 10) for i, c in enumerate(trace["cache"]))
    for i in range(10, n):  # the cache after step i is G_i minus the evicted token
        before = set(trace["cache"][i - 1]) | {i}
        assert set(trace["cache"][i]) == before - {trace["evicted"][i]}
    assert cell["optimum"] is None and cell["oracle"] is None
