#!/usr/bin/env python3
"""End-to-end tests of the subevict executable: usage, outputs, determinism and bad input.

Usage: cli_test.py PATH_TO_SUBEVICT   (stdlib only; any python3)
"""
import json
import os
import subprocess
import sys
import tempfile
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

    def test_verify_runs_the_checks_and_writes_json(self):
        out = self.path("verify.json")
        r = run("verify", "--tokens", "256", "--json", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(out) as f:
            doc = json.load(f)
        ids = [c["id"] for c in doc["checks"]]
        self.assertIn("core.tv_identity", ids)
        for c in doc["checks"]:
            self.assertIn(c["status"], ("held", "violated"))
            self.assertIn(c["id"], r.stdout)
        identity = {c["id"]: c["status"] for c in doc["checks"] if c["id"].startswith("core.")}
        self.assertEqual(set(identity.values()), {"held"}, identity)

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
            if "gnuplot: not found" not in r.stderr and "gnuplot not found" not in r.stderr:
                with open(plot) as f:
                    self.assertIn("<svg", f.read())

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
        r = run("simulate", "--workload", f, "--layers", "0", "--heads", "1", "--budget", "8",
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
            (["--workload", f, "--heads", "7"], "--heads"),
            (["--workload", f, "--optimum", "best"], "--optimum"),
            (["--workload", f, "--layers", "9"], "--layers"),
            (["--preset", "no-such-model"], "no-such-model"),
            (["--preset", "tiny", "--workload", f], "--preset"),
        ]
        for args, needle in cases:
            out = self.path("sim")
            r = run("simulate", *args, "-o", out, "--json", self.path("sim.json"))
            self.assertEqual(r.returncode, 2, args)
            self.assert_one_line_error(r, needle)
            self.assertFalse(os.path.exists(out), args)
            self.assertFalse(os.path.exists(self.path("sim.json")), args)
            self.assertEqual([p for p in os.listdir(self.dir) if ".tmp." in p], [], args)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: cli_test.py PATH_TO_SUBEVICT")
    BIN = os.path.abspath(sys.argv.pop(1))
    result = unittest.main(exit=False, verbosity=1).result
    failed = len(result.failures) + len(result.errors)
    print(f"cli_test: {result.testsRun - failed} passed, {failed} failed")
    sys.exit(1 if failed else 0)
