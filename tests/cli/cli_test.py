#!/usr/bin/env python3
"""End-to-end tests of the subevict executable: usage, outputs, determinism and bad input.

Usage: cli_test.py PATH_TO_SUBEVICT   (stdlib only; any python3)
"""
import csv
import itertools
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import unittest

BIN = None
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run(*args):
    result = subprocess.run([BIN, *args], capture_output=True, timeout=600)
    # Decoding strictly makes a non-UTF-8 byte in any message a test failure.
    result.stdout = result.stdout.decode("utf-8")
    result.stderr = result.stderr.decode("utf-8")
    return result


def write_npy(path, shape, values):
    """A little-endian float64 .npy (format 1.0, C order) without numpy."""
    import struct
    header = "{'descr': '<f8', 'fortran_order': False, 'shape': (%s), }" % "".join(
        "%d, " % d for d in shape)
    header += " " * (63 - (10 + len(header)) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("ascii"))
        f.write(struct.pack("<%dd" % len(values), *values))



def edit_metadata(path, set_keys=None, drop_keys=()):
    """Rewrites a safetensors workload's __metadata__: sets `set_keys`, drops `drop_keys`."""
    with open(path, "rb") as f:
        size = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(size))
        data = f.read()
    metadata = header.setdefault("__metadata__", {})
    for key in drop_keys:
        metadata.pop(key, None)
    metadata.update(set_keys or {})
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(len(text).to_bytes(8, "little") + text + data)


CURVE_HEADER = ("layer,kv_head,budget_size,optimum_lower_bound,optimum_upper_bound,status,curve_seconds,"
                "tokens,head_sha256")


def write_curves(path, curves, tokens):
    """A budget_curve.csv of exact curves {(layer, kv_head): [OPT(1), ..., OPT(K)]} (no workload:
    for allocate, which reads the curves alone)."""
    with open(path, "w") as f:
        f.write(CURVE_HEADER + "\n")
        for (layer, kv), values in curves.items():
            for k, v in enumerate(values, 1):
                f.write(f"{layer},{kv},{k},{v!r},{v!r},optimal,0,{tokens},{'0' * 64}\n")


def safetensors_head_sha256(path, layer, kv_head):
    """The head_sha256 of (layer, kv_head) of a safetensors workload, from the file's bytes:
    SHA-256 of g, n, d (int32), the group's Q heads, K, V (float32, as stored), the score scale
    (double) and the window (int32), all little-endian (docs/allocation.md)."""
    import hashlib
    import struct
    with open(path, "rb") as f:
        size = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(size))
        data = f.read()
    metadata = header["__metadata__"]
    q, k, v = (header[f"layers.{layer}.{part}"] for part in "qkv")
    q_heads, n, d = q["shape"]
    g = q_heads // k["shape"][0]
    head = n * d * 4
    windows = [int(w) for w in metadata.get("attention_windows", "").split(",") if w]
    digest = hashlib.sha256(struct.pack("<iii", g, n, d))
    digest.update(data[q["data_offsets"][0] + kv_head * g * head:][:g * head])
    for tensor in (k, v):
        digest.update(data[tensor["data_offsets"][0] + kv_head * head:][:head])
    digest.update(struct.pack("<d", float(metadata["score_scale"])))
    digest.update(struct.pack("<i", windows[layer] if windows else 0))
    return digest.hexdigest()


def drop_generator_metadata(path):
    """Rewrites a safetensors workload without the generator's provenance (as imported tensors)."""
    edit_metadata(path, drop_keys=("generator", "preset", "profile", "seed"))

class CliTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def path(self, name):
        return os.path.join(self.dir, name)

    def assert_one_line_error(self, result, *needles):
        self.assertNotEqual(result.returncode, 0, result.stdout)
        lines = [l for l in result.stderr.splitlines() if l.strip()]
        self.assertEqual(len(lines), 1, result.stderr)
        self.assertTrue(lines[0].isprintable(), lines[0])
        for needle in needles:
            self.assertIn(needle, lines[0])

    def generate(self, out, *extra):
        r = run("workload", "generate", "--preset", "tiny-gqa", "--tokens", "64", "--layers", "2",
                "--seed", "5", "-o", out, *extra)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r

    def inspect(self, target):
        out = self.path("inspect.json")
        r = run("workload", "inspect", target, "--json", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(out) as f:
            return json.load(f)

    def test_help_everywhere(self):
        for args in ([], ["workload"], ["workload", "generate"], ["workload", "inspect"], ["verify"]):
            r = run(*args, "--help")
            self.assertEqual(r.returncode, 0, args)
            self.assertIn("Usage", r.stdout)

    def test_generate_then_inspect_reports_the_shape_and_every_head(self):
        f = self.path("w.safetensors")
        self.generate(f)
        doc = self.inspect(f)
        self.assertEqual(doc["shape"], {"layers": 2, "q_heads": 4, "kv_heads": 2, "tokens": 64,
                                        "head_dim": 8, "attention": "GQA"})
        self.assertEqual(len(doc["heads"]), 8)
        self.assertEqual([h["kv_head"] for h in doc["heads"][:4]], [0, 0, 1, 1])
        for h in doc["heads"]:
            for key in ("sparsity", "sink_mass", "recent_mass", "heavy_share"):
                self.assertGreaterEqual(h[key], 0.0)
                self.assertLessEqual(h[key], 1.0)
        self.assertEqual(doc["metadata"]["seed"], "5")

    def test_generation_is_deterministic_and_both_formats_agree(self):
        a, b, d = self.path("a.safetensors"), self.path("b.safetensors"), self.path("npy")
        self.generate(a)
        self.generate(b, "--threads", "1")
        with open(a, "rb") as fa, open(b, "rb") as fb:
            self.assertEqual(fa.read(), fb.read())
        self.generate(d)
        self.assertEqual(sorted(os.listdir(d)), ["k.npy", "q.npy", "v.npy"])
        self.assertEqual(self.inspect(a)["heads"], self.inspect(d)["heads"])

    def test_backends_generate_identical_files_and_simulate_identically(self):
        files = {}
        for backend in ("reference", "portable"):
            files[backend] = self.path(f"{backend}.safetensors")
            self.generate(files[backend], "--backend", backend)
        with open(files["reference"], "rb") as fa, open(files["portable"], "rb") as fb:
            self.assertEqual(fa.read(), fb.read())
        rows = {}
        for backend in ("reference", "portable"):
            out = self.path(f"sim-{backend}")
            r = run("simulate", "--workload", files["reference"], "--budget", "0.2", "--optimum", "oracle",
                    "--policies", "h2o,local,streamingllm,l2norm,tova,random", "--no-plots",
                    "--backend", backend, "-o", out)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(os.path.join(out, "summary.csv")) as f:
                rows[backend] = [line.split(",") for line in f.read().splitlines()]
        self.assertEqual(len(rows["reference"]), len(rows["portable"]))
        for a, b in zip(rows["reference"], rows["portable"]):
            self.assertEqual(a[:6], b[:6])  # same heads, budgets and policies, in the same order
            for x, y in zip(a[6:], b[6:]):
                if x != y:  # numbers printed with 10 digits; the double simulations agree far below
                    self.assertAlmostEqual(float(x), float(y), places=8)
        out = self.path("bad.safetensors")
        r = run("workload", "generate", "--preset", "tiny", "--backend", "tpu", "-o", out)
        self.assertEqual(r.returncode, 2)
        self.assert_one_line_error(r, "backend", "tpu")
        self.assertFalse(os.path.exists(out))

    def test_rope_base_defaults_to_the_presets_and_can_be_overridden(self):
        f = self.path("l3.safetensors")
        for extra, expected in (([], "500000"), (["--rope-base", "1000"], "1000")):
            r = run("workload", "generate", "--preset", "llama3-8b", "--tokens", "48", "-o", f, *extra)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(self.inspect(f)["metadata"]["llm.rope_base"], expected)

    def test_structure_switch_changes_the_workload(self):
        a, b = self.path("a.safetensors"), self.path("b.safetensors")
        self.generate(a)
        self.generate(b, "--sink-logit", "0")
        self.assertGreater(self.inspect(a)["mean"]["sink_mass"], self.inspect(b)["mean"]["sink_mass"])

    def test_bad_arguments_fail_with_one_line_naming_the_input(self):
        out = self.path("x.safetensors")
        self.assert_one_line_error(run("workload", "generate", "--preset", "nope", "-o", out), "preset")
        self.assert_one_line_error(run("workload", "generate", "--preset", "tiny", "--tokens", "-3",
                                       "-o", out), "tokens")
        self.assert_one_line_error(run("workload", "generate", "--preset", "tiny", "--temperature",
                                       "0", "-o", out), "temperature")
        self.assertFalse(os.path.exists(out))
        self.assert_one_line_error(run("workload", "inspect", self.path("missing.safetensors")),
                                   "missing.safetensors")

    def test_fit_writes_a_profile_whose_twin_matches_the_printed_fit(self):
        real = self.path("real.safetensors")
        r = run("workload", "generate", "--preset", "tiny-gqa", "--tokens", "160", "--layers", "2",
                "--seed", "5", "--sink-logit", "9", "--sinks", "1", "-o", real)
        self.assertEqual(r.returncode, 0, r.stderr)
        profile, fit_json = self.path("twin.toml"), self.path("fit.json")
        start = time.monotonic()
        r = run("workload", "fit", real, "-o", profile, "--json", fit_json, "--seed", "3",
                "--evaluations", "6", "--name", "tiny twin")
        elapsed = time.monotonic() - start
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("2 layers", r.stdout)
        fit_stdout = r.stdout
        # Not a terminal: the first and the last line of each progress (at most one more every
        # 5 s), with elapsed time and ETA.
        measuring = [l for l in r.stderr.splitlines() if l.startswith("fit: measuring")]
        self.assertTrue(2 <= len(measuring) <= 2 + elapsed / 5, r.stderr)  # of 2 layers x 4 query heads
        self.assertIn(" 1/8 ", measuring[0])
        self.assertIn(" 8/8 ", measuring[-1])
        progress = [l for l in r.stderr.splitlines() if l.startswith("fit: ") and l not in measuring]
        self.assertEqual(len(progress), 2, r.stderr)
        self.assertIn("2/2 layers", progress[-1])
        self.assertIn("elapsed", progress[-1])
        with open(fit_json) as f:
            fit = json.load(f)
        self.assertEqual([l["layer"] for l in fit["layers"]], [0, 1])
        with open(profile) as f:
            text = f.read()
        self.assertIn('format = "subevict.profile.v1"', text)
        self.assertIn('name = "tiny twin"', text)
        twin = self.path("twin.safetensors")
        r = run("workload", "generate", "--profile", profile, "--tokens", "160", "--seed", "3",
                "-o", twin)
        self.assertEqual(r.returncode, 0, r.stderr)
        out = self.path("twin.json")
        r = run("workload", "inspect", twin, "--json", out, "--recent-window", "64", "--quiet")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stderr, "")  # --quiet: no progress
        with open(out) as f:
            measured = json.load(f)
        self.assertEqual(measured["shape"]["layers"], 2)  # --profile generates every layer
        # Without --wide-recent the five statistics; half of 160 tokens is not above twice the
        # 64-key window, so the one length.
        self.assertEqual(fit["statistics"], ["sparsity", "first_token_mass", "received_top_share",
                                             "recent_mass", "norm_attention_spearman"])
        self.assertEqual(fit["lengths"], [160])
        self.assertIn("at every fitted length (160 tokens)", fit_stdout)
        for layer, row in zip(fit["layers"], measured["layers"], strict=True):
            for name in fit["statistics"]:
                self.assertAlmostEqual(layer[name]["twin"], row["mean"][name], places=12,
                                       msg=f"layer {layer['layer']} {name}")
        # --low-norm adds the lowest-norm tenth's share, fitted by salient_low_norm.
        low_json = self.path("low.json")
        r = run("workload", "fit", real, "-o", self.path("low.toml"), "--json", low_json, "--seed", "3",
                "--evaluations", "2", "--quiet", "--low-norm")
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(low_json) as f:
            low = json.load(f)
        self.assertEqual(low["statistics"], fit["statistics"] + ["low_norm_share"])
        for layer in low["layers"]:
            self.assertIn("low_norm_share", layer)

    def fitted_twin_parameter(self, real, name, layers, *extra):
        """Parameter `name` in each of the `layers` layers of the twin that `workload fit REAL
        *extra` writes, read back from the twin's metadata (generated at 80 tokens)."""
        profile = self.path("twin.toml")
        r = run("workload", "fit", real, "-o", profile, "--evaluations", "1", "--quiet", *extra)
        self.assertEqual(r.returncode, 0, r.stderr)
        r = run("workload", "generate", "--profile", profile, "--tokens", "80",
                "-o", self.path("twin.safetensors"))
        self.assertEqual(r.returncode, 0, r.stderr)
        meta = self.inspect(self.path("twin.safetensors"))["metadata"]
        if f"llm.{name}" in meta:
            return [float(meta[f"llm.{name}"])] * layers
        return json.loads(meta["llm.per_layer"])[name]

    def test_fit_gives_each_twin_layer_the_rope_base_its_file_records(self):
        real = self.path("real.safetensors")
        r = run("workload", "generate", "--preset", "tiny-gqa", "--tokens", "160", "--layers", "2",
                "-o", real)
        self.assertEqual(r.returncode, 0, r.stderr)
        drop_generator_metadata(real)
        edit_metadata(real, {"rope_base": "1000000.0", "rope_bases": "10000.0,1000000.0"})

        self.assertEqual(self.fitted_twin_parameter(real, "rope_base", 2), [1e4, 1e6])
        # The option overrides the file.
        self.assertEqual(self.fitted_twin_parameter(real, "rope_base", 2, "--rope-base", "500"), [500, 500])
        for bad in ("10000.0", "10000.0,x", "10000.0,1"):
            edit_metadata(real, {"rope_bases": bad})
            self.assert_one_line_error(
                run("workload", "fit", real, "-o", self.path("bad.toml"), "--evaluations", "1"),
                "rope_bases", "one RoPE base > 1 per layer (2)")
            self.assertFalse(os.path.exists(self.path("bad.toml")))

    def test_fit_gives_the_twin_later_sink_tokens_with_sink_tokens(self):
        # A workload whose first token and 3% of the later ones are sinks alike: --sink-tokens gives
        # the twin the measured share of them, without it the twin has the first token alone.
        real = self.path("real.safetensors")
        r = run("workload", "generate", "--preset", "tiny-gqa", "--tokens", "400", "--layers", "1",
                "--sinks", "1", "--sink-logit", "9", "--exact-sinks", "1", "--sink-token-rate", "0.03",
                "-o", real)
        self.assertEqual(r.returncode, 0, r.stderr)
        drop_generator_metadata(real)
        self.assertEqual(self.fitted_twin_parameter(real, "sink_token_rate", 1), [0.0])
        (rate,) = self.fitted_twin_parameter(real, "sink_token_rate", 1, "--sink-tokens")
        self.assertGreater(rate, 0.015)

    def budget_curves(self, length=12, *extra, name="sim", tokens=40):
        """budget_curve.csv of simulate --budget-curve LENGTH on 2 layers x 2 KV heads, and its
        curves {(layer, kv_head): [OPT(1), ..., OPT(K)]}."""
        out = self.path(name)
        r = run("simulate", "--preset", "tiny-gqa", "--tokens", str(tokens), "--layers", "0-1", "--budget", "4",
                "--budget-curve", str(length), "--policies", "h2o", "--no-plots", "-o", out, *extra)
        self.assertEqual(r.returncode, 0, r.stderr)
        path = os.path.join(out, "budget_curve.csv")
        curves = {}
        with open(path) as f:
            for row in list(csv.DictReader(f)):
                curves.setdefault((int(row["layer"]), int(row["kv_head"])), []).append(
                    float(row["optimum_lower_bound"]))
        return path, curves

    def allocation(self, out):
        with open(os.path.join(out, "allocation.csv")) as f:
            return {(int(r["layer"]), int(r["kv_head"])): int(r["budget"]) for r in csv.DictReader(f)}

    def test_allocate_splits_the_budget_as_exhaustive_search_does(self):
        path, curves = self.budget_curves()
        heads = sorted(curves)
        self.assertEqual(len(heads), 4)
        length = len(curves[heads[0]])
        for mean in (2, 5):
            total = mean * len(heads)
            uniform = sum(c[mean - 1] for c in curves.values())
            # by head: against every tuple of per-head budgets
            out = self.path(f"head{mean}")
            r = run("allocate", path, "--budget", str(mean), "-o", out)
            self.assertEqual(r.returncode, 0, r.stderr)
            got = self.allocation(out)
            self.assertEqual(sum(got.values()), total)
            value = sum(curves[h][got[h] - 1] for h in heads)
            best = max(sum(curves[h][k - 1] for h, k in zip(heads, ks))
                       for ks in itertools.product(range(1, length + 1), repeat=len(heads))
                       if sum(ks) == total)
            self.assertAlmostEqual(value, best, delta=1e-9 * best)
            self.assertGreaterEqual(value, uniform - 1e-9 * uniform)
            self.assertIn("over uniform", r.stdout)
            self.assertTrue(os.path.exists(os.path.join(out, "allocation.gp")))
            # by layer: one budget per layer, against every pair of layer budgets
            out = self.path(f"layer{mean}")
            r = run("allocate", path, "--budget", str(mean), "--by", "layer", "-o", out)
            self.assertEqual(r.returncode, 0, r.stderr)
            got = self.allocation(out)
            self.assertEqual(got[(0, 0)], got[(0, 1)])
            self.assertEqual(got[(1, 0)], got[(1, 1)])
            layer_best = max(sum(curves[h][(a if h[0] == 0 else b) - 1] for h in heads)
                             for a in range(1, length + 1) for b in range(1, length + 1)
                             if 2 * (a + b) == total)
            self.assertAlmostEqual(sum(curves[h][got[h] - 1] for h in heads), layer_best,
                                   delta=1e-9 * layer_best)
        # two classes: streaming heads keep 2, full heads the curves' 12; against every subset
        out = self.path("classes")
        r = run("allocate", path, "--budget", "5", "--by", "classes", "--low", "2", "-o", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        got = self.allocation(out)
        self.assertTrue(set(got.values()) <= {2, length})
        best = max(sum(curves[h][(length if full else 2) - 1] for h, full in zip(heads, mask))
                   for mask in itertools.product((False, True), repeat=len(heads))
                   if sum(length if full else 2 for full in mask) <= 20)
        self.assertAlmostEqual(sum(curves[h][got[h] - 1] for h in heads), best, delta=1e-9 * best)

    def test_allocate_refuses_bad_input_naming_it(self):
        path, _ = self.budget_curves()
        out = self.path("a")
        self.assert_one_line_error(run("allocate", path, "--budget", "4", "--low", "2", "-o", out), "--low")
        self.assert_one_line_error(run("allocate", path, "--budget", "4", "--by", "classes", "-o", out), "--low")
        self.assert_one_line_error(run("allocate", path, "--budget", "13", "-o", out), "total budget")
        with open(path) as f:
            text = f.read()
        bad = self.path("bad.csv")
        for broken, needle in ((text.replace("optimum_lower_bound", "lower"), "header"),
                               (text.replace(",optimal,", ",feasible,", 1), "exact points"),
                               (text.replace("\n0,0,2,", "\n0,0,3,", 1), "budget_size")):
            with open(bad, "w") as f:
                f.write(broken)
            self.assert_one_line_error(run("allocate", bad, "--budget", "4", "-o", out), "bad.csv", needle)
        self.assertFalse(os.path.exists(out))

    def assert_refused(self, result, out, *needles):
        """Exit 2, one line naming each needle, and no output directory."""
        self.assert_one_line_error(result, *needles)
        self.assertEqual(result.returncode, 2, result.stderr)
        self.assertFalse(os.path.exists(out), result.stderr)

    def test_allocate_refuses_curves_it_would_allocate_wrongly_naming_the_row(self):
        out = self.path("a")
        # Increments that grow by 0.9e-6 at every step, just under the slack of a curve at 1000:
        # the marginal rule would print 1000.0998, below the uniform 1000.1617 (the optimum,
        # every slot to head 0, is 1000.4478).
        drift = self.path("drift.csv")
        write_curves(drift, {(0, 0): [1000 + 0.9e-6 * (k - 1) * (k - 2) / 2 for k in range(1, 1001)],
                             (0, 1): [1e-4 * (k - 1) for k in range(1, 1001)]}, 1000)
        self.assert_refused(run("allocate", drift, "--budget", "500", "-o", out), out, "curve of head 0",
                            "concave", "k = 4")
        # A decreasing head (line 5: layer 0, KV head 1 at k = 2): by classes, both heads full,
        # it would get the whole budget: 6, where 9 is reachable.
        falling = self.path("falling.csv")
        write_curves(falling, {(0, 0): [3.0, 3.0], (0, 1): [6.0, 3.0]}, 2)
        for form in (("--by", "classes", "--low", "1"), ("--by", "head")):
            self.assert_refused(run("allocate", falling, "--budget", "2", *form, "-o", out), out,
                                "falling.csv", "line 5", "layer 0, KV head 1", "never decreases")
        # A head's rows once more (4 heads of 12 budgets on lines 2-49): as a fifth head before.
        path, _ = self.budget_curves()
        with open(path) as f:
            lines = f.read().splitlines()
        twice = self.path("twice.csv")
        for extra in (lines[1:13], lines[1:2], lines[14:15]):
            with open(twice, "w") as f:
                f.write("\n".join(lines + extra) + "\n")
            self.assert_refused(run("allocate", twice, "--budget", "4", "-o", out), out, "twice.csv", "line 50",
                                "again", "line " + ("2" if extra[0] == lines[1] else "14"))
        # A head of a 64-token workload after the 40-token ones: curves of two workloads.
        long, _ = self.budget_curves(12, name="long", tokens=64)
        with open(long) as f:
            other = ["2" + line[1:] for line in f.read().splitlines()[1:13]]  # its layer 0 as layer 2
        mixed = self.path("mixed.csv")
        with open(mixed, "w") as f:
            f.write("\n".join(lines + other) + "\n")
        self.assert_refused(run("allocate", mixed, "--budget", "4", "-o", out), out, "mixed.csv",
                            "line 50 tokens", "expected 40", "got 64")

    def test_allocate_names_a_budget_it_cannot_take(self):
        path, _ = self.budget_curves()
        out = self.path("a")
        for value in ("0", "-5", "99999999999", "4.5", "four"):
            r = run("allocate", path, "--budget", value, "-o", out)
            self.assert_refused(r, out, "--budget", "got " + value)
            self.assertLess(len(r.stderr), 200, r.stderr)
            r = run("allocate", path, "--budget", "4", "--by", "classes", "--low", value, "-o", out)
            self.assert_refused(r, out, "--low", "got " + value)

    def test_counts_and_numbers_typed_wrong_are_one_line_and_exit_2(self):
        # workload fit's counts were checked by CLI11's positive-number range (exit 105 with a
        # 300-digit bound, exit 104 beyond the int range); a number CLI11 cannot convert exited 104.
        profile = self.path("twin.toml")
        for option in ("--seeds", "--evaluations"):
            for value in ("0", "-5", "99999999999", "four"):
                r = run("workload", "fit", self.path("absent.safetensors"), "-o", profile, option, value)
                self.assert_refused(r, profile, option, "expected an integer in [1, 2147483647]", "got " + value)
                self.assertLess(len(r.stderr), 200, r.stderr)
        r = run("simulate", "--preset", "tiny", "--tokens", "forty", "-o", self.path("sim"))
        self.assert_refused(r, self.path("sim"), "--tokens", "forty")

    def test_share_refuses_curves_of_another_workload_naming_both(self):
        path, _ = self.budget_curves()
        out = self.path("s")
        share = ("simulate", "--preset", "tiny-gqa", "--layers", "0-1", "--budget", "4", "--share", "layer",
                 "--share-rules", "uniform", "--policies", "h2o", "-o", out)
        # Another seed: every tensor differs. Both digests are named: the file's and the head's.
        seven, _ = self.budget_curves(12, "--seed", "7", name="seven")
        with open(path) as f, open(seven) as g:
            mine = next(csv.DictReader(f))["head_sha256"]
            theirs = next(csv.DictReader(g))["head_sha256"]
        self.assertNotEqual(mine, theirs)
        self.assert_refused(run(*share, "--tokens", "40", "--seed", "7", "--curves", path), out,
                            "sim/budget_curve.csv", "line 2 head_sha256", "layer 0, KV head 0", mine, theirs,
                            "regenerate")
        # A 64-token workload's curves on 40 tokens: its tokens are named.
        long, _ = self.budget_curves(12, name="long", tokens=64)
        self.assert_refused(run(*share, "--tokens", "40", "--curves", long), out, "line 2 tokens",
                            "expected 40", "got 64")
        # A file without the workload's identity (written before it) is refused with the remedy.
        with open(path) as f:
            rows = [",".join(line.split(",")[:7]) for line in f.read().splitlines()]
        old = self.path("old.csv")
        with open(old, "w") as f:
            f.write("\n".join(rows) + "\n")
        self.assert_refused(run(*share, "--tokens", "40", "--curves", old), out, "old.csv", "header",
                            "regenerate")
        # Its own curves pass.
        self.assertEqual(run(*share, "--tokens", "40", "--curves", path).returncode, 0)

    def test_share_refuses_optima_out_of_order(self):
        # The right identity but head (0, 0)'s curve doubled: the static optimum of layer 0 exceeds
        # the shared one, which no static allocation can; nothing is printed or written.
        path, _ = self.budget_curves()
        with open(path) as f:
            rows = list(csv.DictReader(f))
        for row in rows:
            if row["layer"] == "0" and row["kv_head"] == "0":
                for key in ("optimum_lower_bound", "optimum_upper_bound"):
                    row[key] = repr(2 * float(row[key]))
        doubled = self.path("doubled.csv")
        with open(doubled, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=CURVE_HEADER.split(","), lineterminator="\n")
            writer.writeheader()
            writer.writerows(rows)
        out = self.path("s")
        r = run("simulate", "--preset", "tiny-gqa", "--tokens", "40", "--layers", "0-1", "--budget", "4",
                "--share", "layer", "--share-rules", "uniform", "--policies", "h2o", "--quiet", "-o", out,
                "--curves", doubled)
        self.assert_refused(r, out, "doubled.csv", "layer 0", "static", "shared bound")
        self.assertEqual(r.stdout, "")

    def test_budget_curve_names_each_heads_tensors(self):
        # head_sha256 against Python's hashlib over the workload file's bytes.
        w = self.path("w.safetensors")
        self.generate(w)
        out = self.path("sim")
        r = run("simulate", "--workload", w, "--layers", "0-1", "--budget", "4", "--budget-curve", "3",
                "--policies", "h2o", "--no-plots", "-o", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(os.path.join(out, "budget_curve.csv")) as f:
            rows = list(csv.DictReader(f))
        self.assertEqual(len(rows), 2 * 2 * 3)
        for row in rows:
            self.assertEqual(row["tokens"], "64")
            self.assertEqual(row["head_sha256"],
                             safetensors_head_sha256(w, int(row["layer"]), int(row["kv_head"])))
        self.assertEqual(len({row["head_sha256"] for row in rows}), 4)

    def share(self, out, scope, rules, *extra):
        r = run("simulate", "--preset", "tiny-gqa", "--tokens", "40", "--layers", "0-1", "--budget", "4",
                "--share", scope, "--share-rules", rules, "--policies", "h2o,tova", "-o", out, *extra)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(os.path.join(out, "share.csv")) as f:
            return r, list(csv.DictReader(f))

    def test_share_orders_the_optima_and_a_floor_of_k_is_the_uniform_rule(self):
        path, curves = self.budget_curves()
        r, rows = self.share(self.path("layer"), "layer",
                             "uniform,adakv,adakv:alpha_safeguard=1,duo:sink_size=1,recent_size=2")
        g = 2  # tiny-gqa: two query heads per KV head; the curves are per query head
        for layer in (0, 1):
            mine = [row for row in rows if row["unit"] == f"layer {layer}"]
            self.assertEqual(len(mine), 8)
            uniform = g * sum(curves[(layer, h)][3] for h in (0, 1))
            best = g * max(curves[(layer, 0)][a - 1] + curves[(layer, 1)][8 - a - 1] for a in range(1, 8))
            for row in mine:
                self.assertAlmostEqual(float(row["uniform_opt"]), uniform, delta=1e-9 * uniform)
                self.assertAlmostEqual(float(row["static_opt"]), best, delta=1e-9 * best)
                self.assertGreaterEqual(float(row["shared_opt"]), best * (1 - 1e-9))
                self.assertLessEqual(float(row["over_shared"]), 1 + 1e-9)
                self.assertEqual(int(row["total"]), 8)
            # AdaKV with a floor of k keeps every head at k: the uniform rule, bit for bit.
            for scorer in ("h2o", "tova"):
                by_rule = {row["rule"]: row for row in mine if row["scorer"] == scorer}
                self.assertEqual(by_rule["adakv:alpha_safeguard=1"]["retained"], by_rule["uniform"]["retained"])
                self.assertEqual(by_rule["duo:sink_size=1,recent_size=2"]["slots"], "8")
        self.assertIn("/shared OPT", r.stdout)
        # The same optima from the curves on file.
        _, again = self.share(self.path("again"), "layer", "uniform", "--curves", path)
        for row in again:
            match = [x for x in rows if x["unit"] == row["unit"] and x["rule"] == "uniform" and
                     x["scorer"] == row["scorer"]][0]
            for key in ("uniform_opt", "static_opt", "shared_opt", "retained"):
                self.assertAlmostEqual(float(row[key]), float(match[key]), delta=1e-9 * float(match[key]))
        # The whole model: PyramidKV's schedule (kvpress's window of 64 falls back to k; without a
        # window, beta 2 gives layers 6 and 2), slots within the one cache of 16.
        r, rows = self.share(self.path("model"), "model", "pyramidkv,pyramidkv:window_size=0,beta=2,adakv")
        self.assertIn("fallback", r.stdout)
        model = {(row["rule"], row["scorer"]): row for row in rows if row["unit"] == "model"}
        self.assertEqual(model[("pyramidkv:window_size=0,beta=2", "h2o")]["slots"], "16")
        self.assertLessEqual(int(model[("adakv", "tova")]["slots"]), 16)
        for row in model.values():
            self.assertGreaterEqual(float(row["shared_opt"]), float(row["static_opt"]) * (1 - 1e-9))
            self.assertGreaterEqual(float(row["static_opt"]), float(row["uniform_opt"]) * (1 - 1e-9))

    def test_share_refuses_bad_input_naming_it(self):
        out = self.path("s")
        base = ("simulate", "--preset", "tiny-gqa", "--tokens", "40", "--layers", "0-1", "-o", out)
        h2o = ("--budget", "4", "--policies", "h2o")
        self.assert_one_line_error(run(*base, *h2o, "--share", "head"), "--share", "head")
        self.assert_one_line_error(run(*base, *h2o, "--share", "layer", "--share-rules", "pyramidkv"),
                                   "pyramidkv", "--share model")
        self.assert_one_line_error(run(*base, *h2o, "--share-rules", "adakv"), "--share-rules")
        self.assert_one_line_error(run(*base, "--budget", "4", "--share", "layer", "--policies", "random"),
                                   "random", "rank")
        self.assert_one_line_error(run(*base, *h2o, "--share", "layer", "--budgets", "0.2"), "--budgets")
        self.assert_one_line_error(run(*base, *h2o, "--share", "layer", "--share-rules", "adakv:alpha=2"),
                                   "alpha_safeguard")
        self.assert_one_line_error(run(*base, *h2o, "--share", "layer", "--share-rules", "duo"), "duo",
                                   "full heads")
        self.assert_one_line_error(run(*base, "--share", "model", "--policies", "snapkv", "--budget", "10",
                                       "--share-rules", "pyramidkv:window_size=0,beta=20"), "layer 1", "snapkv")
        self.assertFalse(os.path.exists(out))

    def test_fit_rejects_bad_input_before_any_work(self):
        real = self.path("real.safetensors")
        self.generate(real)
        self.assert_one_line_error(
            run("workload", "fit", real, "-o", self.path("no/such/dir/t.toml")), "no/such/dir")
        self.assert_one_line_error(run("workload", "fit", real, "-o", self.path("t.toml")),
                                   "tokens", "64")  # 64 tokens: too few for the 64-key window
        self.assertFalse(os.path.exists(self.path("t.toml")))
        self.assert_one_line_error(run("workload", "fit", self.path("missing.safetensors"), "-o",
                                       self.path("t.toml")), "missing.safetensors")
        long_enough = self.path("long.safetensors")
        r = run("workload", "generate", "--preset", "tiny", "--tokens", "160", "-o", long_enough)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assert_one_line_error(run("workload", "fit", long_enough, "-o", self.path("t.toml"),
                                       "--shorter-lengths", "0.5,1.5"), "shorter_lengths", "1.5")
        self.assert_one_line_error(run("workload", "fit", long_enough, "-o", self.path("t.toml"),
                                       "--low-norm", "--low-norm-margin", "0"), "low_norm_margin", "got 0")
        self.assertFalse(os.path.exists(self.path("t.toml")))

    def test_unwritable_outputs_leave_no_file(self):
        target = self.path("no/such/dir/w.safetensors")
        self.assert_one_line_error(run("workload", "generate", "--preset", "tiny", "-o", target),
                                   "no/such/dir")
        f = self.path("w.safetensors")
        self.generate(f)
        bad_json = self.path("no/such/dir/s.json")
        self.assert_one_line_error(run("workload", "inspect", f, "--json", bad_json), "no/such/dir")
        self.assertEqual(sorted(os.listdir(self.dir)), ["w.safetensors"])

    def test_malformed_files_are_rejected_naming_the_file(self):
        corpus = os.path.join(ROOT, "tests", "data", "malformed")
        files = sorted(f for f in os.listdir(corpus) if f.endswith(".safetensors"))
        self.assertTrue(files)
        for name in files:
            self.assert_one_line_error(run("workload", "inspect", os.path.join(corpus, name)), name)

    def verify(self, *args):
        return run("verify", "--effort", "0.1", *args)

    def test_verify_runs_the_registry_and_writes_the_report(self):
        out, report = self.path("verify.json"), self.path("report")
        r = self.verify("--tokens", "256", "-o", report, "--json", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(out) as f:
            doc = json.load(f)
        ids = [c["id"] for c in doc["checks"]]
        for expected in ("core.tv_identity", "greedy.nwf_bound", "greedy.nwf_tightness", "h2o.corollary_d18",
                         "h2o.lemma_d47", "h2o.lemma_d48", "h2o.theorem_d49", "h2o.erratum_d44_gradient",
                         "h2o.erratum_alg4_sign"):
            self.assertIn(expected, ids)
        self.assertEqual(len(ids), len(set(ids)))
        allowed = {"claim": ("held", "violated", "vacuous", "hypotheses not met", "inconclusive"),
                   "measurement": ("measured", "inconclusive"),
                   "erratum": ("confirmed", "violated", "hypotheses not met", "inconclusive")}
        rows = {line.split()[0]: line.split()[1:3] for line in r.stdout.splitlines()
                if line.split() and line.split()[0] in ids}
        for c in doc["checks"]:
            self.assertIn(c["outcome"], allowed[c["kind"]], c["id"])
            self.assertIsNone(c["error"], c["id"])
            # The table prints the kind, then the status (a measurement is never "held").
            self.assertEqual(rows[c["id"]][0], c["kind"], c["id"])
            self.assertEqual(rows[c["id"]][1], c["outcome"].split()[0], c["id"])
        kinds = {c["id"]: c["kind"] for c in doc["checks"]}
        for measured in ("h2o.universal_conditions", "h2o.def41_submodularity", "core.row_sums", "h2o.lemma_d19",
                         "h2o.theorem_d49_measured_m", "h2o.lemma_d48"):
            self.assertEqual(kinds[measured], "measurement", measured)
        # The printed start constant of Theorem D.49 is below double resolution: never met.
        outcomes = {c["id"]: c["outcome"] for c in doc["checks"]}
        self.assertEqual(outcomes["h2o.theorem_d49"], "hypotheses not met")
        self.assertEqual(kinds["h2o.erratum_d28_direction"], "erratum")
        self.assertNotIn("h2o.erratum_d29_stray_term", kinds)
        identity = {c["id"]: c["outcome"] for c in doc["checks"] if c["id"].startswith("core.")}
        self.assertEqual(identity, {"core.row_sums": "measured", "core.tv_identity": "measured",
                                    "core.output_bound": "held"})
        # The summary counts each kind apart, as recounted here from the checks themselves.
        def count(kind, *outcomes):
            return sum(1 for c in doc["checks"] if c["kind"] == kind and c["outcome"] in outcomes)
        summary = doc["summary"]
        self.assertEqual(summary["claims"], {"held": count("claim", "held"), "violated": count("claim", "violated"),
                                             "vacuous": count("claim", "vacuous"),
                                             "hypotheses_not_met": count("claim", "hypotheses not met"),
                                             "inconclusive": count("claim", "inconclusive")})
        self.assertEqual(summary["measurements"], {"measured": count("measurement", "measured"),
                                                   "inconclusive": count("measurement", "inconclusive")})
        self.assertEqual(summary["errata"]["confirmed"], count("erratum", "confirmed"))
        self.assertEqual(summary["errata"]["corrected_form_violated"], count("erratum", "violated"))
        self.assertGreater(summary["measurements"]["measured"], 0)
        last = r.stdout.strip().splitlines()[-1]
        expected = "%d claims: %d held, %d violated, %d hypotheses not met" % (
            count("claim", "held", "violated", "vacuous", "hypotheses not met", "inconclusive"), count("claim", "held"),
            count("claim", "violated"), count("claim", "hypotheses not met"))
        self.assertTrue(last.startswith(expected), (last, expected))
        self.assertIn("; %d measurements" % count("measurement", "measured", "inconclusive"), last)
        self.assertIn("; %d errata confirmed" % count("erratum", "confirmed"), last)
        files = os.listdir(report)
        self.assertIn("report.md", files)
        self.assertIn("results.json", files)
        self.assertTrue(any(f.endswith(".svg") for f in files), files)
        self.assertTrue(any(f.endswith(".png") for f in files), files)
        with open(os.path.join(report, "results.json")) as f:
            self.assertEqual([c["id"] for c in json.load(f)["checks"]], ids)
        with open(os.path.join(report, "report.md")) as f:
            md = f.read()
        self.assertIn("Claims that held on the default workloads", md)
        self.assertIn("Claims that did not hold on the default workloads", md)
        self.assertIn("| check | kind | status | key number |", md)
        self.assertIn(summary["line"] + ".", md)
        held = md[md.index("### Claims that held"):md.index("### Claims that did not hold")]
        for c in doc["checks"]:
            self.assertEqual("`%s`" % c["id"] in held, c["kind"] == "claim" and c["outcome"] == "held", c["id"])
        self.assertEqual(sorted(n for n in os.listdir(self.dir) if ".tmp." in n), [])

    def test_inspect_measures_exactly_the_chosen_layers_and_heads(self):
        f = self.path("w.safetensors")
        r = run("workload", "generate", "--preset", "tiny-gqa", "--tokens", "64", "--layers", "3", "--seed", "5",
                "-o", f)
        self.assertEqual(r.returncode, 0, r.stderr)
        every, chosen = self.path("every.json"), self.path("chosen.json")
        self.assertEqual(run("workload", "inspect", f, "--json", every, "--quiet").returncode, 0)
        r = run("workload", "inspect", f, "--layers", "2,0", "--heads", "1-2", "--json", chosen, "--quiet")
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(every) as a, open(chosen) as b:
            every, chosen = json.load(a), json.load(b)
        self.assertEqual(every["measured"]["layers"], [0, 1, 2])  # the default is every layer and head
        self.assertEqual(chosen["measured"], {"layers": [0, 2], "layers_text": "0,2", "q_heads": [1, 2],
                                              "q_heads_text": "1-2"})
        pairs = [(h["layer"], h["q_head"]) for h in chosen["heads"]]
        self.assertEqual(pairs, [(0, 1), (0, 2), (2, 1), (2, 2)])
        self.assertEqual([l["layer"] for l in chosen["layers"]], [0, 2])
        # Each measured head has the numbers it has in the full run (a head does not depend on the others).
        full = {(h["layer"], h["q_head"]): h for h in every["heads"]}
        for h in chosen["heads"]:
            self.assertEqual(h, full[(h["layer"], h["q_head"])])
        # The table has a row per chosen layer only.
        rows = [l.split()[0] for l in r.stdout.splitlines()[3:] if l.split()]
        self.assertEqual(rows, ["0", "2", "mean"], r.stdout)
        for args, needles in ((["--layers", "3"], ["--layers", "layers 0-2", "got 3 (out of range)"]),
                              (["--layers", "0,0-1"], ["--layers", "0 (in 0-1, listed twice"]),
                              (["--heads", "4"], ["--heads", "query heads 0-3", "got 4"]),
                              (["--heads", "2-1"], ["--heads", "2-1 (reversed)"]),
                              # Settings that gave NaN or a wrong value: refused, named.
                              (["--late-rows", "0"], ["late_rows (--late-rows)", "an integer >= 1", "got 0"]),
                              (["--first-token-from", "-3"], ["first_token_from (--first-token-from)", "got -3"]),
                              (["--recent-window", "0"], ["--recent-window", "got 0"]),
                              (["--wide-recent-window", "0"], ["--wide-recent-window", "got 0"]),
                              (["--tau", "1.5"], ["--tau", "[0, 1]", "got 1.5"]),
                              (["--sink-head-threshold", "-0.1"], ["--sink-head-threshold", "got -0.1"])):
            out = self.path("bad.json")
            self.assert_one_line_error(run("workload", "inspect", f, *args, "--json", out), *needles)
            self.assertFalse(os.path.exists(out))

    def test_verify_layers_and_policies_choose_what_the_checks_read(self):
        f = self.path("w.safetensors")
        r = run("workload", "generate", "--preset", "tiny-gqa", "--tokens", "64", "--layers", "3", "--seed", "5",
                "-o", f)
        self.assertEqual(r.returncode, 0, r.stderr)
        out = self.path("v.json")
        checks = ("--check", "h2o.sec3_sparsity", "--check", "streamingllm.attention_sinks", "--check",
                  "h2o.greedy_vs_offline_optimum")
        r = self.verify("--workload", f, "--layers", "2,1", *checks, "--policy", "h2o:heavy=5,recent=8",
                        "--policy", "local,streamingllm:sinks=2", "-o", self.path("r"), "--json", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(out) as fh:
            doc = json.load(fh)
        self.assertEqual(doc["settings"]["layers"], [1, 2])
        self.assertEqual(doc["settings"]["layers_text"], "1-2")
        self.assertEqual(doc["settings"]["policies"], ["h2o:heavy=5,recent=8", "local", "streamingllm:sinks=2"])
        self.assertEqual([l["layer"] for l in doc["layers"]], [1, 2])
        by_id = {c["id"]: c for c in doc["checks"]}
        sparsity = next(s for s in by_id["h2o.sec3_sparsity"]["series"] if s["label"].startswith("mean"))
        self.assertEqual(sparsity["x"], [1, 2])
        self.assertEqual(by_id["h2o.sec3_sparsity"]["measurements"]["layers_checked"]["value"], 2)
        self.assertEqual(by_id["h2o.sec3_sparsity"]["instances"], 1)  # "almost all layers": the set is one instance
        sinks = by_id["streamingllm.attention_sinks"]
        self.assertEqual(sorted(k for k in sinks["measurements"] if k.startswith("first_token_mass_layer")),
                         ["first_token_mass_layer_2"])  # layer 1 is one of the first two
        gap = by_id["h2o.greedy_vs_offline_optimum"]
        names = {s["label"] for s in gap["series"]}
        self.assertEqual(names, {"h2o:heavy=5,recent=8", "local", "streamingllm:sinks=2"})
        # Its (layer, KV head) groups, named in the figure's data, lie in the chosen layers.
        with open(os.path.join(self.path("r"), "gap_to_optimum.dat")) as fh:
            groups = [line.split('"')[1] for line in fh.read().splitlines()[1:] if line.strip()]
        self.assertGreater(len(groups), 0)
        self.assertTrue(all(g.split()[0] in ("L1", "L2") for g in groups), groups)
        self.assertIn("ratio_h2o_heavy_5_recent_8", gap["measurements"])
        with open(os.path.join(self.path("r"), "report.md")) as fh:
            self.assertIn("Layers checked: 1-2. Policies against the offline optimum: h2o:heavy=5,recent=8, local, "
                          "streamingllm:sinks=2.", fh.read())
        # The built-in workload reads its set against the preset's 32 layers (layer 0 by default).
        r = self.verify("--check", "h2o.sec3_sparsity", "--tokens", "128", "-o", self.path("r0"), "--json", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(out) as fh:
            self.assertEqual(json.load(fh)["settings"]["layers"], [0])
        for args, needles in (
                (["--workload", f, "--layers", "3"], ["--layers", "layers 0-2", "got 3 (out of range)"]),
                (["--workload", f, "--layers", "1,1"], ["--layers", "1 (listed twice"]),
                (["--layers", "32"], ["--layers", "layers 0-31", "got 32"]),
                (["--workload", f, "--policy", "streamingllm:sinks=40"], ["--policy", "k = 13", "sinks=40"]),
                (["--workload", f, "--policy", "h2o", "--policy", "h2o"], ["--policy", "h2o (listed twice)"]),
                (["--workload", f, "--policy", "nosuch"], ["--policy", "nosuch"])):
            report = self.path("bad")
            self.assert_one_line_error(self.verify(*args, "-o", report), *needles)
            self.assertFalse(os.path.exists(report))

    def test_verify_list_prints_every_id(self):
        r = run("verify", "--list")
        self.assertEqual(r.returncode, 0, r.stderr)
        for expected in ("core.row_sums", "greedy.nwf_bound", "h2o.theorem_d49", "h2o.erratum_alg4_sign"):
            self.assertIn(expected, r.stdout)

    def test_verify_check_runs_only_the_named_checks(self):
        out = self.path("one.json")
        r = self.verify("--check", "greedy.nwf_tightness", "--check", "h2o.lemma_d48", "-o", self.path("r"),
                        "--json", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(out) as f:
            self.assertEqual([c["id"] for c in json.load(f)["checks"]], ["greedy.nwf_tightness", "h2o.lemma_d48"])

    def test_verify_unknown_check_names_it_and_lists_the_valid_ids(self):
        report = self.path("r")
        r = self.verify("--check", "h2o.no_such_lemma", "-o", report)
        self.assertEqual(r.returncode, 2)
        self.assert_one_line_error(r, "h2o.no_such_lemma", "greedy.nwf_bound", "h2o.lemma_d47")
        self.assertFalse(os.path.exists(report))

    def test_verify_fail_on_violation_sets_the_exit_code(self):
        # An i.i.d. Gaussian workload has none of the structure H2O §3 reports: that check is violated.
        w = self.path("gauss.safetensors")
        r = run("workload", "generate", "--preset", "tiny-gqa", "--generator", "gaussian", "--tokens", "128",
                "--layers", "1", "-o", w)
        self.assertEqual(r.returncode, 0, r.stderr)
        out = self.path("v.json")
        # Generated, the structure claim is not tested (the generator plants structure); the same
        # tensors without the generator's metadata are attention the claim speaks of.
        r = self.verify("--workload", w, "--check", "h2o.sec3_sparsity", "-o", self.path("r0"), "--json", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(out) as f:
            self.assertEqual(json.load(f)["checks"][0]["outcome"], "hypotheses not met")
        drop_generator_metadata(w)
        args = ("--workload", w, "--check", "h2o.sec3_sparsity", "-o", self.path("r"), "--json", out)
        r = self.verify(*args)
        self.assertEqual(r.returncode, 0, r.stderr)  # a violation is a result
        with open(out) as f:
            self.assertEqual(json.load(f)["checks"][0]["outcome"], "violated")
        self.assertEqual(self.verify(*args, "--fail-on-violation").returncode, 1)
        held = self.verify("--check", "greedy.nwf_tightness", "-o", self.path("r2"), "--fail-on-violation")
        self.assertEqual(held.returncode, 0, held.stderr)
        # Measurements report numbers, never a violation: even on the Gaussian workload they pass.
        measured = self.verify("--workload", w, "--check", "h2o.greedy_vs_offline_optimum", "--check",
                               "core.row_sums", "-o", self.path("r3"), "--json", out, "--fail-on-violation")
        self.assertEqual(measured.returncode, 0, measured.stderr)
        with open(out) as f:
            self.assertEqual({c["outcome"] for c in json.load(f)["checks"]}, {"measured"})

    def test_verify_reads_a_safetensors_workload(self):
        w = self.path("w.safetensors")
        self.generate(w)
        out = self.path("w.json")
        r = self.verify("--workload", w, "--check", "core.tv_identity", "--check", "core.output_bound",
                        "-o", self.path("r"), "--json", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(out) as f:
            doc = json.load(f)
        self.assertIn("w.safetensors", doc["settings"]["workload"])
        self.assertEqual({c["id"]: c["outcome"] for c in doc["checks"]},
                         {"core.tv_identity": "measured", "core.output_bound": "held"})

    def test_verify_config_file_and_its_errors(self):
        config = self.path("config.json")
        with open(config, "w") as f:
            json.dump({"tokens": 128, "seed": 3, "effort": 0.1, "budget_ratio": 0.25,
                       "checks": ["greedy.nwf_tightness"]}, f)
        out = self.path("c.json")
        r = run("verify", "--config", config, "-o", self.path("r"), "--json", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(out) as f:
            doc = json.load(f)
        self.assertEqual(doc["settings"]["seed"], 3)
        self.assertEqual(doc["settings"]["budget_ratio"], 0.25)
        self.assertEqual([c["id"] for c in doc["checks"]], ["greedy.nwf_tightness"])
        with open(config, "w") as f:
            json.dump({"tokens": 128, "colour": "red"}, f)
        self.assert_one_line_error(run("verify", "--config", config, "-o", self.path("r3")), "colour", "config.json")
        self.assertFalse(os.path.exists(self.path("r3")))

    def test_verify_bad_input_fails_with_one_line_and_no_output(self):
        report = self.path("r")
        self.assert_one_line_error(run("verify", "--effort", "0", "-o", report), "--effort")
        self.assert_one_line_error(run("verify", "--config", self.path("missing.json"), "-o", report),
                                   "missing.json")
        self.assert_one_line_error(run("verify", "--workload", self.path("missing.safetensors"), "-o", report),
                                   "missing.safetensors")
        self.assertFalse(os.path.exists(report))

    def optimum(self, *args):
        out = self.path("optimum.json")
        r = run("optimum", *args, "--json", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(out) as f:
            return json.load(f)

    def test_optimum_exact_methods_agree_and_bound_greedy(self):
        sim = self.path("sim.npy")
        write_npy(sim, (8, 6), [((i * 7 + j * 3) % 11) / 4.0 for i in range(8) for j in range(6)])
        docs = {m: self.optimum("--similarity", sim, "-k", "3", "--method", m)
                for m in ("bnb", "cbc", "exhaustive")}
        opt = docs["exhaustive"]["optimum"]["value"]
        for m, doc in docs.items():
            self.assertTrue(doc["opt_proven"], m)
            self.assertAlmostEqual(doc["optimum"]["value"], opt, places=9)
            self.assertLessEqual(doc["greedy"]["value"], opt + 1e-9)
            self.assertGreaterEqual(doc["ratio"], 1 - 1 / 2.718281828459045)
            self.assertEqual(len(doc["optimum"]["set"]), 3)
        lazy = self.optimum("--similarity", sim, "-k", "3", "--method", "lazy")
        self.assertIsNone(lazy["optimum"])
        self.assertGreaterEqual(lazy["upper_bound"], opt - 1e-9)

    def test_optimum_weighted_coverage_from_an_incidence_matrix(self):
        cover = self.path("cover.npy")
        # Items 0..3; sets {0, 1}, {1, 2}, {3}, {0, 1, 2}: with k = 2 the optimum covers all 4.
        write_npy(cover, (4, 4), [1, 0, 0, 1, 1, 1, 0, 1, 0, 1, 0, 1, 0, 0, 1, 0])
        doc = self.optimum("--function", "weighted-coverage", "--coverage", cover, "-k", "2",
                           "--method", "cbc")
        self.assertEqual(doc["optimum"]["value"], 4.0)
        self.assertEqual(doc["optimum"]["set"], [2, 3])

    def test_optimum_reads_a_pmedian_file_and_the_published_optimum_beside_it(self):
        pmed = self.path("tiny.txt")
        with open(pmed, "w") as f:
            f.write(" 4 4 2\n 1 2 2\n 2 3 3\n 3 4 4\n 1 4 20\n")
        with open(self.path("pmedopt.txt"), "w") as f:
            f.write("Data file   Optimal solution value\ntiny 5\n")
        doc = self.optimum("--pmed", pmed)
        self.assertEqual(doc["k"], 2)
        self.assertEqual(doc["pmedian"]["best"], 5.0)
        self.assertEqual(doc["pmedian"]["published_optimum"], 5.0)
        self.assertEqual(doc["optimum"]["set"], [1, 3])

    def test_optimum_shows_its_phases_on_stderr(self):
        sim = self.path("sim.npy")
        write_npy(sim, (8, 6), [((i * 7 + j * 3) % 11) / 4.0 for i in range(8) for j in range(6)])
        # SUBEVICT_PROGRESS_INTERVAL=0: a line per phase, each with done/total and elapsed time and
        # ETA (stderr is a pipe, not a terminal); the note names the phase.
        env = dict(os.environ, SUBEVICT_PROGRESS_INTERVAL="0")
        r = subprocess.run([BIN, "optimum", "--similarity", sim, "-k", "3", "--method", "bnb"],
                           capture_output=True, timeout=600, env=env, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = r.stderr.splitlines()
        self.assertEqual([l.split(",")[0] for l in lines],
                         ["optimum: 0/2 phases (lazy greedy)", "optimum: 1/2 phases (lazy greedy",
                          "optimum: 1/2 phases (bnb)", "optimum: 2/2 phases (bnb"], r.stderr)
        for line in lines:
            self.assertRegex(line, r" elapsed, ETA ")
        self.assertIn("ratio greedy / OPT", r.stdout)
        # The default interval: the first and the last line only; greedy alone is one phase.
        r = run("optimum", "--similarity", sim, "-k", "3", "--method", "stochastic")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual([l.split(",")[0] for l in r.stderr.splitlines()],
                         ["optimum: 0/1 phases (stochastic greedy)", "optimum: 1/1 phases (stochastic greedy"],
                         r.stderr)
        r = run("optimum", "--similarity", sim, "-k", "3", "--quiet")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stderr, "")

    def test_optimum_bad_input_fails_with_one_line_and_no_output(self):
        good = self.path("good.npy")
        write_npy(good, (3, 3), [1.0] * 9)
        vector = self.path("vector.npy")
        write_npy(vector, (4,), [1.0] * 4)
        nan = self.path("nan.npy")
        write_npy(nan, (2, 2), [1.0, float("nan"), 0.0, 1.0])
        negative = self.path("negative.npy")
        write_npy(negative, (2, 2), [1.0, -1.0, 0.0, 1.0])
        pmed = self.path("bad.txt")
        with open(pmed, "w") as f:
            f.write("3 2 1\n1 2 1\n2 9 1\n")
        out = self.path("out.json")
        cases = [
            (["--similarity", self.path("missing.npy"), "-k", "2"], "missing.npy"),
            (["--similarity", vector, "-k", "2"], "2-D"),
            (["--similarity", nan, "-k", "1"], "NaN"),
            (["--similarity", negative, "-k", "1"], "negative.npy"),
            (["--similarity", good, "-k", "4"], "-k"),
            (["--similarity", good, "-k", "2", "--method", "magic"], "--method"),
            (["--pmed", pmed], "line 3"),
        ]
        for args, needle in cases:
            r = run("optimum", *args, "--json", out)
            self.assertEqual(r.returncode, 2, args)
            self.assert_one_line_error(r, needle)
            self.assertFalse(os.path.exists(out), args)

    def regress_problem(self, n=40, d=3, negative_b=False):
        """A, b, w .npy files of a small problem; w large enough for the w condition."""
        A = [((i * 7 + j * 3) % 11 - 5) / 25.0 for i in range(n) for j in range(d)]
        b = [0.9 / n] * n
        if negative_b:
            b[0] = -0.01
        paths = [self.path(k + ".npy") for k in ("A", "b", "w")]
        write_npy(paths[0], (n, d), A)
        write_npy(paths[1], (n,), b)
        write_npy(paths[2], (n,), [30.0] * n)
        return paths

    def test_regress_solves_a_generated_instance_and_writes_every_output(self):
        out, x, plot = self.path("r.json"), self.path("x.npy"), self.path("conv.svg")
        for solver in ("newton", "approx-newton", "gd"):
            r = run("regress", "--n", "3000", "--d", "4", "--solver", solver, "--json", out,
                    "--x-out", x, "--plot", plot)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("status: converged", r.stdout)
            with open(out) as f:
                doc = json.load(f)
            self.assertEqual(doc["status"], "converged")
            self.assertLessEqual(doc["final_gradient_norm"], 1e-10)
            self.assertEqual(len(doc["x"]), 4)
            self.assertEqual(len(doc["trace"]), doc["iterations"] + 1)
            self.assertTrue(all(h["holds"] for h in doc["hypotheses"]
                                if h["id"] != "R_at_least_10"), doc["hypotheses"])
            with open(x, "rb") as f:
                self.assertEqual(f.read(6), b"\x93NUMPY")
            self.assertTrue(os.path.exists(self.path("conv.dat")))
            self.assertTrue(os.path.exists(self.path("conv.gp")))
            import shutil
            if shutil.which("gnuplot"):
                with open(plot) as f:
                    self.assertIn("<svg", f.read())
                with open(self.path("conv.png"), "rb") as f:
                    self.assertEqual(f.read(4), b"\x89PNG")

    def test_simulate_figures_are_categorical_per_policy_titled_and_drawn_or_explained(self):
        import shutil
        policies = ["h2o", "local", "tova"]
        out = self.path("figs")
        r = run("simulate", "--preset", "tiny-gqa", "--tokens", "48", "--budget", "0.25", "--budgets", "0.5",
                "--policies", ",".join(policies), "--quiet", "-o", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        figures = ("retained_per_step", "retained_vs_budget", "gap_to_optimum")
        scripts = {}
        for name in figures:
            with open(os.path.join(out, name + ".gp")) as f:
                scripts[name] = f.read()
            self.assertTrue(os.path.exists(os.path.join(out, name + ".dat")), name)
            gp = scripts[name]
            self.assertRegex(gp, r"set label 1 \"[^\"]+\" at screen", name)  # the title
            self.assertRegex(gp, r"set xlabel '[^']+'", name)
            self.assertRegex(gp, r"set ylabel '[^']+'", name)
            for key in re.findall(r"^set key .*$", gp, re.M):
                self.assertTrue(" outside " in key or " below " in key, (name, key))
            if shutil.which("gnuplot"):
                for ext in ("svg", "png"):
                    self.assertGreater(os.path.getsize(os.path.join(out, f"{name}.{ext}")), 0, name + ext)
        # The per-policy figure is categorical: tics named after the policies, bars, never lines.
        gap = scripts["gap_to_optimum"]
        self.assertIn("set xtics (" + ", ".join(f"'{p}' {i}" for i, p in enumerate(policies)) + ")", gap)
        self.assertNotIn("lines", gap)
        self.assertIn("with boxes", gap)
        self.assertIn("set logscale x", scripts["retained_vs_budget"])
        # Without gnuplot the data and scripts are written and a warning says how to draw them.
        bare = self.path("figs_bare")
        empty = self.path("no_tools")
        os.makedirs(empty, exist_ok=True)
        r = subprocess.run([BIN, "simulate", "--preset", "tiny-gqa", "--tokens", "48", "--budget", "0.25",
                            "--policies", "h2o", "--quiet", "-o", bare], capture_output=True, timeout=600,
                           env=dict(os.environ, PATH=empty))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(b"gnuplot was not found", r.stderr)
        self.assertIn(b"gnuplot NAME.gp", r.stderr)
        self.assertTrue(os.path.exists(os.path.join(bare, "gap_to_optimum.gp")))
        self.assertFalse(os.path.exists(os.path.join(bare, "gap_to_optimum.png")))
        # The "wrote" line names exactly the files each directory holds (no figure that was not drawn).
        self.assertEqual(self.wrote(r.stdout.decode()), (bare, set(os.listdir(bare))))
        self.assertNotIn("png", r.stdout.decode())
        r = run("simulate", "--preset", "tiny-gqa", "--tokens", "48", "--budget", "0.25", "--policies", "h2o",
                "--quiet", "--schedules", "-o", self.path("figs_listed"))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.wrote(r.stdout), (self.path("figs_listed"), set(os.listdir(self.path("figs_listed")))))

    def wrote(self, stdout):
        """(directory, file names) of a command's "wrote DIR/{a,b,FIG.{dat,gp}}" line."""
        [line] = [x for x in stdout.splitlines() if "wrote " in x]
        directory, listing = re.fullmatch(r".*wrote (.*)/\{(.*)\}", line).groups()
        names = set()
        for item in re.findall(r"[^,{]+(?:\{[^}]*\})?", listing):
            stem, _, exts = item.partition("{")
            names |= {stem + e for e in exts.rstrip("}").split(",")} if exts else {item}
        return directory, names

    def test_regress_reads_user_files_and_warns_about_violated_hypotheses(self):
        A, b, w = self.regress_problem(negative_b=True)
        r = run("regress", "--A", A, "--b", b, "--w", w, "--loss", "dls", "--R", "10")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("b_nonnegative", r.stderr)
        self.assertIn("warning", r.stderr)
        self.assertIn("status: converged", r.stdout)

    def test_regress_bad_input_fails_with_one_line_and_no_output(self):
        A, b, w = self.regress_problem()
        short = self.path("short.npy")
        write_npy(short, (7,), [0.1] * 7)
        nan = self.path("nan.npy")
        write_npy(nan, (40,), [float("nan")] + [1.0] * 39)
        x = self.path("x.npy")
        cases = [
            (["--A", self.path("missing.npy"), "--b", b, "--w", w], "missing.npy"),
            (["--A", A, "--b", short, "--w", w], "short.npy"),
            (["--A", A, "--b", b, "--w", nan], "nan.npy"),
            (["--A", b, "--b", b, "--w", w], "2-D"),
            (["--A", A], "--b"),
            (["--A", A, "--b", b, "--w", w, "--solver", "magic"], "--solver"),
            (["--A", A, "--b", b, "--w", w, "--loss", "magic"], "loss"),
            (["--n", "3", "--d", "5"], "--n"),
        ]
        for args, needle in cases:
            r = run("regress", *args, "--x-out", x)
            self.assertEqual(r.returncode, 2, args)
            self.assert_one_line_error(r, needle)
            self.assertFalse(os.path.exists(x), args)
        r = run("regress", "--A", A, "--b", b, "--w", w, "--x-out", self.path("no/such/x.npy"))
        self.assert_one_line_error(r, "no/such")

    def read_csv(self, path):
        import csv
        with open(path) as f:
            return list(csv.DictReader(f))

    def test_simulate_runs_a_learned_model_and_refuses_a_bad_one(self):
        names = ["accumulated_attention", "current_attention", "window_attention", "age", "position", "sink",
                 "key_norm", "value_norm", "key_mean_cosine", "attention_trend", "layer", "kv_head"]
        model = {"format": "subevict-learned-policy", "version": 1, "features_version": 1, "features": names,
                 "feature_options": {"window": 8, "sinks": 2, "trend_rate": 0.25},
                 "nets": [{"layers": None,
                           "inputs": [{"feature": n, "transform": "identity", "members_scaled": False, "offset": 0.0,
                                       "mean": 0.0, "scale": 1.0} for n in names],
                           "dense": [{"activation": "identity", "weights": [[1.0] + [0.0] * 11], "bias": [0.0]}]}]}
        path = self.path("model.json")
        with open(path, "w") as f:
            json.dump(model, f)
        out = self.path("learned")
        # Weight 1 on the accumulated attention alone: H2O's Algorithm 1 (evict the smallest
        # accumulated score, ties to the lowest token), the same decisions and masses.
        r = run("simulate", "--preset", "tiny-gqa", "--tokens", "48", "--budget", "0.25",
                "--policies", f"learned:model={path},h2o-alg1,h2o", "--optimum", "flow", "-o", out, "--no-plots")
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(os.path.join(out, "results.json")) as f:
            doc = json.load(f)
        self.assertTrue(doc["decomposition_holds"])
        self.assertIn(f"learned:model={path}", doc["policies"])
        rows = self.read_csv(os.path.join(out, "summary.csv"))
        mass = {(row["kv_head"], row["policy"]): row["total_retained_mass"] for row in rows}
        for head in ("0", "1"):
            self.assertEqual(mass[(head, f"learned:model={path}")], mass[(head, "h2o-alg1")])
            self.assertNotEqual(mass[(head, f"learned:model={path}")], mass[(head, "h2o")])
        r = run("simulate", "--preset", "tiny-gqa", "--tokens", "48", "--policies", "learned", "-o", self.path("x"))
        self.assertEqual(r.returncode, 2)
        self.assertIn("learned:model=FILE", r.stderr)
        model["version"] = 7
        with open(path, "w") as f:
            json.dump(model, f)
        r = run("simulate", "--preset", "tiny-gqa", "--tokens", "48", "--policies", f"learned:model={path}",
                "-o", self.path("y"))
        self.assertEqual(r.returncode, 2)
        self.assertIn(f"{path}: version: expected 1, got 7", r.stderr)
        self.assertFalse(os.path.exists(self.path("y")))

    def test_simulate_preset_writes_every_output_and_the_decomposition_holds(self):
        out, js = self.path("sim"), self.path("sim.json")
        r = run("simulate", "--preset", "tiny-gqa", "--tokens", "48", "--budget", "0.2",
                "--budgets", "0.1,0.6", "--policies", "h2o,local,streamingllm,tova,random,lookahead",
                "--optimum", "flow", "--seed", "3", "-o", out, "--json", js, "--no-plots")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("holds on every head", r.stdout)
        for name in ("summary.csv", "steps.csv", "results.json"):
            self.assertTrue(os.path.exists(os.path.join(out, name)), name)
        with open(js) as f:
            doc = json.load(f)
        self.assertTrue(doc["decomposition_holds"])
        self.assertEqual(doc["budgets"], [0.1, 0.2, 0.6])
        rows = self.read_csv(os.path.join(out, "summary.csv"))
        self.assertEqual(len(rows), 2 * 3 * 6)  # KV heads x budgets x policies
        for row in rows:
            total, opt, u = (float(row[c]) for c in ("total_retained_mass", "optimum_total", "oracle_total"))
            self.assertLessEqual(total, opt + 1e-9 * opt, row)
            self.assertLessEqual(opt, u + 1e-9 * u, row)
            self.assertLessEqual(u, 48 + 1e-9, row)
        steps = self.read_csv(os.path.join(out, "steps.csv"))
        self.assertEqual({s["policy"] for s in steps},
                         {"h2o", "local", "streamingllm", "tova", "random", "lookahead", "OPT", "U"})
        self.assertEqual(len(steps), 2 * 48 * 8)
        # Same seed, same numbers.
        again = self.path("sim2")
        r = run("simulate", "--preset", "tiny-gqa", "--tokens", "48", "--budget", "0.2",
                "--budgets", "0.1,0.6", "--policies", "h2o,local,streamingllm,tova,random,lookahead",
                "--seed", "3", "-o", again, "--no-plots")
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(os.path.join(out, "summary.csv")) as a, open(os.path.join(again, "summary.csv")) as b:
            self.assertEqual(a.read(), b.read())

    def test_simulate_reads_a_safetensors_workload_and_selects_heads(self):
        f = self.path("w.safetensors")
        self.generate(f)  # tiny-gqa, 64 tokens, 2 layers
        out = self.path("sim")
        r = run("simulate", "--workload", f, "--layers", "all", "--heads", "1", "--budget", "8",
                "--policies", "h2o,l2norm", "--optimum", "oracle", "-o", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        rows = self.read_csv(os.path.join(out, "summary.csv"))
        self.assertEqual({(r["layer"], r["kv_head"]) for r in rows}, {("0", "1"), ("1", "1")})
        self.assertEqual({r["budget_size"] for r in rows}, {"8"})
        self.assertTrue(all(r["optimum_total"] == "" and r["oracle_total"] != "" for r in rows))
        import shutil
        if shutil.which("gnuplot"):
            for name in ("retained_per_step", "retained_vs_budget"):
                for ext in ("svg", "png"):
                    self.assertTrue(os.path.exists(os.path.join(out, f"{name}.{ext}")), name + ext)

    def test_sliding_window_layers_are_recorded_measured_simulated_and_left_out_of_verify(self):
        f = self.path("w.safetensors")
        self.generate(f, "--window", "16")  # tiny-gqa, 64 tokens, 2 layers, both windowed
        r = run("workload", "inspect", f, "--json", self.path("i.json"))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("sliding-window layers 0-1 (window 16 keys", r.stdout)
        with open(self.path("i.json")) as stream:
            doc = json.load(stream)
        self.assertEqual(doc["attention_windows"], [16, 16])
        self.assertEqual({layer["window"] for layer in doc["layers"]}, {16})
        # No global layer: verify refuses, naming the layers and the window.
        r = run("verify", "--workload", f, "-o", self.path("v"))
        self.assert_one_line_error(r, "--layers", "layers 0-1 attend over a sliding window of 16 keys")
        self.assertFalse(os.path.exists(self.path("v")))
        # A budget below the window compresses; one at or above it compresses nothing, and says so.
        for budget, compressed in (("8", True), ("16", False)):
            out = self.path("sim" + budget)
            r = run("simulate", "--workload", f, "--layers", "all", "--budget", budget,
                    "--policies", "h2o,tova", "--optimum", "flow", "-o", out)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual("heads not compressed" in r.stdout, not compressed, r.stdout)
            with open(os.path.join(out, "results.json")) as stream:
                heads = json.load(stream)["heads"]
            flags = {p["compressed"] for h in heads for p in h["policies"].values()}
            self.assertEqual(flags, {compressed})
        # At W - 1 = 15 the token leaving the window makes room before any eviction: every policy
        # compresses and keeps the whole window, as the optimum does.
        out = self.path("sim15")
        r = run("simulate", "--workload", f, "--layers", "all", "--budget", "15", "--policies", "h2o,tova,l2norm",
                "--optimum", "flow", "-o", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(os.path.join(out, "results.json")) as stream:
            heads = json.load(stream)["heads"]
        for h in heads:
            for name, p in h["policies"].items():
                self.assertTrue(p["compressed"] or name == "l2norm", name)
                self.assertAlmostEqual(p["total_retained_mass"] / h["optimum"]["total"], 1.0, delta=1e-12, msg=name)
        # One global and one window layer: verify reads the global one and says why.
        edit_metadata(f, {"attention_windows": "0,16"})
        r = run("verify", "--workload", f, "--check", "h2o.sec3_sparsity", "-o", self.path("v2"))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("layers 1 attend over a sliding window of 16 keys; the checks read the global layers 0",
                      r.stderr)
        r = run("verify", "--workload", f, "--layers", "1", "-o", self.path("v3"))
        self.assert_one_line_error(r, "--layers", "layers 1 attend over a sliding window")

    def test_progress_on_a_terminal_is_one_redrawn_line_with_an_eta(self):
        import pty
        master, slave = pty.openpty()
        try:
            r = subprocess.run([BIN, "simulate", "--preset", "tiny-gqa", "--tokens", "48", "--layers", "0-1",
                                "--budget", "0.2", "--budgets", "0.5", "--optimum", "oracle", "--no-plots",
                                "-o", self.path("sim")], stdout=subprocess.PIPE, stderr=slave, timeout=600)
            os.close(slave)
            slave = None
            seen = b""
            while True:
                try:
                    chunk = os.read(master, 4096)
                except OSError:  # the terminal closed
                    break
                if not chunk:
                    break
                seen += chunk
        finally:
            if slave is not None:
                os.close(slave)
            os.close(master)
        self.assertEqual(r.returncode, 0)
        text = seen.decode("utf-8")
        self.assertIn("\rsimulate: 4/4 (layer, KV head) groups", text)
        self.assertIn("ETA", text)
        self.assertEqual(text.count("\n"), 1, text)  # redrawn in place, one line in all

    def test_simulate_bad_input_fails_with_one_line_and_no_output(self):
        f = self.path("w.safetensors")
        self.generate(f)
        garbage = self.path("garbage.safetensors")
        with open(garbage, "wb") as g:
            g.write(b"not a safetensors file")
        cases = [
            (["--workload", self.path("missing.safetensors")], "missing.safetensors"),
            (["--workload", garbage], "garbage.safetensors"),
            (["--workload", f, "--policies", "h2o,magic"], "magic"),
            (["--workload", f, "--budget", "1.5"], "budget"),
            (["--workload", f, "--budgets", "0.1,-2"], "budget"),
            # Too large for a cache size: named as typed (once cast to int, it read -2147483648).
            (["--workload", f, "--budget", "3e9"], "got 3e9"),
            (["--workload", f, "--budgets", "0.1,3e9"], "got 3e9"),
            (["--workload", f, "--budget", "2147483648"], "got 2147483648"),
            (["--workload", f, "--heads", "7"], "--heads"),
            (["--workload", f, "--heads", "0,0"], "0 (listed twice"),
            (["--workload", f, "--optimum", "best"], "--optimum"),
            (["--workload", f, "--layers", "9"], "--layers"),
            (["--preset", "no-such-model"], "no-such-model"),
            (["--preset", "tiny", "--workload", f], "--preset"),
            # Beyond the stored-gains limit the optimum streams the gains: what needs them stored is refused.
            (["--preset", "tiny", "--tokens", "32769", "--optimum", "oracle"], "oracle at 32769 tokens"),
            (["--preset", "tiny", "--tokens", "32769", "--budget-curve", "4"], "--budget-curve"),
        ]
        for args, needle in cases:
            out = self.path("sim")
            r = run("simulate", *args, "-o", out, "--json", self.path("sim.json"))
            self.assertEqual(r.returncode, 2, args)
            self.assert_one_line_error(r, needle)
            self.assertFalse(os.path.exists(out), args)
            self.assertFalse(os.path.exists(self.path("sim.json")), args)
            self.assertEqual([p for p in os.listdir(self.dir) if ".tmp." in p], [], args)

    def test_simulate_layer_and_head_sets_run_exactly_those_cells(self):
        # A preset generates layers 0..15 of KV head 1 alone and runs 12, 14, 15; the whole 16-layer
        # file gives the same numbers for those cells (a layer does not depend on the layers after
        # it, nor a head on the other heads).
        common = ["--budget", "8", "--policies", "h2o,local", "--optimum", "oracle", "--no-plots", "--quiet"]
        js = self.path("sets.json")
        r = run("simulate", "--preset", "llama3-8b", "--tokens", "32", "--seed", "4", "--layers", "12,14-15",
                "--heads", "1", *common, "-o", self.path("sets"), "--json", js)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(js) as f:
            doc = json.load(f)
        self.assertEqual(sorted((h["layer"], h["kv_head"]) for h in doc["heads"]), [(12, 1), (14, 1), (15, 1)])
        self.assertEqual((doc["layers"], doc["kv_heads"]), ([12, 14, 15], [1]))
        self.assertIn("layers 12,14-15, KV heads 1:", r.stdout)
        f = self.path("w16.safetensors")
        r = run("workload", "generate", "--preset", "llama3-8b", "--uniform-layers", "--tokens", "32", "--layers", "16",
                "--seed", "4", "-o", f)
        self.assertEqual(r.returncode, 0, r.stderr)
        js2 = self.path("sets2.json")
        r = run("simulate", "--workload", f, "--layers", "15,12,14", "--heads", "1", *common,
                "-o", self.path("sets2"), "--json", js2)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(js2) as f2:
            self.assertEqual(json.load(f2)["heads"], doc["heads"])
        # A single number is that layer alone, not a count of layers.
        w = self.path("w.safetensors")
        self.generate(w)  # tiny-gqa, 2 layers
        r = run("simulate", "--workload", w, "--layers", "1", *common, "-o", self.path("one"))
        self.assertEqual(r.returncode, 0, r.stderr)
        rows = self.read_csv(os.path.join(self.path("one"), "summary.csv"))
        self.assertEqual({(x["layer"], x["kv_head"]) for x in rows}, {("1", "0"), ("1", "1")})

    def test_simulate_bad_layer_and_head_sets_name_the_value_and_the_range(self):
        w = self.path("w.safetensors")
        self.generate(w)  # 2 layers, 2 KV heads
        cases = [
            (["--layers", "31"], ["--layers", "layers 0-1", "got 31 (out of range)"]),
            (["--layers", "0-2"], ["--layers", "2 (in 0-2, out of range)"]),
            (["--layers", "1,0-1"], ["--layers", "1 (in 0-1, listed twice"]),
            (["--layers", "1-0"], ["--layers", "1-0 (reversed)"]),
            (["--layers", "0,,1"], ["--layers", "empty item"]),
            (["--layers", "1.5"], ["--layers", "got 1.5"]),
            (["--heads", "0,0"], ["--heads", "0 (listed twice"]),
            (["--heads", "2"], ["--heads", "KV heads 0-1", "got 2 (out of range)"]),
        ]
        for args, needles in cases:
            r = run("simulate", "--workload", w, *args, "-o", self.path("sim"))
            self.assertEqual(r.returncode, 2, args)
            self.assert_one_line_error(r, *needles)
            self.assertFalse(os.path.exists(self.path("sim")), args)

    def test_simulate_policy_parameters_are_applied_and_recorded(self):
        w = self.path("w.safetensors")
        self.generate(w)
        out, js = self.path("p"), self.path("p.json")
        # h2o with no heavy hitters is the recent window alone: the same numbers as local.
        r = run("simulate", "--workload", w, "--layers", "all", "--budget", "8", "--optimum", "none", "--no-plots",
                "--policies", "h2o:heavy=0.25,recent=0.75,h2o:heavy=0,local,streamingllm:sinks=2", "--quiet",
                "-o", out, "--json", js)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(js) as f:
            doc = json.load(f)
        self.assertEqual(doc["policies"], ["h2o:heavy=0.25,recent=0.75", "h2o:heavy=0", "local",
                                           "streamingllm:sinks=2"])
        self.assertEqual(doc["policy_parameters"]["h2o:heavy=0.25,recent=0.75"],
                         {"name": "h2o", "parameters": {"heavy": 0.25, "recent": 0.75}})
        self.assertEqual(doc["policy_parameters"]["streamingllm:sinks=2"]["parameters"], {"sinks": 2})
        for head in doc["heads"]:
            p = head["policies"]
            self.assertEqual(p["h2o:heavy=0"]["total_retained_mass"], p["local"]["total_retained_mass"])
        rows = self.read_csv(os.path.join(out, "summary.csv"))  # the label is one quoted CSV field
        self.assertEqual({x["policy"] for x in rows}, set(doc["policies"]))
        cases = [
            ("h2o:sink=1", ["unknown key 'sink'", "heavy, recent"]),
            ("local:window=2", ["local takes no parameters"]),
            ("h2o:heavy=0.1,recent=0.1", ["sum to 1"]),
            ("h2o:heavy=52,recent=50", ["k = 8", "h2o:heavy=52,recent=50"]),
            ("streamingllm:sinks=8", ["k = 8", "sinks"]),
            ("compactor:sink_size_start=6,sink_size_end=4", ["k = 8", "sink_size_start + sink_size_end"]),
            ("compactor:blending=-1", ["blending"]),
            ("compactor:chunk_size=0", ["chunk_size"]),
        ]
        for policies, needles in cases:
            r = run("simulate", "--workload", w, "--budget", "8", "--policies", policies, "-o", self.path("bad"))
            self.assertEqual(r.returncode, 2, policies)
            self.assert_one_line_error(r, "--policies", *needles)
            self.assertFalse(os.path.exists(self.path("bad")), policies)
        r = run("simulate", "--list-policies")
        self.assertEqual(r.returncode, 0, r.stderr)
        for name in ("h2o", "h2o-oracle", "streamingllm", "snapkv", "h2o-noisy", "l2norm", "lookahead", "tova",
                     "knorm", "streaming_llm", "observed_attention", "keydiff", "leverage", "expected_attention",
                     "lagkv", "cur", "cap", "compactor"):  # kvpress's names too
            self.assertIn("\n  " + name, r.stdout)
        self.assertRegex(r.stdout, r"heavy +default 0\.5 ")
        self.assertRegex(r.stdout, r"sinks +default 4 ")
        # One column each for keys, defaults and meanings, whatever the longest key.
        rows = [line for line in r.stdout.splitlines() if " default " in line]
        self.assertEqual(len({line.index(" default ") for line in rows}), 1, rows)
        starts = set()
        for line in rows:
            value_at = line.index(" default ") + len(" default ")
            rest = line[value_at:]
            after_value = rest[len(rest.split()[0]):]
            starts.add(len(line) - len(after_value.lstrip()))
        self.assertEqual(len(starts), 1, rows)

    def nan_workload(self):
        """A q/k/v.npy directory (2 layers, 2 heads, 80 tokens) with one NaN in layer 1's q."""
        d = self.path("nan")
        os.mkdir(d)
        shape = (2, 2, 80, 8)
        count = 2 * 2 * 80 * 8
        for name in ("q", "k", "v"):
            values = [((i * 7919 + ord(name)) % 97) / 97.0 - 0.5 for i in range(count)]
            if name == "q":
                values[count // 2 + 3] = float("nan")  # layer 1, head 0, token 0, dim 3
            write_npy(os.path.join(d, name + ".npy"), shape, values)
        return d

    def test_every_workload_reader_takes_allow_nonfinite(self):
        d = self.nan_workload()
        commands = {
            "inspect": ["workload", "inspect", d],
            "simulate": ["simulate", "--workload", d, "--budget", "8", "--no-plots", "-o", self.path("s")],
            "verify": ["verify", "--workload", d, "--check", "core.row_sums", "-o", self.path("r")],
            "fit": ["workload", "fit", d, "-o", self.path("t.toml")],
        }
        for name, args in commands.items():
            r = run(*args)
            self.assertEqual(r.returncode, 2, name)
            self.assert_one_line_error(r, "q.npy", "NaN", "--allow-nonfinite")
        # Accepted where the command can use the data: inspect measures every head (NaN statistics
        # where the NaN is), simulate runs the layers that are finite.
        out = self.path("inspect.json")
        r = run(*commands["inspect"], "--allow-nonfinite", "--json", out, "--quiet")
        self.assertEqual(r.returncode, 0, r.stderr)
        r = run(*commands["simulate"], "--allow-nonfinite", "--layers", "0", "--quiet")
        self.assertEqual(r.returncode, 0, r.stderr)
        r = run(*commands["verify"], "--allow-nonfinite", "--layers", "0", "--quiet")
        self.assertEqual(r.returncode, 0, r.stderr)
        # Refused with the reason where the command needs the non-finite layer.
        for name, extra in (("simulate", ["--layers", "all"]), ("verify", []), ("fit", [])):
            r = run(*commands[name], "--allow-nonfinite", *extra)
            self.assertEqual(r.returncode, 2, name)
            self.assert_one_line_error(r, "layer 1 q", "NaN at query head 0, token 0, dim 3", "--allow-nonfinite accepts")
        self.assertFalse(os.path.exists(self.path("t.toml")))

    # ----- sweep -----

    SWEEP_GRID = """[workload]
presets = ["tiny"]
tokens = [%(tokens)d]
layers = [1]
seeds = [%(seeds)s]
[policy]
names = ["h2o", "local"]
[budget]
ratios = [0.125, 0.25]
[optimum]
modes = ["flow"]
"""

    def sweep_grid(self, tokens=64, seeds=(0, 1, 2)):
        """A grid of 4 * len(seeds) jobs on the tiny preset (2 KV heads, 1 layer)."""
        path = self.path("grid%d_%d.toml" % (tokens, len(seeds)))
        with open(path, "w") as f:
            f.write(self.SWEEP_GRID % {"tokens": tokens, "seeds": ", ".join(map(str, seeds))})
        return path

    def sweep_table(self, out):
        """The results table sorted by job id, and PRAGMA integrity_check."""
        import sqlite3
        db = sqlite3.connect("file:%s?mode=ro" % os.path.join(out, "results.sqlite"), uri=True)
        try:
            rows = db.execute("SELECT * FROM results ORDER BY id").fetchall()
            check = db.execute("PRAGMA integrity_check").fetchone()[0]
        finally:
            db.close()
        return rows, check

    def count_rows(self, out):
        import sqlite3
        try:
            db = sqlite3.connect("file:%s?mode=ro" % os.path.join(out, "results.sqlite"), uri=True, timeout=5)
            try:
                return db.execute("SELECT COUNT(*) FROM results").fetchone()[0]
            finally:
                db.close()
        except sqlite3.Error:
            return 0

    def test_sweep_runs_a_grid_resumes_shards_and_reports(self):
        grid = self.sweep_grid()
        out = self.path("results")
        start = time.monotonic()
        r = run("sweep", "--config", grid, "-o", out)
        elapsed = time.monotonic() - start
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("ran 12, 0 already done", r.stdout)
        # stderr is not a terminal: the first and the last job's line (at most one more every 5 s),
        # with elapsed time and ETA.
        lines = [l for l in r.stderr.splitlines() if l.startswith("sweep: ")]
        self.assertTrue(lines[0].startswith("sweep: 1/12 jobs (job "), lines[0])
        self.assertLessEqual(len(lines), 2 + int(elapsed / 5), r.stderr)
        self.assertTrue(lines[-1].startswith("sweep: 12/12 jobs (job "), lines[-1])
        self.assertIn("elapsed, ETA", lines[-1])
        quiet = run("sweep", "--config", grid, "-o", self.path("quiet"), "--quiet")
        self.assertEqual((quiet.returncode, quiet.stderr), (0, ""))
        rows, check = self.sweep_table(out)
        self.assertEqual(check, "ok")
        self.assertEqual(len(rows), 12)
        self.assertEqual(len({row[0] for row in rows}), 12)
        r = run("sweep", "--config", grid, "-o", out)  # a rerun skips every finished job
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("ran 0, 12 already done", r.stdout)
        self.assertEqual(self.sweep_table(out)[0], rows)
        # Two --shard processes cover the grid once; the report gathers them into the same table.
        sharded = self.path("sharded")
        for shard in ("0/2", "1/2"):
            r = run("sweep", "--config", grid, "-o", sharded, "--shard", shard)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("6 of 12 jobs", r.stdout)
        r = run("sweep", "report", sharded, "--no-plots")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.sweep_table(sharded)[0], rows)
        # The report: one CSV row per job in id order; policy <= OPT <= sum U <= 1 on every row.
        r = run("sweep", "report", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        csv_rows = self.read_csv(os.path.join(out, "sweep.csv"))
        self.assertEqual([c["id"] for c in csv_rows], sorted(row[0] for row in rows))
        for c in csv_rows:
            mass, opt, u = (float(c[k]) for k in ("mean_retained_mass", "optimum_mean_retained_mass",
                                                  "oracle_mean_retained_mass"))
            self.assertLessEqual(mass, opt + 1e-9, c)
            self.assertLessEqual(opt, u + 1e-9, c)
            self.assertLessEqual(u, 1 + 1e-9, c)
        with open(os.path.join(out, "summary.md")) as f:
            summary = f.read()
        self.assertIn("| h2o |", summary)
        self.assertIn("| OPT |", summary)
        import shutil
        if shutil.which("gnuplot"):
            for name in ("retained_vs_budget", "gap_to_optimum"):
                for ext in ("svg", "png"):
                    self.assertTrue(os.path.exists(os.path.join(out, f"{name}.{ext}")), name + ext)
        self.assertEqual([p for p in os.listdir(self.dir) if ".tmp." in p], [])

    def test_sweep_stores_the_layer_set_each_job_ran(self):
        grid = self.path("layers.toml")
        with open(grid, "w") as f:
            f.write(self.SWEEP_GRID.replace("layers = [1]", 'layers = [2, 1, "1"]')
                    .replace('["h2o", "local"]', '["h2o"]').replace("[0.125, 0.25]", "[0.25]")
                    .replace('["flow"]', '["none"]') % {"tokens": 32, "seeds": "0"})
        out = self.path("layers")
        r = run("sweep", "--config", grid, "-o", out, "--quiet")
        self.assertEqual(r.returncode, 0, r.stderr)
        import sqlite3
        db = sqlite3.connect("file:%s?mode=ro" % os.path.join(out, "results.sqlite"), uri=True)
        try:
            stored = sorted(db.execute("SELECT layers, typeof(layers), groups FROM results").fetchall())
            version = db.execute("PRAGMA user_version").fetchone()[0]
        finally:
            db.close()
        # Layers 0-1 (the count 2), layer 0 (the count 1), layer 1 alone (the set "1"): 2 KV heads each.
        self.assertEqual(stored, [("0", "text", 2), ("0-1", "text", 4), ("1", "text", 2)])
        self.assertEqual(version, 1)

    def test_sweep_bad_configs_fail_with_one_line_naming_the_key_before_any_job(self):
        base = self.SWEEP_GRID % {"tokens": 64, "seeds": "0"}
        cases = [
            (base.replace("layers = [1]", "layerz = [1]"), ["layerz", "[workload]"]),
            (base.replace("layers = [1]", 'layers = ["1,1"]'), ['[workload] layers = "1,1"', "listed twice"]),
            (base.replace("seeds = [0]", "seeds = []"), ["[workload] seeds"]),
            (base.replace('names = ["h2o", "local"]', "names = []"), ["[policy] names"]),
            (base.replace("ratios = [0.125, 0.25]", "ratios = [0.5, 1.5]"), ["[budget] ratios", "1.5"]),
            (base.replace("ratios = [0.125, 0.25]", "ratios = [0.0]"), ["[budget] ratios"]),
            (base.replace("ratios = [0.125, 0.25]", "sizes = [65]"), ["[budget] sizes", "65"]),
            (base.replace("ratios = [0.125, 0.25]", "sizes = [-1]"), ["[budget] sizes"]),
            (base.replace('"local"', '"magic"'), ["[policy] names", "magic"]),
            (base.replace('"tiny"', '"tiny-xl"'), ["[workload] presets", "tiny-xl"]),
            (base + "[extras]\n", ["extras"]),
            ("[workload\n", ["TOML", "line 1"]),
        ]
        for text, needles in cases:
            grid = self.path("bad.toml")
            with open(grid, "w") as f:
                f.write(text)
            out = self.path("results")
            r = run("sweep", "--config", grid, "-o", out)
            self.assertEqual(r.returncode, 2, text)
            self.assert_one_line_error(r, "bad.toml", *needles)
            self.assertFalse(os.path.exists(out), text)
        r = run("sweep", "--config", self.path("missing.toml"), "-o", self.path("results"))
        self.assert_one_line_error(r, "missing.toml")
        r = run("sweep", "--config", self.sweep_grid(), "-o", self.path("results"), "--shard", "2/2")
        self.assert_one_line_error(r, "--shard")
        r = run("sweep", "report", self.path("nothing-here"))
        self.assert_one_line_error(r, "nothing-here")

    def interrupted_sweep(self, sig):
        """Starts a 20-job sweep, sends `sig` once some jobs are committed, reruns it, and checks
        that the result equals an uninterrupted run's. Returns the interrupted run's exit code."""
        import signal
        import time
        grid = self.sweep_grid(tokens=128, seeds=range(5))
        reference = self.path("reference")
        r = run("sweep", "--config", grid, "-o", reference)
        self.assertEqual(r.returncode, 0, r.stderr)
        expected, _ = self.sweep_table(reference)
        self.assertEqual(len(expected), 20)
        out = self.path("interrupted")
        proc = subprocess.Popen([BIN, "sweep", "--config", grid, "-o", out], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
        deadline = time.monotonic() + 120
        while self.count_rows(out) < 3 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.005)
        proc.send_signal(sig)
        _, stderr = proc.communicate(timeout=120)
        done = self.count_rows(out)
        self.assertGreaterEqual(done, 3)
        self.assertLess(done, 20, "the sweep finished before the signal; nothing was interrupted")
        rows, check = self.sweep_table(out)
        self.assertEqual(check, "ok")
        self.assertTrue(set(rows) <= set(expected))
        r = run("sweep", "--config", grid, "-o", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("ran %d, %d already done" % (20 - done, done), r.stdout)  # nothing redone
        rows, check = self.sweep_table(out)
        self.assertEqual(check, "ok")
        self.assertEqual(len({row[0] for row in rows}), len(rows))
        self.assertEqual(rows, expected)
        return proc.returncode, stderr.decode("utf-8")

    def test_sweep_killed_with_sigkill_resumes_without_redoing_or_duplicating(self):
        import signal
        code, _ = self.interrupted_sweep(signal.SIGKILL)
        self.assertEqual(code, -signal.SIGKILL)

    def test_sweep_stopped_with_sigint_commits_and_exits_130(self):
        import signal
        code, stderr = self.interrupted_sweep(signal.SIGINT)
        self.assertEqual(code, 130)
        self.assertIn("interrupted", stderr)

    def test_sweep_under_mpirun_gives_the_single_process_table(self):
        import shutil
        mpirun = shutil.which("mpirun")
        if not mpirun:
            self.skipTest("mpirun is not installed")
        if "built with MPI" not in run("sweep", "--help").stdout:
            self.skipTest("subevict was built without MPI")
        # 256 tokens: large enough for Eigen's multithreaded products, which a lone process would
        # run on every core while mpirun binds each rank to one.
        grid = self.sweep_grid(tokens=256, seeds=range(2))
        single = self.path("single")
        r = run("sweep", "--config", grid, "-o", single)
        self.assertEqual(r.returncode, 0, r.stderr)
        out = self.path("mpi")
        # Open MPI's own allocations outlive MPI_Finalize: no leak reports in sanitizer builds.
        env = dict(os.environ, ASAN_OPTIONS=os.environ.get("ASAN_OPTIONS", "") + ":detect_leaks=0")
        r = subprocess.run([mpirun, "--allow-run-as-root", "--oversubscribe", "-np", "2", BIN, "sweep",
                            "--config", grid, "-o", out], capture_output=True, timeout=600, env=env)
        self.assertEqual(r.returncode, 0, r.stderr.decode("utf-8", "replace"))
        self.assertIn(b"over 2 ranks", r.stdout)
        self.assertEqual(sorted(os.listdir(out)), ["results.sqlite"])  # rank files gathered and removed
        expected, _ = self.sweep_table(single)
        rows, check = self.sweep_table(out)
        self.assertEqual(check, "ok")
        self.assertEqual(len(rows), 8)
        self.assertEqual(rows, expected)  # bit for bit: Python floats are the stored binary64 values


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: cli_test.py PATH_TO_SUBEVICT")
    BIN = os.path.abspath(sys.argv.pop(1))
    result = unittest.main(exit=False, verbosity=1).result
    failed = len(result.failures) + len(result.errors)
    print(f"cli_test: {result.testsRun - failed} passed, {failed} failed")
    sys.exit(1 if failed else 0)
