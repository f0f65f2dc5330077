#!/usr/bin/env python3
"""End-to-end tests of `subevict simulate --schedules` and `--decisions` (docs/eviction.md,
"Recorded decisions"): exported schedules read back reproduce the h2o metrics and OPT, the overlap
with the optimum's cache agrees with a restatement from the exported schedules, and every malformed
schedule fails with one line naming the file and the first bad step.

Usage: simulate_decisions_test.py PATH_TO_SUBEVICT   (stdlib only; any python3)
"""
import csv
import json
import os
import struct
import subprocess
import sys
import tempfile
import unittest

BIN = None
N = 48  # tokens of every run; budget 0.25 -> k = 12
K = 12
COMMON = ["--preset", "tiny-gqa", "--tokens", str(N), "--layers", "0-1", "--budget", "0.25", "--no-plots",
          "--quiet"]


def run(*args):
    result = subprocess.run([BIN, *args], capture_output=True, timeout=600)
    result.stdout = result.stdout.decode("utf-8")
    result.stderr = result.stderr.decode("utf-8")
    return result


def write_npy(path, shape, values, descr="<i8"):
    """A .npy (format 1.0, C order) of integers or bools without numpy."""
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (descr, "".join("%d, " % d for d in shape))
    header += " " * (63 - (10 + len(header)) % 64) + "\n"
    code = {"<i8": "q", "<i4": "i", "|b1": "B", "|u1": "B", "<f8": "d"}[descr]
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("ascii"))
        f.write(struct.pack("<%d%s" % (len(values), code), *values))


def read_npy_int64(path):
    """(shape, values) of an '<i8' .npy as subevict writes it."""
    with open(path, "rb") as f:
        data = f.read()
    assert data[:6] == b"\x93NUMPY"
    length = struct.unpack("<H", data[8:10])[0]
    header = data[10:10 + length].decode("ascii")
    assert "'descr': '<i8'" in header and "'fortran_order': False" in header, header
    shape = tuple(int(d) for d in header.split("(")[1].split(")")[0].split(",") if d.strip())
    count = 1
    for d in shape:
        count *= d
    return shape, list(struct.unpack("<%dq" % count, data[10 + length:10 + length + 8 * count]))


def rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


class SimulateDecisionsTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def path(self, name):
        return os.path.join(self.dir, name)

    def simulate(self, out, *extra):
        r = run("simulate", *COMMON, "-o", self.path(out), *extra)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r

    def export(self):
        """Runs h2o and local with --schedules; returns the output directory."""
        self.simulate("exported", "--policies", "h2o,local", "--schedules")
        return self.path("exported")

    def test_exported_h2o_and_optimum_schedules_read_back_reproduce_their_metrics(self):
        out = self.export()
        doc = json.load(open(os.path.join(out, "results.json")))
        files = {(f["policy"], f["budget"]): f["file"] for f in doc["schedule_files"]}
        self.assertEqual(set(files), {("h2o", 0.25), ("local", 0.25), ("OPT", 0.25)})
        shape, steps = read_npy_int64(os.path.join(out, files[("h2o", 0.25)]))
        self.assertEqual(shape, (2, 2, N))
        for l in range(2):
            for h in range(2):
                row = steps[(l * 2 + h) * N:(l * 2 + h + 1) * N]
                self.assertTrue(all(j <= e <= N for j, e in enumerate(row)), row)
        # Read back as decisions (copied so the labels are recorded:h2o and recorded:opt).
        for name, source in (("h2o.npy", "h2o"), ("opt.npy", "OPT")):
            with open(os.path.join(out, files[(source, 0.25)]), "rb") as f, open(self.path(name), "wb") as g:
                g.write(f.read())
        self.simulate("replayed", "--policies", "h2o", "--decisions", self.path("h2o.npy"), "--decisions",
                      self.path("opt.npy"))
        summary = rows(os.path.join(self.path("replayed"), "summary.csv"))
        by = {(r["layer"], r["kv_head"], r["policy"]): r for r in summary}
        metrics = ["total_retained_mass", "mean_retained_mass", "mean_output_error", "gap_to_optimum"]
        for l in "01":
            for h in "01":
                built_in, recorded, opt = by[(l, h, "h2o")], by[(l, h, "recorded:h2o")], by[(l, h, "recorded:opt")]
                for m in metrics:
                    self.assertEqual(recorded[m], built_in[m], (l, h, m))  # as printed: every digit
                self.assertAlmostEqual(float(opt["total_retained_mass"]), float(opt["optimum_total"]), delta=1e-9)
                self.assertLess(abs(float(opt["gap_to_optimum"])), 1e-9)
        steps_csv = rows(os.path.join(self.path("replayed"), "steps.csv"))
        per_step = {(r["layer"], r["kv_head"], r["step"], r["policy"]): r["retained_mass"] for r in steps_csv}
        for (l, h, i, p), v in per_step.items():
            if p == "recorded:h2o":
                self.assertEqual(v, per_step[(l, h, i, "h2o")])
        replayed = json.load(open(os.path.join(self.path("replayed"), "results.json")))
        self.assertIn("recorded:h2o", replayed["policies"])
        self.assertEqual(replayed["policy_parameters"]["recorded:opt"]["admission"], "exact")
        self.assertTrue(replayed["decomposition_holds"])

    def test_overlap_with_the_optimum_matches_a_restatement_from_the_schedules(self):
        out = self.export()
        doc = json.load(open(os.path.join(out, "results.json")))
        files = {f["policy"]: f["file"] for f in doc["schedule_files"]}
        _, opt = read_npy_int64(os.path.join(out, files["OPT"]))
        overlap = rows(os.path.join(out, "overlap.csv"))
        steps = {(r["layer"], r["kv_head"], r["step"], r["policy"]): float(r["retained_mass"])
                 for r in rows(os.path.join(out, "steps.csv"))}
        checked = 0
        for policy in ("h2o", "local"):
            _, mine = read_npy_int64(os.path.join(out, files[policy]))
            for r in (r for r in overlap if r["policy"] == policy):
                l, h, i = int(r["layer"]), int(r["kv_head"]), int(r["step"])
                base = (l * 2 + h) * N
                # G_i = {i} and every earlier token not yet evicted before step i (e_j >= i).
                g_mine = {j for j in range(i) if mine[base + j] >= i} | {i}
                g_opt = {j for j in range(i) if opt[base + j] >= i} | {i}
                self.assertAlmostEqual(float(r["jaccard_to_optimum"]), len(g_mine & g_opt) / len(g_mine | g_opt),
                                       delta=1e-9)
                # The masses decompose the per-step gap to the optimum.
                gap = steps[(r["layer"], r["kv_head"], r["step"], policy)] - steps[(r["layer"], r["kv_head"], r["step"], "OPT")]
                self.assertAlmostEqual(float(r["policy_only_mass"]) - float(r["optimum_only_mass"]), gap, delta=1e-8)
                if g_mine == g_opt:
                    self.assertEqual(float(r["policy_only_mass"]), 0.0)
                checked += 1
        self.assertEqual(checked, 2 * 4 * N)
        for r in rows(os.path.join(out, "summary.csv")):
            per_step = (float(r["mean_policy_only_mass"]) - float(r["mean_optimum_only_mass"]))
            self.assertAlmostEqual(per_step, -float(r["gap_to_optimum"]) / N, delta=1e-9)
            self.assertTrue(0 < float(r["mean_jaccard_to_optimum"]) <= 1)

    def test_a_shared_record_and_a_keep_mask_apply_to_every_head(self):
        # local at k = 12 as one (n,) vector: token j leaves at step j + 12.
        window = [min(j + K, N) for j in range(N)]
        write_npy(self.path("window.npy"), (N,), window)
        mask = [1 if j <= i < window[j] else 0 for i in range(N) for j in range(N)]
        write_npy(self.path("window_mask.npy"), (N, N), mask, "|b1")
        # A further budget runs the built-in policies only: the record is evaluated at the main budget.
        self.simulate("shared", "--policies", "local", "--decisions", self.path("window.npy"), "--decisions",
                      self.path("window_mask.npy"), "--budgets", "0.5")
        summary = rows(os.path.join(self.path("shared"), "summary.csv"))
        self.assertEqual({r["budget"] for r in summary if r["policy"].startswith("recorded:")}, {"0.25"})
        self.assertEqual({r["budget"] for r in summary if r["policy"] == "local"}, {"0.25", "0.5"})
        by = {(r["layer"], r["kv_head"], r["policy"]): r for r in summary if r["budget"] == "0.25"}
        for l in "01":
            for h in "01":
                for label in ("recorded:window", "recorded:window_mask"):
                    self.assertEqual(by[(l, h, label)]["total_retained_mass"], by[(l, h, "local")]["total_retained_mass"])

    def test_malformed_schedules_fail_with_one_line_naming_the_first_bad_step(self):
        never = [N] * N
        local = [min(j + K, N) for j in range(N)]
        before = list(local)
        before[20] = 5  # token 20 evicted at step 5
        over = list(local)
        over[3] = N  # token 3 never leaves: the cache holds 13 after step 15
        early = list(local)
        early[2] = 4  # evicted at step 4 while the cache holds 4 < 12
        twice = list(local)
        twice[3], twice[4] = 15, 15  # step 15 evicts 3 and 4 (and step 16 nothing: over budget there)
        minus = list(local)
        minus[7] = -1
        cases = [
            ("before", (N,), before, "<i8", "step 5: expected only tokens that have arrived evicted at step 5",
             "token 20 evicted at step 5 before it arrives"),
            ("over", (N,), over, "<i8", "step 15: expected a cache of at most k = 12 tokens", "13 tokens after step 15"),
            ("early", (N,), early, "<i4", "step 4: expected no eviction while the cache holds fewer than k = 12",
             "got token 2 evicted"),
            ("twice", (N,), twice, "<i8", "step 15: expected exactly one eviction per step once the cache is full",
             "2 evictions (tokens 3 and 4)"),
            ("minus", (N,), minus, "<i8", "token 7: expected an eviction step in [7, 48]", "write n, not -1"),
            ("never", (N,), never, "<i8", "step 12: expected a cache of at most k = 12 tokens", "nothing evicted"),
            ("short", (N - 1,), local[:-1], "<i8", "tokens: expected n = 48 (the workload's), got 47", ""),
            ("heads", (2, 3, N), local * 6, "<i8", "KV heads: expected 2 (the workload's), got 3", ""),
            ("layers", (1, 2, N), local * 2, "<i8", "layers: expected a record of every selected layer (layer 1)", ""),
            ("floats", (N,), [float(e) for e in local], "<f8", "descr: expected an integer or bool dtype", "'<f8'"),
            ("rank", (1, N), local, "<i8", "shape: expected a keep mask square in its last two axes", "(1, 48)"),
        ]
        # A keep mask in which token 0 is evicted at step 12 and comes back at step 13.
        mask = [1 if j <= i < local[j] else 0 for i in range(N) for j in range(N)]
        mask[13 * N + 0] = 1
        mask[13 * N + 1] = 0  # keep the size at 12
        cases.append(("returns", (N, N), mask, "|b1",
                      "step 13: expected an evicted token never returns (each token is evicted at most once)",
                      "token 0 back in the cache at step 13 after its eviction at step 12"))
        for name, shape, values, descr, *needles in cases:
            path = self.path(name + ".npy")
            write_npy(path, shape, values, descr)
            out = self.path("sim")
            r = run("simulate", *COMMON, "--policies", "local", "--decisions", path, "-o", out)
            self.assertEqual(r.returncode, 2, (name, r.stderr))
            lines = [line for line in r.stderr.splitlines() if line.strip()]
            self.assertEqual(len(lines), 1, (name, r.stderr))
            self.assertIn(path, lines[0], name)
            for needle in needles:
                self.assertIn(needle, lines[0], name)
            self.assertFalse(os.path.exists(out), name)
        # Per-head files name the (layer, KV head) of the bad record.
        write_npy(self.path("per_head.npy"), (2, 2, N), local * 3 + before)
        r = run("simulate", *COMMON, "--decisions", self.path("per_head.npy"), "-o", self.path("sim"))
        self.assertEqual(r.returncode, 2)
        self.assertIn("per_head.npy layer 1 KV head 1: step 5:", r.stderr)
        # Two files with one name.
        os.makedirs(self.path("other"))
        write_npy(self.path("other/window.npy"), (N,), local)
        write_npy(self.path("window.npy"), (N,), local)
        r = run("simulate", *COMMON, "--decisions", self.path("window.npy"), "--decisions",
                self.path("other/window.npy"), "-o", self.path("sim"))
        self.assertEqual(r.returncode, 2)
        self.assertIn("--decisions: expected files with distinct names", r.stderr)

    def test_early_evictions_are_converted_only_when_asked_and_the_run_says_so(self):
        early = [min(j + K, N) for j in range(N)]
        early[2] = 4
        write_npy(self.path("early.npy"), (N,), early)
        r = self.simulate("converted", "--policies", "local", "--decisions", self.path("early.npy"),
                          "--decisions-to-process")
        self.assertIn("recorded:early: not a process schedule on 4 head(s); evaluated after conversion", r.stdout)
        doc = json.load(open(os.path.join(self.path("converted"), "results.json")))
        self.assertEqual(doc["policy_parameters"]["recorded:early"]["admission"], "to-process")
        for head in doc["heads"]:
            self.assertGreater(head["policies"]["recorded:early"]["converted_tokens"], 0)
            self.assertNotIn("converted_tokens", head["policies"]["local"])


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: simulate_decisions_test.py PATH_TO_SUBEVICT")
    BIN = os.path.abspath(sys.argv.pop(1))
    result = unittest.main(exit=False, verbosity=1).result
    failed = len(result.failures) + len(result.errors)
    print(f"simulate_decisions_test: {result.testsRun - failed} passed, {failed} failed")
    sys.exit(1 if failed else 0)
