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


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: cli_test.py PATH_TO_SUBEVICT")
    BIN = os.path.abspath(sys.argv.pop(1))
    result = unittest.main(exit=False, verbosity=1).result
    failed = len(result.failures) + len(result.errors)
    print(f"cli_test: {result.testsRun - failed} passed, {failed} failed")
    sys.exit(1 if failed else 0)
