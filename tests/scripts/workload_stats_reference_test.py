#!/usr/bin/env python3
"""Pins `subevict workload inspect` (core/workload_stats.cpp) against an independent NumPy
computation of every statistic, per head and per layer, on generated workloads that have the
structures the statistics measure (dense sink-free layers, sink layers, GQA).

Run from the repository root with Debian's Python (numpy, scipy):

    /usr/bin/python3 tests/scripts/workload_stats_reference_test.py --subevict build/bin/subevict
"""

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import unittest

import numpy as np
from scipy.stats import rankdata

SUBEVICT = None  # set from --subevict
TAU = 0.01
SINKS = 4
RECENT = 32
WIDE = 256  # InspectOptions::wide_recent_window; at most n // 2 keys are used
TOP = 0.1
FIRST_FROM = 64
LATE_ROWS = 64
SINK_HEAD = 0.3
# Sums over up to n^2 / 2 entries in another order: agreement to about n^2 ulps.
SINK_TOKEN_FLOOR = 0.35  # core/workload_stats.hpp kSinkTokenFloor
TOL = 1e-9


def causal_attention(q, k, scale):
    """Row-stochastic causal softmax of scale * q k^T in float64, by log-sum-exp."""
    s = scale * (q.astype(np.float64) @ k.astype(np.float64).T)
    n = s.shape[0]
    s[np.triu_indices(n, 1)] = -np.inf
    s -= s.max(axis=1, keepdims=True)
    a = np.exp(s)
    return a / a.sum(axis=1, keepdims=True)


def top_share(values, fraction):
    values = np.sort(np.asarray(values))[::-1]
    top = math.ceil(fraction * len(values))
    return values[:top].sum() / values.sum()


def power_law(accumulated, max_rank):
    values = np.sort(accumulated)[::-1]
    m = min(int((values > 0).sum()), max_rank)
    x, y = np.log(np.arange(1, m + 1)), np.log(values[:m])
    slope, _ = np.polyfit(x, y, 1)
    r = np.corrcoef(x, y)[0, 1]
    return -slope, r * r


def spearman(x, y):
    return np.corrcoef(rankdata(x), rankdata(y))[0, 1]


def recency_slope(q, k, scale):
    """Logits per doubling of distance: the mean score at distances [a, 2a) minus that at [F/2, F)."""
    s = scale * (q.astype(np.float64) @ k.astype(np.float64).T)
    n = s.shape[0]
    far = min(WIDE, n // 2)
    near = max(1, far // 32)
    if far < 4 or far - 1 + SINKS >= n:
        return 0.0
    diffs = [np.mean([s[i, i - d] for d in range(near, 2 * near)]) -
             np.mean([s[i, i - d] for d in range(far // 2, far)]) for i in range(far - 1 + SINKS, n)]
    return np.mean(diffs) / math.log2((far // 2) / near)


def sink_token_rate(a, wide):
    """Share of the keys [SINKS, n - wide) whose mean weight against their row's largest, over the
    queries at least RECENT after them, is at least SINK_TOKEN_FLOOR of the strongest key's."""
    n = a.shape[0]
    keys = n - wide
    relative = a / a.max(axis=1, keepdims=True)
    far = np.array([relative[j + RECENT:, j].mean() if j + RECENT < n else 0.0 for j in range(keys)])
    if far.max() <= 0 or keys <= SINKS:
        return 0.0
    return float((far[SINKS:] >= SINK_TOKEN_FLOOR * far.max()).sum()) / (keys - SINKS)


def head_statistics(q, k, scale):
    """Every HeadStatistics field of one head, from its definition."""
    a = causal_attention(q, k, scale)
    n = a.shape[0]
    rows = np.arange(n)
    below = sum(int((a[i, :i + 1] < TAU * a[i, :i + 1].max()).sum()) for i in range(n))
    accumulated = a.sum(axis=0)
    middle = np.arange(SINKS, n - RECENT)
    received = accumulated[middle] / (n - middle)
    exponent, r2 = power_law(accumulated[SINKS:], n // 2)
    first_from = min(FIRST_FROM, n // 2)
    late_from = n - min(LATE_ROWS, n // 2)
    wide = min(WIDE, n // 2)
    lowest = np.argsort(np.linalg.norm(k.astype(np.float64), axis=1), kind="stable")[:math.ceil(TOP * n)]
    return {
        "sparsity": below / (n * (n + 1) / 2),
        "sink_mass": a[SINKS:, :SINKS].sum(axis=1).mean(),
        "recent_mass": np.mean([a[i, i - RECENT + 1:i + 1].sum() for i in rows[RECENT:]]),
        "power_law_exponent": exponent,
        "power_law_r2": r2,
        "heavy_share": top_share(received, TOP),
        "norm_attention_spearman": spearman(np.linalg.norm(k[middle].astype(np.float64), axis=1),
                                            received),
        "first_token_mass": a[first_from:, 0].mean(),
        "late_first_token_mass": a[late_from:, 0].mean(),
        "received_top_share": top_share(accumulated, TOP),
        "wide_recent_mass": np.mean([a[i, i - wide + 1:i + 1].sum() for i in rows[wide:]]),
        "low_norm_share": accumulated[lowest].sum() / accumulated.sum(),
        "recency_slope": recency_slope(q, k, scale),
        "sink_token_rate": sink_token_rate(a, wide),
        "sparsity_entries": n * (n + 1) / 2,
    }


class InspectAgainstNumpy(unittest.TestCase):
    def run_case(self, *generate_args):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "w")
            subprocess.run([SUBEVICT, "workload", "generate", *generate_args, "-o", out], check=True,
                           capture_output=True)
            report = os.path.join(tmp, "stats.json")
            subprocess.run([SUBEVICT, "workload", "inspect", out, "--json", report, "--quiet"],
                           check=True, capture_output=True)
            with open(report) as stream:
                doc = json.load(stream)
            q, k = np.load(os.path.join(out, "q.npy")), np.load(os.path.join(out, "k.npy"))
        layers, q_heads, _, head_dim = q.shape
        group = q_heads // k.shape[1]
        scale = doc["score_scale"]
        self.assertAlmostEqual(scale, 1 / math.sqrt(head_dim), places=12)
        expected = {}
        for head in doc["heads"]:
            layer, h = head["layer"], head["q_head"]
            ref = head_statistics(q[layer, h], k[layer, h // group], scale)
            expected[(layer, h)] = ref
            for name, value in ref.items():
                if name == "sparsity_entries":
                    continue
                # An entry within rounding of tau * max may fall either way: allow two per head.
                tol = 2 / ref["sparsity_entries"] if name == "sparsity" else TOL
                self.assertLess(abs(head[name] - value), tol, f"layer {layer} head {h} {name}")
        for row in doc["layers"]:
            members = [v for (layer, _), v in expected.items() if layer == row["layer"]]
            self.assertEqual(row["heads"], len(members))
            rate = np.mean([m["late_first_token_mass"] > SINK_HEAD for m in members])
            self.assertEqual(row["sink_head_rate"], rate, f"layer {row['layer']}")
            for name in ("first_token_mass", "received_top_share", "recent_mass", "wide_recent_mass",
                         "low_norm_share", "recency_slope", "sink_token_rate"):
                self.assertLess(abs(row["mean"][name] - np.mean([m[name] for m in members])), TOL)
        return doc

    def test_llama2_profile_dense_and_sink_layers(self):
        doc = self.run_case("--preset", "llama2-7b", "--layers", "3", "--tokens", "160", "--seed",
                            "3")
        rates = {row["layer"]: row["sink_head_rate"] for row in doc["layers"]}
        self.assertEqual(rates[0], 0.0)  # the profile's dense, sink-free first layers
        self.assertGreater(rates[2], 0.5)  # and a sink layer: both sides of the threshold occur

    def test_later_sink_tokens(self):
        # 3% of the later tokens keyed as the first one: sink_token_rate counts a share of them.
        doc = self.run_case("--preset", "mistral-7b", "--uniform-layers", "--layers", "1", "--tokens",
                            "300", "--seed", "7", "--sinks", "1", "--sink-logit", "8", "--exact-sinks", "1",
                            "--sink-token-rate", "0.03")
        self.assertGreater(doc["layers"][0]["mean"]["sink_token_rate"], 0.0)

    def test_gqa_uniform_generator(self):
        self.run_case("--preset", "mistral-7b", "--uniform-layers", "--layers", "1", "--tokens",
                      "150", "--seed", "5")


def main():
    global SUBEVICT
    parser = argparse.ArgumentParser()
    parser.add_argument("--subevict", required=True)
    args, rest = parser.parse_known_args()
    SUBEVICT = os.path.abspath(args.subevict)
    unittest.main(argv=[sys.argv[0], *rest])


if __name__ == "__main__":
    main()
