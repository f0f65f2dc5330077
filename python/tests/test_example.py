"""examples/value_norm_heavy_hitter.py, the script docs/python.md tells researchers to copy: it runs,
its policies stay under the optimum it reports, and its budget curve is the optimum at every budget
the simulation ran (two independent computations: simulate's per-budget solve and one curve solve)."""

import csv
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "value_norm_heavy_hitter.py"


def test_the_example_measures_its_policy_against_the_optimum(tiny_gqa_file, tmp_path):
    out = tmp_path / "out"
    result = subprocess.run([sys.executable, str(EXAMPLE), "--workload", str(tiny_gqa_file), "--kv-head", "1",
                             "--budgets", "0.1,0.3,40", "--curve", "48", "-o", str(out)],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    with open(out / "results.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert sorted({r["policy"] for r in rows}) == ["h2o", "tova", "vnorm-h2o"]
    assert sorted({int(r["budget_size"]) for r in rows}) == [10, 29, 40]
    with open(out / "budget_curve.csv", newline="") as f:
        curve = {int(r["budget_size"]): float(r["optimum_total"]) for r in csv.DictReader(f)}
    assert sorted(curve) == list(range(1, 49))
    values = [curve[k] for k in sorted(curve)]
    assert all(b >= a - 1e-12 for a, b in zip(values, values[1:]))
    for r in rows:
        k, total, opt = int(r["budget_size"]), float(r["total"]), float(r["optimum_total"])
        assert opt == pytest.approx(curve[k], rel=1e-9)
        assert 0 < total <= opt * (1 + 1e-9)
        assert float(r["policy_over_opt"]) == pytest.approx(total / opt, rel=1e-12)
    assert "vnorm-h2o" in result.stdout


def test_the_example_rejects_a_missing_workload(tmp_path):
    result = subprocess.run([sys.executable, str(EXAMPLE), "--workload", str(tmp_path / "missing.safetensors"),
                             "-o", str(tmp_path / "out")], capture_output=True, text=True)
    assert result.returncode != 0
    assert "missing.safetensors" in result.stderr
    assert not (tmp_path / "out").exists()
