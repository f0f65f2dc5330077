#!/usr/bin/env python3
"""Tests of scripts/export_gguf.py on a real model: SmolLM2-135M-Instruct (GGUF, Q4_1), which
scripts/setup_model installs into .venv/, on the first TOKENS tokens of Debian's GPL-3 text.

Run from anywhere with the project's venv (scripts/setup_model makes it):

    .venv/bin/python tests/scripts/real_model_test.py [-v]

Nothing is skipped: when the model cannot be installed, or this Python lacks transformers or
gguf, every test fails and says why.
"""

import hashlib
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SCRIPT = os.path.join(ROOT, "scripts", "export_gguf.py")
SETUP_MODEL = os.path.join(ROOT, "scripts", "setup_model")
TEXT = "/usr/share/common-licenses/GPL-3"
TOKENS = 384
ATTENTION_TOL = 1e-5
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(ROOT, "scripts"))
sys.path.insert(0, HERE)

import numpy  # noqa: E402
import torch  # noqa: E402

import export_gguf  # noqa: E402
import hf_llama_reference  # noqa: E402
import rotary_reference  # noqa: E402

models = export_gguf.models

MODEL = {}  # filled once by install_model(): gguf path, reader, model, tokens, attentions


def install_model():
    """Runs scripts/setup_model and prepares the shared state; raises AssertionError (a test
    failure, not a skip) when anything is missing."""
    if MODEL:
        return MODEL
    result = subprocess.run([SETUP_MODEL], capture_output=True, text=True, timeout=900)
    if result.returncode != 0:
        raise AssertionError(f"scripts/setup_model failed (exit {result.returncode}):\n"
                             f"{result.stderr}")
    path = result.stdout.strip().splitlines()[-1]
    for module in ("transformers", "gguf"):
        try:
            __import__(module)
        except ImportError:
            raise AssertionError(f"{sys.executable} cannot import {module}: run this test with "
                                 f"{os.path.join(ROOT, '.venv', 'bin', 'python')}") from None
    reader = models.open_gguf(path)
    with open(TEXT, encoding="utf-8") as stream:
        text = stream.read()
    model, config = hf_llama_reference.build_model(models, reader)
    input_ids = models.tokenize(reader, text, TOKENS)
    with torch.no_grad():
        out = model(input_ids=input_ids, labels=input_ids, output_attentions=True,
                    use_cache=False)
    MODEL.update(path=path, reader=reader, text=text, model=model, config=config,
                 input_ids=input_ids, loss=float(out.loss), logits=out.logits[0],
                 attentions=[a[0].double().numpy() for a in out.attentions])
    return MODEL


def attention_from_qk(q, k, scale):
    """Causal softmax(scale * q k^T) per query head, float64: q [H, T, D], k [KV, T, D] (numpy)
    -> [H, T, T]; query head h reads KV head h // (H / KV)."""
    q = numpy.asarray(q, dtype=numpy.float64)
    k = numpy.asarray(k, dtype=numpy.float64)
    group = q.shape[0] // k.shape[0]
    scores = scale * numpy.einsum("htd,hsd->hts", q, numpy.repeat(k, group, axis=0))
    tokens = q.shape[1]
    scores[:, numpy.triu(numpy.ones((tokens, tokens), dtype=bool), 1)] = -numpy.inf
    scores -= scores.max(axis=-1, keepdims=True)
    weights = numpy.exp(scores)
    return weights / weights.sum(axis=-1, keepdims=True)


def max_attention_diff(tensors, scale, attentions):
    """[(layer, max |attention from exported q, k - model attention|)] over all heads."""
    diffs = []
    for layer, expected in enumerate(attentions):
        got = attention_from_qk(tensors[f"layers.{layer}.q"], tensors[f"layers.{layer}.k"],
                                scale)
        diffs.append((layer, float(numpy.abs(got - expected).max())))
    return diffs


def load_export(path):
    """(tensors as numpy float32, metadata) of an exported file."""
    from safetensors import safe_open

    with safe_open(path, framework="np") as stream:
        return {name: stream.get_tensor(name) for name in stream.keys()}, stream.metadata()


def run_cli(*args):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=600)


class RealModelTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.model = install_model()
        cls._tmp = tempfile.TemporaryDirectory(prefix="real_model_test.")
        cls.tmp = cls._tmp.name
        cls.export_path = os.path.join(cls.tmp, "a.safetensors")
        cls.export_result = run_cli("--gguf", cls.model["path"], "--text-file", TEXT,
                                    "--tokens", str(TOKENS), "-o", cls.export_path)

    @classmethod
    def tearDownClass(cls):
        cls._tmp.cleanup()

    def exported(self):
        self.assertEqual(self.export_result.returncode, 0, self.export_result.stderr)
        return load_export(self.export_path)

    def test_config_from_metadata(self):
        config = self.model["config"]
        self.assertEqual((config["num_hidden_layers"], config["num_attention_heads"],
                          config["num_key_value_heads"], config["head_dim"]), (30, 9, 3, 64))
        self.assertEqual(config["rope_theta"], 100000.0)
        self.assertTrue(config["tie_word_embeddings"])

    def test_exported_qk_reproduce_model_attention(self):
        tensors, metadata = self.exported()
        self.assertEqual(len(tensors), 5 * 30)
        self.assertEqual(tensors["layers.0.q"].shape, (9, TOKENS, 64))
        self.assertEqual(tensors["layers.29.k"].shape, (3, TOKENS, 64))
        self.assertEqual(float(metadata["score_scale"]), 64 ** -0.5)
        diffs = max_attention_diff(tensors, float(metadata["score_scale"]),
                                   self.model["attentions"])
        worst = max(diff for _, diff in diffs)
        print(f"\nmax |attention diff| over 30 layers x 9 heads: {worst:.3g}", file=sys.stderr)
        for layer, diff in diffs:
            self.assertLessEqual(diff, ATTENTION_TOL, f"layer {layer}")

    def test_pre_rope_tensors_rotate_into_q_and_k(self):
        """The stored q_pre/k_pre, rotated with the stored rotary parameters (the model's base
        1e5, all 64 dims) by an independent float64 RoPE, give the stored q/k to the float32
        rotation tolerance; and they are not the rotated tensors themselves."""
        tensors, metadata = self.exported()
        rotary = rotary_reference.parse_rotary(metadata, 30)
        self.assertEqual(set(rotary), {(100000.0, 64)})
        for layer, (base, dims) in enumerate(rotary):
            for part in ("q", "k"):
                pre, post = tensors[f"layers.{layer}.{part}_pre"], tensors[f"layers.{layer}.{part}"]
                self.assertEqual(pre.shape, post.shape)
                error, tolerance = rotary_reference.max_rotation_error(pre, post, base, dims)
                self.assertLessEqual(error, tolerance, f"layer {layer} {part}")
                self.assertGreater(float(numpy.abs(pre - post).max()), 100 * tolerance)

    def test_own_forward_equals_the_transformers_reference(self):
        """subevict.models' forward against transformers' LlamaForCausalLM on the same weights:
        both float32 with the same operation order, so the logits agree to float32 rounding."""
        own = models.load(self.model["path"])
        logits = models.forward(own, self.model["input_ids"][0])
        reference = self.model["logits"]
        diff = float((logits - reference).abs().max())
        print(f"\nmax |logit diff| own forward vs transformers: {diff:.3g}", file=sys.stderr)
        self.assertLessEqual(diff, 1e-3 * float(reference.abs().max()))

    def test_perplexity_real_vs_random(self):
        real = numpy.exp(self.model["loss"])
        torch.manual_seed(0)
        from transformers import LlamaForCausalLM

        random_model = LlamaForCausalLM(self.model["model"].config).eval()
        with torch.no_grad():
            loss = random_model(input_ids=self.model["input_ids"],
                                labels=self.model["input_ids"], use_cache=False).loss
        random = numpy.exp(float(loss))
        print(f"\nperplexity on {TOKENS} GPL-3 tokens: real {real:.2f}, random init "
              f"{random:.0f}", file=sys.stderr)
        self.assertLess(real, 30)
        self.assertGreater(random, 1000)

    def test_provenance(self):
        _, metadata = self.exported()
        with open(TEXT, "rb") as stream:
            text_sha = hashlib.sha256(stream.read()).hexdigest()
        expected = {
            "format": "subevict.qkv.v1",
            "exporter": "scripts/export_gguf.py",
            "model_name": "Smollm2 135M 8k Lc100K Mix1 Ep2",
            "source": os.path.basename(self.model["path"]),
            "gguf_sha256": models.file_sha256(self.model["path"]),
            "prompt_sha256": text_sha,
            "tokens": str(TOKENS),
            "token_ids_sha256": models.token_ids_sha256(self.model["input_ids"]),
            "source_layers": ",".join(str(i) for i in range(30)),
        }
        self.assertEqual({key: metadata.get(key) for key in expected}, expected)

    def test_export_is_bit_identical_and_if_changed_keeps_it(self):
        self.exported()
        again = os.path.join(self.tmp, "b.safetensors")
        result = run_cli("--gguf", self.model["path"], "--text-file", TEXT, "--tokens",
                         str(TOKENS), "-o", again)
        self.assertEqual(result.returncode, 0, result.stderr)
        with open(self.export_path, "rb") as a, open(again, "rb") as b:
            self.assertTrue(a.read() == b.read(), "two exports differ")
        before = os.stat(again).st_mtime_ns
        result = run_cli("--gguf", self.model["path"], "--text-file", TEXT, "--tokens",
                         str(TOKENS), "--if-changed", "-o", again)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("is current", result.stderr)
        self.assertEqual(os.stat(again).st_mtime_ns, before)

    def test_layer_subset(self):
        out = os.path.join(self.tmp, "subset.safetensors")
        tensors, metadata = export_gguf.export(self.model["path"], self.model["text"], 64,
                                               [3, 17], out)
        self.assertEqual(sorted(tensors), [f"layers.{i}.{p}" for i in (0, 1)
                                           for p in ("k", "k_pre", "q", "q_pre", "v")])
        self.assertEqual(metadata["source_layers"], "3,17")
        full, _ = self.exported()
        for out_index, layer in ((0, 3), (1, 17)):
            numpy.testing.assert_allclose(tensors[f"layers.{out_index}.q"].numpy(),
                                          full[f"layers.{layer}.q"][:, :64], atol=1e-4)


class PermutationTest(unittest.TestCase):
    def test_unpermute_inverts_permute(self):
        weight = torch.arange(6 * 8 * 3, dtype=torch.float32).reshape(6 * 8, 3)
        llama = sys.modules[models.__name__ + ".llama"]
        permuted = llama.permute_qk(weight, 6)
        self.assertFalse(torch.equal(permuted, weight))
        self.assertTrue(torch.equal(llama.unpermute_qk(permuted, 6), weight))
        # Head 0, head_dim 8: HF rows (0..3 | 4..7) become interleaved pairs 0,4,1,5,2,6,3,7.
        self.assertEqual(permuted[:8, 0].tolist(), [0, 12, 3, 15, 6, 18, 9, 21])

    def test_keeping_the_gguf_permutation_breaks_attention_and_perplexity(self):
        model = install_model()
        wrong = models.load(model["path"], undo_permutation=False)
        ids = model["input_ids"][0]
        tensors = export_gguf.capture_qkv(wrong, ids, list(range(wrong.layers)))
        tensors = {name: t.numpy() for name, t in tensors.items()}
        diffs = max_attention_diff(tensors, wrong.score_scale, model["attentions"])
        self.assertGreater(max(diff for _, diff in diffs), 0.1)
        logp = torch.log_softmax(models.forward(wrong, ids), dim=-1)
        perplexity = float(torch.exp(-logp[:-1].gather(-1, ids[1:, None]).mean()))
        print(f"\nperplexity with the GGUF permutation kept: {perplexity:.1f}", file=sys.stderr)
        self.assertGreater(perplexity, 30)


class ErrorTest(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="real_model_test.")
        self.tmp = self._tmp.name
        self.out = os.path.join(self.tmp, "out.safetensors")

    def tearDown(self):
        self._tmp.cleanup()

    def write(self, name, data):
        path = os.path.join(self.tmp, name)
        with open(path, "wb") as stream:
            stream.write(data)
        return path

    def write_gguf(self, name, arch, keys=True):
        """A tiny GGUF file of architecture `arch` with one tensor (and the llama.* size keys
        when `keys`)."""
        import gguf

        path = os.path.join(self.tmp, name)
        writer = gguf.GGUFWriter(path, arch)
        if keys:
            writer.add_block_count(1)
            writer.add_embedding_length(4)
        writer.add_tensor("token_embd.weight", numpy.zeros((8, 4), dtype=numpy.float32))
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
        writer.close()
        return path

    def assertOneLineError(self, args, message):
        result = run_cli(*args)
        self.assertEqual(result.returncode, 2, result.stderr)
        lines = result.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, result.stderr)
        self.assertTrue(lines[0].startswith("export_gguf: error: "), lines[0])
        self.assertIn(message, lines[0])
        self.assertFalse(os.path.exists(self.out))

    def test_bad_inputs(self):
        gguf_path = install_model()["path"]
        short = self.write("short.txt", b"Only a few words.")
        cases = [
            (["--gguf", os.path.join(self.tmp, "missing.gguf")], "missing.gguf: no such file"),
            (["--gguf", self.write("text.gguf", b"not a model at all")], "is not a GGUF file"),
            (["--gguf", self.write_gguf("gpt2.gguf", "gpt2")], "unsupported architecture 'gpt2'"),
            (["--gguf", self.write_gguf("bare.gguf", "llama", keys=False)],
             "llama.embedding_length is missing"),
            (["--gguf", gguf_path, "--text-file", short], "fewer than --tokens 384"),
            (["--gguf", gguf_path, "--tokens", "0"], "--tokens must be at least 1"),
            (["--gguf", gguf_path, "--layers", "30"], "unknown layer index 30"),
            (["--gguf", gguf_path, "--text-file", os.path.join(self.tmp, "none.txt")],
             "cannot read --text-file"),
            (["--gguf", gguf_path, "--text-file", self.write("empty.txt", b" \n")], "is empty"),
        ]
        for args, message in cases:
            defaults = {"--text-file": TEXT, "--tokens": str(TOKENS)}
            for key, value in defaults.items():
                if key not in args:
                    args = args + [key, value]
            with self.subTest(args=args):
                self.assertOneLineError(args + ["-o", self.out], message)


if __name__ == "__main__":
    program = unittest.main(exit=False)
    result = program.result
    failed = len(result.failures) + len(result.errors) + len(result.unexpectedSuccesses)
    passed = result.testsRun - failed - len(result.skipped)
    print(f"real_model_test: {passed} passed, {failed} failed, {len(result.skipped)} skipped")
    sys.exit(0 if failed == 0 and result.testsRun > 0 else 1)
