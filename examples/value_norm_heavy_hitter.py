#!/usr/bin/env python3
"""Your eviction policy against h2o, tova and the exact optimum, on a real model's attention.

The policy is a value-norm-weighted heavy hitter written in NumPy: it accumulates the attention
each token receives, weighted by the norm of the token's value vector (what the token can add to
the attention output), and evicts the cached token with the smallest sum. It runs in subevict's
simulator under the built-in policies' contract, next to h2o and tova, against the exact offline
optimum OPT at several budgets; the budget curve OPT(k), k = 1..K, comes from one solve and is
plotted with every policy's points.

    examples/value_norm_heavy_hitter.py                          # real workload, else the generator
    examples/value_norm_heavy_hitter.py --workload w.safetensors --layer 3 --kv-head 1 -o out/

The default workload is SmolLM2-135M's attention on 2048 tokens of Debian's GPL-3 text
(`scripts/real_workload`, which installs the model into .venv/); where that fails the built-in
llama2-7b-like generator stands in, and the output says which ran. Writes into the output folder:
results.csv (budget, policy, total retained mass, OPT, policy / OPT), budget_curve.csv (k, OPT(k))
and, with gnuplot installed, budget_curve.png / .svg.
"""

from __future__ import annotations

import argparse
import csv
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

import subevict

ROOT = Path(__file__).resolve().parent.parent


class ValueNormHeavyHitter(subevict.Policy):
    """Heavy hitter on attention x ||v_j||: keeps the tokens that added most to past outputs."""

    name = "vnorm-h2o"

    def __init__(self, value_norms: np.ndarray):
        self.value_norms = np.asarray(value_norms, dtype=np.float64)

    def reset(self, n: int, k: int) -> None:
        if n != len(self.value_norms):
            raise ValueError(f"vnorm-h2o: built for {len(self.value_norms)} tokens, run on {n}")
        self.mass = np.zeros(n)

    def observe(self, step: int, attention_row: np.ndarray) -> None:
        self.mass += attention_row * self.value_norms

    def evict(self, step: int, cache: np.ndarray) -> int:
        return int(cache[np.argmin(self.mass[cache])])


def load_workload(path: str | None, tokens: int) -> tuple[subevict.Workload, str]:
    """The workload at `path`, else the real model's export, else the built-in generator."""
    if path:
        return subevict.read_workload(path), path
    try:
        result = subprocess.run([str(ROOT / "scripts" / "real_workload"), "--tokens", str(tokens)],
                                check=True, capture_output=True, text=True)
        real = result.stdout.strip()
        return subevict.read_workload(real), f"SmolLM2-135M on GPL-3 ({real})"
    except (OSError, subprocess.CalledProcessError) as error:
        print(f"real workload unavailable ({error}); using the built-in generator", file=sys.stderr)
    return subevict.generate("llama2-7b", tokens=tokens, layers=1, seed=0), "generator llama2-7b, seed 0"


def plot(out: Path, curve: dict, rows: list[dict]) -> None:
    """budget_curve.png / .svg through gnuplot: OPT(k) as a line, each policy's budgets as points."""
    if shutil.which("gnuplot") is None:
        print("gnuplot not found: no plot (the data is in budget_curve.csv, results.csv)", file=sys.stderr)
        return
    (out / "budget_curve.dat").write_text(
        "".join(f"{k} {v}\n" for k, v in zip(curve["budget"].tolist(), curve["total"].tolist())))
    series = ["'budget_curve.dat' using 1:2 with lines lw 2 title 'OPT(k)'"]
    for i, name in enumerate(sorted({r["policy"] for r in rows})):
        (out / f"points_{i}.dat").write_text(
            "".join(f"{r['budget_size']} {r['total']}\n" for r in rows if r["policy"] == name))
        series.append(f"'points_{i}.dat' using 1:2 with linespoints pt {i + 5} title '{name}'")
    for terminal, suffix in (("pngcairo size 900,600", "png"), ("svg size 900,600", "svg")):
        (out / f"budget_curve_{suffix}.gp").write_text(
            f"set terminal {terminal}\nset output 'budget_curve.{suffix}'\n"
            "set xlabel 'cache budget k (tokens)'\nset ylabel 'retained attention mass (sum over steps)'\n"
            "set key bottom right\nplot " + ", ".join(series) + "\n")
        subprocess.run(["gnuplot", f"budget_curve_{suffix}.gp"], cwd=out, check=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", help="a .safetensors file or q/k/v .npy folder (default: the real model's)")
    parser.add_argument("--tokens", type=int, default=2048, help="tokens of the real or generated workload")
    parser.add_argument("--layer", type=int, default=0)
    parser.add_argument("--kv-head", type=int, default=0)
    parser.add_argument("--budgets", default="0.05,0.1,0.2,0.5", help="ratios of the tokens or sizes")
    parser.add_argument("--curve", type=int, default=0, help="budget curve up to K (default: the largest budget)")
    parser.add_argument("-o", "--output", default="example_out", help="output folder")
    args = parser.parse_args()

    w, source = load_workload(args.workload, args.tokens)
    n = w.tokens
    v = w.v[args.layer, args.kv_head]  # [tokens, head_dim], a zero-copy view
    mine = ValueNormHeavyHitter(np.linalg.norm(v.astype(np.float64), axis=1))
    budgets = [float(b) for b in args.budgets.split(",")]
    print(f"workload: {source}; layer {args.layer}, KV head {args.kv_head}, {n} tokens", file=sys.stderr)

    cells = subevict.simulate(w, ["h2o", "tova", mine], budget=budgets, layers=args.layer, kv_heads=args.kv_head)
    rows = []
    for cell in cells:
        opt = cell["optimum"]["total"]
        for name, trace in cell["policies"].items():
            rows.append({"budget": cell["budget"], "budget_size": cell["budget_size"], "policy": name,
                         "total": trace["total_retained_mass"], "optimum_total": opt,
                         "policy_over_opt": trace["total_retained_mass"] / opt})

    largest = max(r["budget_size"] for r in rows)
    curve = subevict.budget_curve(w, args.layer, args.kv_head, args.curve or largest)
    print(f"budget curve k = 1..{len(curve['budget'])} in {curve['seconds']:.1f} s", file=sys.stderr)

    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "results.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    with open(out / "budget_curve.csv", "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["budget_size", "optimum_total"])
        writer.writerows(zip(curve["budget"].tolist(), curve["total"].tolist()))
    plot(out, curve, rows)

    print(f"{'k':>6}  {'policy':<10} {'retained':>10} {'policy/OPT':>10}")
    for r in rows:
        print(f"{r['budget_size']:>6}  {r['policy']:<10} {r['total']:>10.3f} {r['policy_over_opt']:>10.4f}")
    print(f"wrote {out}/results.csv, {out}/budget_curve.csv" + (", budget_curve.png" if shutil.which("gnuplot") else ""))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except subevict.InputError as error:  # the library's message names the input and what it expected
        print(f"value_norm_heavy_hitter: error: {error}", file=sys.stderr)
        sys.exit(2)
