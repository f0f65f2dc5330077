#!/usr/bin/env python3
"""Overhead of an eviction policy written in Python against the built-in one it re-implements.

Runs the built-in h2o and its NumPy re-implementation (python/tests/test_policies.py's PyH2O, the
same traces) on one (layer, KV head) of a generated llama2-7b workload at n = 4096, k = 819, and
reports the simulator's step time (prefill of the exact rows excluded: it is the same for both)
as the median of --repeats runs. Results: bench/results/python_policy_overhead.md.

    PYTHONPATH=build/python .venv/bin/python bench/python_policy_overhead.py [--tokens 4096] [--budget 819]
"""

import argparse
import statistics

import numpy as np

import subevict


class PyH2O(subevict.Policy):
    name = "py-h2o"

    def reset(self, n, k):
        self.acc = np.zeros(n)
        self.recent = k - k // 2

    def observe(self, step, attention_row):
        self.acc += attention_row

    def evict(self, step, cache):
        eligible = cache[cache <= step - self.recent]
        return eligible[np.argmin(self.acc[eligible])]


def py_l2norm(step, cache, q, K, V):
    return -np.sqrt(np.sum(K.astype(np.float64) ** 2, axis=1))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=4096)
    parser.add_argument("--budget", type=int, default=819)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    w = subevict.generate("llama2-7b", tokens=args.tokens, seed=7)
    policies = ["h2o", PyH2O(), "l2norm:skip_first=0", subevict.ScorePolicy(py_l2norm, "py-l2norm")]
    times = {}
    for _ in range(args.repeats):
        [cell] = subevict.simulate(w, policies, budget=args.budget, kv_heads=0, optimum="none")
        p = cell["policies"]
        assert np.array_equal(p["h2o"]["evicted"], p["py-h2o"]["evicted"])
        assert np.array_equal(p["l2norm:skip_first=0"]["evicted"], p["py-l2norm"]["evicted"])
        for label, trace in p.items():
            times.setdefault(label, []).append(trace["step_seconds"])
    steps = args.tokens
    print(f"n = {args.tokens}, k = {args.budget}, llama2-7b layer 0 KV head 0, median of {args.repeats}")
    print("| policy | step time (s) | per step (us) | vs built-in |")
    print("|---|---|---|---|")
    base = {"h2o": "h2o", "py-h2o": "h2o", "l2norm:skip_first=0": "l2norm:skip_first=0",
            "py-l2norm": "l2norm:skip_first=0"}
    for label, values in times.items():
        t = statistics.median(values)
        ref = statistics.median(times[base[label]])
        print(f"| {label} | {t:.4f} | {1e6 * t / steps:.1f} | {t / ref:.1f}x |")


if __name__ == "__main__":
    main()
