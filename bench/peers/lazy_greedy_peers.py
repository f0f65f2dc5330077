#!/usr/bin/env python3
"""Side-by-side peer comparison of lazy greedy on dense facility location.

One instance, identical for every program: n random points in [0, 1]^d (numpy seed), the
Gaussian similarity S_ij = exp(-||x_i - x_j||^2 / h) with h the mean squared distance, written
as float64 .npy (symmetric, so the row/column convention of each library does not matter).
Then, interleaved and repeated (the fastest repeat of each program is reported):

  ours:      facility_location_peer S.npy K   (greedy/optimizers/lazy_greedy.hpp on FacilityLocation)
  submodlib: FacilityLocationFunction(n, mode='dense', sijs=S, separate_rep=False)
             .maximize(budget=K, optimizer='LazyGreedy', stopIfZeroGain=False,
                       stopIfNegativeGain=False, verbose=False, show_progress=False)
  apricot:   FacilityLocationSelection(K, metric='precomputed', optimizer='lazy').fit(S)

Times are the selection only (file reading and instance construction excluded; submodlib's
construction, which copies the kernel into C++, and apricot's first call, which compiles with
numba, are done before timing). Each peer's selection and its value f(S) (recomputed here in
float64) are compared with ours.

Usage (the peers live in a venv, see bench/results/greedy_lazy_peers.md):
  .venv-bench/bin/python bench/peers/lazy_greedy_peers.py --ours build/bench/facility_location_peer
"""
import argparse
import json
import os
import platform
import subprocess
import tempfile
import time

import numpy as np


def make_similarity(n, d, seed):
    rng = np.random.default_rng(seed)
    x = rng.random((n, d))
    sq = (x * x).sum(axis=1)
    dist2 = np.maximum(sq[:, None] + sq[None, :] - 2.0 * x @ x.T, 0.0)
    s = np.exp(-dist2 / dist2.mean())
    return np.ascontiguousarray((s + s.T) / 2.0)  # exactly symmetric


def value(s, selection):
    return float(s[:, selection].max(axis=1).sum()) if selection else 0.0


def run_ours(binary, path, k):
    out = subprocess.run([binary, path, str(k)], check=True, capture_output=True, text=True)
    result = json.loads(out.stdout)
    return result["set"], result["seconds"]


def run_submodlib(s, k):
    from submodlib import FacilityLocationFunction
    f = FacilityLocationFunction(n=s.shape[0], mode="dense", sijs=s, separate_rep=False)
    t0 = time.perf_counter()
    picked = f.maximize(budget=k, optimizer="LazyGreedy", stopIfZeroGain=False,
                        stopIfNegativeGain=False, verbose=False, show_progress=False)
    seconds = time.perf_counter() - t0
    return [int(e) for e, _ in picked], seconds


def run_apricot(s, k):
    from apricot import FacilityLocationSelection
    selector = FacilityLocationSelection(k, metric="precomputed", optimizer="lazy")
    t0 = time.perf_counter()
    selector.fit(s)
    seconds = time.perf_counter() - t0
    return [int(e) for e in selector.ranking], seconds


def versions():
    from importlib.metadata import version
    return {name: version(name) for name in ("submodlib-py", "apricot-select", "numpy", "numba")}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ours", required=True, help="path of the facility_location_peer binary")
    parser.add_argument("--n", type=int, default=5000)
    parser.add_argument("--k", type=int, default=100)
    parser.add_argument("--d", type=int, default=8)
    parser.add_argument("--seed", type=int, default=2024)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", help="write the results here as well")
    args = parser.parse_args()

    s = make_similarity(args.n, args.d, args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "similarity.npy")
        np.save(path, s)
        # Warm-up: numba compilation of apricot, page cache of the file.
        run_apricot(s[:200, :200].copy(), 5)
        runs = {"ours": [], "submodlib": [], "apricot": []}
        sets = {}
        for _ in range(args.repeats):
            for name, run in (("ours", lambda: run_ours(args.ours, path, args.k)),
                              ("submodlib", lambda: run_submodlib(s, args.k)),
                              ("apricot", lambda: run_apricot(s, args.k))):
                selection, seconds = run()
                runs[name].append(seconds)
                sets.setdefault(name, selection)
                if selection != sets[name]:
                    raise SystemExit(f"{name} changed its selection between repeats")

    ours = sets["ours"]
    report = {"n": args.n, "k": args.k, "d": args.d, "seed": args.seed, "repeats": args.repeats,
              "machine": platform.processor() or platform.machine(), "versions": versions(),
              "programs": {}}
    for name, times in runs.items():
        sel = sets[name]
        first_difference = next((i for i, (a, b) in enumerate(zip(sel, ours)) if a != b), None)
        report["programs"][name] = {
            "min_seconds": min(times), "all_seconds": times, "value": value(s, sel),
            "same_selection_as_ours": sel == ours, "same_set_as_ours": sorted(sel) == sorted(ours),
            "first_difference_at_step": first_difference,
            "speedup_of_ours": min(times) / min(runs["ours"]),
        }
    text = json.dumps(report, indent=2)
    print(text)
    if args.json:
        with open(args.json, "w") as out:
            out.write(text + "\n")


if __name__ == "__main__":
    main()
