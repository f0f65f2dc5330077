"""`subevict simulate` with several budgets, `--budget-curve` and `--optimum certified`, checked
against the explicit network simplex (`subevict.offline_optimum`, an independent solver of the same
min-cost flow): every budget's OPT, every point of the budget curve, and every certified interval."""

import csv
import itertools
import json
import os
import re
import subprocess
import time

import numpy as np
import pytest

import subevict
from conftest import cli_path

CURVE = 48  # k = 1..48 of 96 tokens
GAP = 1e-3


def rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


@pytest.fixture(scope="module")
def runs(tiny_gqa_file, cli, tmp_path_factory):
    common = ["simulate", "--workload", tiny_gqa_file, "--layers", "0", "--heads", "all", "--budget", "0.2",
              "--budgets", "9,40", "--budget-curve", CURVE, "--policies", "h2o,tova,local,random", "--no-plots", "--quiet", "--threads", 2]
    exact = tmp_path_factory.mktemp("exact")
    cli(*common, "-o", exact)
    certified = tmp_path_factory.mktemp("certified")
    cli(*common, "--optimum", "certified", "--gap", GAP, "-o", certified)
    w = subevict.read_workload(str(tiny_gqa_file))
    return exact, certified, w


def reference(w, layer, kv_head, k):
    """OPT / g from the explicit network, and g (the group's query heads)."""
    gains = subevict.gain_matrix(w, layer, kv_head)
    opt = subevict.offline_optimum(gains, k)
    assert opt["status"] == "optimal"
    g = w.shape["q_heads"] // w.shape["kv_heads"]
    return opt["total"] / g


def test_every_budget_of_one_solve_equals_the_explicit_network(runs):
    exact, _, w = runs
    summary = rows(exact / "summary.csv")
    assert {int(r["budget_size"]) for r in summary} == {9, 19, 40}
    for r in summary:
        opt = reference(w, int(r["layer"]), int(r["kv_head"]), int(r["budget_size"]))
        assert float(r["optimum_total"]) == pytest.approx(opt, rel=1e-9)
        assert float(r["optimum_lower_bound"]) == pytest.approx(opt, rel=1e-9)
        assert float(r["optimum_upper_bound"]) == pytest.approx(opt, rel=1e-9)
        assert float(r["total_retained_mass"]) <= float(r["optimum_upper_bound"]) * (1 + 1e-9)


def test_the_budget_curve_is_the_optimum_at_every_budget(runs):
    exact, _, w = runs
    curve = rows(exact / "budget_curve.csv")
    heads = {(int(r["layer"]), int(r["kv_head"])) for r in curve}
    assert len(heads) == 2 and len(curve) == 2 * CURVE
    summary = {(int(r["layer"]), int(r["kv_head"]), int(r["budget_size"])): float(r["optimum_total"])
               for r in rows(exact / "summary.csv")}
    for layer, kv in heads:
        points = sorted((int(r["budget_size"]), float(r["optimum_lower_bound"]), float(r["optimum_upper_bound"]),
                         r["status"]) for r in curve if (int(r["layer"]), int(r["kv_head"])) == (layer, kv))
        assert [p[0] for p in points] == list(range(1, CURVE + 1))
        values = [p[1] for p in points]
        for k, value, upper, status in points:
            assert status == "optimal"
            assert value == pytest.approx(reference(w, layer, kv, k), rel=1e-9), k
            assert upper == pytest.approx(value, rel=1e-9)
            if (layer, kv, k) in summary:  # the same OPT as the budgets' own solve
                assert value == pytest.approx(summary[(layer, kv, k)], rel=1e-9)
        steps = [b - a for a, b in zip(values, values[1:])]
        assert all(s >= -1e-9 for s in steps)  # nondecreasing in k
        assert all(b <= a + 1e-9 for a, b in zip(steps, steps[1:]))  # concave in k


def test_certified_intervals_hold_the_optimum_within_the_gap(runs):
    _, certified, w = runs
    doc = json.loads((certified / "results.json").read_text())
    assert doc["optimum"] == "certified" and doc["optimum_gap"] == GAP
    checked = 0
    for r in rows(certified / "summary.csv") + [
            dict(r, budget_size=r["budget_size"]) for r in rows(certified / "budget_curve.csv")]:
        lower, upper = float(r["optimum_lower_bound"]), float(r["optimum_upper_bound"])
        opt = reference(w, int(r["layer"]), int(r["kv_head"]), int(r["budget_size"]))
        assert lower <= opt * (1 + 1e-9) and opt <= upper * (1 + 1e-9)
        assert upper - lower <= GAP * upper * (1 + 1e-9)
        if "total_retained_mass" in r:
            assert float(r["total_retained_mass"]) <= upper * (1 + 1e-9)
        checked += 1
    assert checked > 2 * CURVE


def test_heads_csv_times_every_head(runs):
    exact, _, _ = runs
    heads = rows(exact / "heads.csv")
    assert sorted((int(r["layer"]), int(r["kv_head"])) for r in heads) == [(0, 0), (0, 1)]
    for r in heads:
        assert int(r["budgets"]) == 3 and int(r["tokens"]) == 96
        assert 0 < float(r["optimum_seconds"]) <= float(r["seconds"])


@pytest.mark.parametrize("args, message", [
    (["--optimum", "certified", "--gap", "0"], "--gap: expected a finite relative gap > 0, got 0"),
    (["--gap", "nan"], "--gap: expected a finite relative gap > 0"),
    (["--budget-curve", "-1"], "--budget-curve: expected an integer K >= 1"),
    (["--budget-curve", "97"], "--budget-curve: expected K <= 96 (the tokens), got 97"),
    (["--optimum", "oracle", "--budget-curve", "4"], "expected --optimum flow or certified"),
    (["--optimum", "exact"], "--optimum: expected none, flow, certified or oracle, got exact"),
])
def test_bad_optimum_options_fail_naming_the_option(tiny_gqa_file, tmp_path, args, message):
    out = tmp_path / "out"
    result = subprocess.run([str(cli_path()), "simulate", "--workload", str(tiny_gqa_file), "--quiet", "-o", str(out),
                             *args], capture_output=True, text=True)
    assert result.returncode != 0
    assert message in result.stderr
    assert not out.exists()


def test_python_budget_curve_equals_the_command_line_and_the_explicit_network(runs):
    exact, _, w = runs
    cli_curve = {(int(r["kv_head"]), int(r["budget_size"])): float(r["optimum_lower_bound"])
                 for r in rows(exact / "budget_curve.csv")}
    for kv in (0, 1):
        curve = subevict.budget_curve(w, 0, kv, CURVE)
        assert list(curve["budget"]) == list(range(1, CURVE + 1))
        assert curve["status"] == ["optimal"] * CURVE and curve["group_size"] == 2 and curve["tokens"] == 96
        for k, value, upper in zip(curve["budget"], curve["total"], curve["upper_bound"]):
            assert value == pytest.approx(reference(w, 0, kv, int(k)), rel=1e-9), k
            assert upper == pytest.approx(value, rel=1e-9)
            assert value == pytest.approx(cli_curve[(kv, int(k))], rel=1e-9)


def test_python_certified_results_hold_the_optimum_within_the_gap(runs):
    _, _, w = runs
    curve = subevict.budget_curve(w, 0, 1, CURVE, gap=GAP)
    for k, lower, upper in zip(curve["budget"], curve["total"], curve["upper_bound"]):
        opt = reference(w, 0, 1, int(k))
        assert lower <= opt * (1 + 1e-9) and opt <= upper * (1 + 1e-9)
        assert upper - lower <= GAP * upper * (1 + 1e-9)
    for cell in subevict.simulate(w, ["h2o"], budget=[9, 40], kv_heads=[0, 1], optimum="certified", gap=GAP):
        opt = reference(w, 0, cell["kv_head"], cell["budget_size"])
        lower, upper = cell["optimum"]["total"], cell["optimum"]["upper_bound"]
        assert lower <= opt * (1 + 1e-9) and opt <= upper * (1 + 1e-9)
        assert upper - lower <= GAP * upper * (1 + 1e-9)


@pytest.mark.parametrize("kwargs, message", [
    ({"max_budget": 0}, "largest budget K: expected an integer in [1, 96] (the tokens), got 0"),
    ({"max_budget": 97}, "largest budget K: expected an integer in [1, 96] (the tokens), got 97"),
    ({"max_budget": 4, "gap": -1.0}, "gap: expected a finite value >= 0"),
    ({"max_budget": 4, "gap": float("nan")}, "gap: expected a finite value >= 0"),
    ({"max_budget": 4, "kv_head": 2}, "layer, kv_head: expected indices inside the workload"),
    ({"max_budget": 4, "threads": 0}, "threads: expected an integer >= 1, got 0"),
])
def test_bad_budget_curve_arguments_raise_naming_them(runs, kwargs, message):
    _, _, w = runs
    args = {"layer": 0, "kv_head": 0, **kwargs}
    with pytest.raises(subevict.InputError, match=re.escape(message)):
        subevict.budget_curve(w, **args)


def test_a_budget_curve_on_two_threads_gives_the_same_points():
    # 520 budgets: two runs of 260 (each at least 256), the second from its own solve at k = 261.
    w = subevict.generate("tiny", 600, seed=29)
    one = subevict.budget_curve(w, 0, 0, 520)
    two = subevict.budget_curve(w, 0, 0, 520, threads=2)
    assert list(two["budget"]) == list(range(1, 521)) and two["status"] == ["optimal"] * 520
    np.testing.assert_allclose(two["total"], one["total"], rtol=1e-9)
    np.testing.assert_allclose(two["upper_bound"], two["total"], rtol=1e-9)


def test_python_simulate_rejects_a_bad_gap(runs):
    _, _, w = runs
    with pytest.raises(subevict.InputError, match="gap"):
        subevict.simulate(w, ["h2o"], budget=9, kv_heads=0, optimum="certified", gap=0.0)


def test_a_budget_curve_reports_progress_within_a_head(tiny_gqa_file, tmp_path):
    command = [str(cli_path()), "simulate", "--workload", str(tiny_gqa_file), "--heads", "all",
               "--budget-curve", "48", "--policies", "h2o", "--no-plots", "-o", str(tmp_path / "out")]
    # In a log, by default: the first and the last line, and at most one more every 5 s.
    start = time.monotonic()
    result = subprocess.run(command, capture_output=True, text=True)
    elapsed = time.monotonic() - start
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("simulate: ")]
    assert 2 <= len(lines) <= 2 + elapsed / 5, result.stderr
    assert "simulate: 98/98 units" in lines[-1]
    # With a line per unit (SUBEVICT_PROGRESS_INTERVAL=0), every chunk of a head's curve is named.
    result = subprocess.run(command, capture_output=True, text=True,
                            env=dict(os.environ, SUBEVICT_PROGRESS_INTERVAL="0"))
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("simulate: ")]
    done = [int(re.match(r"simulate: (\d+)/98 units \(head groups and curve points\)", line).group(1))
            for line in lines]
    assert done == sorted(done) and done[-1] == 98  # 2 heads x (1 group + 48 points)
    for kv in (0, 1):  # 16 chunks of 3 points per head's curve, each named
        assert sum(f"KV head {kv}: curve to k = " in line for line in lines) == 16
        assert f"(layer 0, KV head {kv}: curve to k = 48)" in result.stderr


def test_allocate_shares_a_total_over_heads_by_their_curves_and_beats_an_even_split():
    w = subevict.generate("tiny-gqa", tokens=40, layers=2, seed=4)
    curves = [subevict.budget_curve(w, layer, kv, 20)["total"] for layer in range(2) for kv in range(2)]
    result = subevict.allocate(curves, 24)
    budgets = result["budgets"]
    assert budgets.dtype == np.int32 and int(budgets.sum()) == 24 and budgets.min() >= 1
    assert result["value"] == pytest.approx(sum(c[k - 1] for c, k in zip(curves, budgets)), rel=1e-12)
    even = sum(c[5] for c in curves)  # 6 slots each
    assert result["value"] >= even - 1e-12
    # Every way of moving one slot between two heads is no better (a local check of optimality).
    for give in range(4):
        for take in range(4):
            if give != take and budgets[give] > 1 and budgets[take] < 20:
                moved = result["value"] - curves[give][budgets[give] - 1] + curves[give][budgets[give] - 2] \
                    - curves[take][budgets[take] - 1] + curves[take][budgets[take]]
                assert moved <= result["value"] + 1e-12
    with pytest.raises(subevict.InputError, match="total budget"):
        subevict.allocate(curves, 3)
    with pytest.raises(subevict.InputError, match="concave"):
        subevict.allocate([[0.0, 0.0, 10.0], [0.0, 1.0, 1.5]], 4)


def test_allocate_per_layer_and_in_two_classes_as_exhaustive_search():
    w = subevict.generate("tiny-gqa", tokens=40, layers=2, seed=4)
    curves = [subevict.budget_curve(w, layer, kv, 10)["total"] for layer in range(2) for kv in range(2)]
    layers = [0, 0, 1, 1]
    result = subevict.allocate(curves, 12, by="layer", layers=layers)
    budgets = [int(k) for k in result["budgets"]]
    assert budgets[0] == budgets[1] and budgets[2] == budgets[3] and sum(budgets) == 12
    best = max(sum(c[(a if layer == 0 else b) - 1] for c, layer in zip(curves, layers))
               for a in range(1, 11) for b in range(1, 11) if 2 * (a + b) == 12)
    assert result["value"] == pytest.approx(best, rel=1e-12)
    result = subevict.allocate(curves, 24, by="classes", low=2)
    assert set(int(k) for k in result["budgets"]) <= {2, 10}
    best = max(sum(c[(10 if full else 2) - 1] for c, full in zip(curves, mask))
               for mask in itertools.product((False, True), repeat=4)
               if sum(10 if full else 2 for full in mask) <= 24)
    assert result["value"] == pytest.approx(best, rel=1e-12)
    with pytest.raises(subevict.InputError, match="layers"):
        subevict.allocate(curves, 12, by="layer")
    with pytest.raises(subevict.InputError, match="low"):
        subevict.allocate(curves, 12, low=2)
    with pytest.raises(subevict.InputError, match="multiple"):
        subevict.allocate(curves, 13, by="layer", layers=layers)


def test_shared_optimum_is_at_least_the_static_allocation_and_its_schedule_is_what_it_reports():
    w = subevict.generate("tiny-gqa", tokens=24, layers=1, seed=4)
    gains = [subevict.gain_matrix(w, 0, kv) for kv in range(2)]
    n, total = 24, 10
    curves = [[subevict.offline_optimum(g, k)["total"] for k in range(1, n + 1)] for g in gains]
    uniform = sum(c[total // 2 - 1] for c in curves)
    static = subevict.allocate(curves, total)["value"]
    shared = subevict.shared_optimum(gains, total)
    assert shared["status"] == "optimal"
    assert uniform <= static + 1e-12 <= shared["total"] + 2e-12
    assert shared["upper_bound"] - shared["total"] <= 1e-9 * shared["total"]
    occupancy = shared["occupancy"]
    assert occupancy.shape == (n, 2) and occupancy.dtype == np.int32
    assert int(occupancy.sum(axis=1).max()) <= total
    for h, steps in enumerate(shared["last_step"]):
        # The value and the occupancy both come from the same schedule.
        assert [sum(1 for j in range(i + 1) if steps[j] >= i) for i in range(n)] == list(occupancy[:, h])
    assert shared["total"] == pytest.approx(
        sum(subevict.schedule_value(g, list(s)) for g, s in zip(gains, shared["last_step"])), rel=1e-12)
    # One head is the single-head optimum.
    assert subevict.shared_optimum(gains[:1], 5)["total"] == pytest.approx(
        subevict.offline_optimum(gains[0], 5)["total"], rel=1e-12)
    with pytest.raises(subevict.InputError, match="head 1"):
        subevict.shared_optimum([gains[0], gains[1][:10, :10].copy()], 4)


def test_shared_optimum_by_column_generation_equals_the_explicit_network_and_keeps_its_bound():
    w = subevict.generate("tiny-gqa", tokens=40, layers=2, seed=7)
    gains = [subevict.gain_matrix(w, layer, kv) for layer in range(2) for kv in range(2)]
    for total in (4, 17, 60):
        explicit = subevict.shared_optimum(gains, total, method="explicit")
        columns = subevict.shared_optimum(gains, total, method="columns", gap=0.0)
        assert (explicit["method"], columns["method"]) == ("explicit", "columns")
        assert columns["status"] == "optimal"
        assert columns["total"] == pytest.approx(explicit["total"], rel=1e-9)
        assert columns["total"] <= columns["upper_bound"] <= columns["total"] * (1 + 1e-9)
        assert int(columns["occupancy"].sum(axis=1).max()) <= total
        # Its schedule is what it reports.
        assert columns["total"] == pytest.approx(
            sum(subevict.schedule_value(g, list(s)) for g, s in zip(gains, columns["last_step"])), rel=1e-12)
    # 'auto' takes the explicit network where it fits.
    assert subevict.shared_optimum(gains, 17)["method"] == "explicit"
    # Stopped at a gap: the interval still contains the optimum.
    loose = subevict.shared_optimum(gains, 17, method="columns", gap=0.5)
    assert loose["total"] <= explicit_value(gains, 17) * (1 + 1e-12) <= loose["upper_bound"] * (1 + 1e-12)
    with pytest.raises(subevict.InputError, match="method"):
        subevict.shared_optimum(gains, 17, method="lp")
    with pytest.raises(subevict.InputError, match="gap"):
        subevict.shared_optimum(gains, 17, method="columns", gap=-1.0)
    with pytest.raises(subevict.InputError, match="shared_columns"):
        subevict.shared_optimum([gains[0], gains[1][:10, :10].copy()], 4, method="columns")


def explicit_value(gains, total):
    return subevict.shared_optimum(gains, total, method="explicit")["total"]
