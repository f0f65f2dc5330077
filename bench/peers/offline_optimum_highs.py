#!/usr/bin/python3
"""Side-by-side peer of greedy/offline_optimum: the same linear program solved by a generic LP
solver (scipy.optimize.linprog, method='highs').

The LP is the min-cost-flow form of theory.md §5 (0-based steps), i.e. the 0/1 program over
y_{j,t} after differencing the step rows: one variable per arc, one equality row per node.

  R_j (supply +1) -> D_{t+1} for t = j-1..n-1, bounds [0, 1], cost -sum_{i=j+1}^{min(t+1,n-1)} a_ij
  D_i -> D_{i+1} for i = 0..n-1, bounds [0, k], cost 0
  supplies: D_0: k-1, D_1..D_{n-1}: -1, D_n: -k;  OPT = sum_j a_jj - min cost

Inputs come from `offline_optimum_bench --export=DIR --sizes=...`: DIR/attention_N.npy and
DIR/flow_N.json (the C++ solver's value and time). Times include building the model (as the
C++ time includes building the network). Prints one Markdown table row per size.

Usage: /usr/bin/python3 bench/peers/offline_optimum_highs.py DIR 128 256 512 1024
"""
import json
import sys
import time

import numpy as np
import scipy
import scipy.sparse
from scipy.optimize import linprog


def solve_lp(a, k):
    n = a.shape[0]
    # Arc (j, t+1) for t = j-1..n-1: per token j, n - j + 1 arcs; costs are -cumulative column sums.
    src, dst, cost, upper = [], [], [], []
    below = np.tril(a, -1)
    for j in range(n):
        heads = np.arange(j, n + 1)  # t + 1
        earned = np.concatenate(([0.0], np.cumsum(below[j + 1:, j]), [0.0]))[: len(heads)]
        if len(heads) > 1:
            earned[-1] = earned[-2]  # step n does not exist: t = n-1 earns as t = n-2
        src.append(np.full(len(heads), j))
        dst.append(n + heads)
        cost.append(-earned)
        upper.append(np.ones(len(heads)))
    src.append(n + np.arange(n))
    dst.append(n + np.arange(1, n + 1))
    cost.append(np.zeros(n))
    upper.append(np.full(n, float(k)))
    src, dst = np.concatenate(src), np.concatenate(dst)
    cost, upper = np.concatenate(cost), np.concatenate(upper)
    m = len(src)
    cols = np.arange(m)
    incidence = scipy.sparse.csr_matrix(
        (np.concatenate((np.ones(m), -np.ones(m))), (np.concatenate((src, dst)), np.concatenate((cols, cols)))),
        shape=(2 * n + 1, m))
    supply = np.concatenate((np.ones(n), [k - 1], -np.ones(n - 1), [-k]))
    bounds = np.column_stack((np.zeros(m), upper))
    res = linprog(cost, A_eq=incidence, b_eq=supply, bounds=bounds, method="highs")
    if res.status != 0:
        raise RuntimeError(res.message)
    return float(np.trace(a) - res.fun), m


def main():
    directory, sizes = sys.argv[1], [int(s) for s in sys.argv[2:]]
    print(f"scipy {scipy.__version__}, numpy {np.__version__}")
    print("| n | k | arcs | HiGHS s (build + solve) | flow s | speed-up | HiGHS OPT | flow OPT | |diff| |")
    print("|---|---|---|---|---|---|---|---|---|")
    for n in sizes:
        a = np.load(f"{directory}/attention_{n}.npy")
        with open(f"{directory}/flow_{n}.json") as f:
            flow = json.load(f)
        k = flow["budget"]
        start = time.perf_counter()
        value, m = solve_lp(a, k)
        seconds = time.perf_counter() - start
        print(f"| {n} | {k} | {m} | {seconds:.3f} | {flow['seconds']:.3f} | "
              f"{seconds / flow['seconds']:.0f}x | {value:.10f} | {flow['value']:.10f} | "
              f"{abs(value - flow['value']):.1e} |", flush=True)


if __name__ == "__main__":
    main()
