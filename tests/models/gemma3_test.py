"""Gemma 3 270M (scripts/setup_model gemma3) through subevict.models' own forward, on the first
TOKENS tokens of Debian's GPL-3 text (more than the 512-key window of its sliding layers).

A check that needs no reference implementation: the model's perplexity on an ordinary English text
is low, and every deliberately wrong forward (norm weights + 1 again, QK-norm off, sliding windows
off, the two RoPE bases swapped) raises it clearly. Run with the project's venv:
    .venv/bin/python -m pytest -q tests/models
"""

import os
import subprocess
import sys

import pytest
import torch

import subevict
from subevict import models

sys.dont_write_bytecode = True  # leave no __pycache__ in tests/scripts/
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "scripts"))
import rotary_reference  # noqa: E402  (tests/scripts/rotary_reference.py)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TEXT = "/usr/share/common-licenses/GPL-3"
TOKENS = 640
# Measured on these tokens (the tokenization equals llama.cpp's, tests/models/tokenizer_test.py):
# perplexity 13.86 with the right forward; beyond the window 17.91 against 29.8 (no windows), 667
# (RoPE bases swapped), 1.9e4 (no QK-norm) and 1.4e8 (norms shifted twice). The bounds leave room
# for another summation order.
PERPLEXITY_BOUND = 20.0
ABLATION_FACTOR = 1.15


@pytest.fixture(scope="module")
def gemma():
    result = subprocess.run([os.path.join(ROOT, "scripts", "setup_model"), "gemma3"],
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, f"scripts/setup_model gemma3 failed:\n{result.stderr}"
    model = models.load(result.stdout.strip().splitlines()[-1])
    with open(TEXT, encoding="utf-8") as stream:
        ids = models.tokenize(model, stream.read(), TOKENS)[0]
    return model, ids


def perplexity(model, ids, start=0):
    """Perplexity of the tokens after position `start`."""
    logp = torch.log_softmax(models.forward(model, ids), dim=-1)
    return float(torch.exp(-logp[start:-1].gather(-1, ids[start + 1:, None]).mean()))


def test_configuration_from_metadata(gemma):
    model, ids = gemma
    assert (model.layers, model.q_heads, model.kv_heads, model.head_dim) == (18, 4, 1, 256)
    assert [layer for layer, w in enumerate(model.windows) if w is None] == [5, 11, 17]
    assert set(model.windows) == {None, 512}
    assert int(ids[0]) == model.config["bos_token_id"] == 2


def test_perplexity_is_low_and_every_wrong_forward_raises_it(gemma):
    model, ids = gemma
    assert perplexity(model, ids) < PERPLEXITY_BOUND
    # Beyond the window every ablation applies: compare the perplexity of the last tokens.
    start = model.config["sliding_window"]
    right = perplexity(model, ids, start)
    for broken in ({"shift_norms": True}, {"qk_norm": False}, {"window": False},
                   {"swap_rope_bases": True}):
        wrong = perplexity(model.ablated(**broken), ids, start)
        print(f"\nGemma 3 perplexity {right:.2f}; with {broken}: {wrong:.4g}")
        assert wrong > ABLATION_FACTOR * right, broken


def test_closed_loop_evicts_the_global_layers_and_reproduces_the_full_model(gemma):
    model, ids = gemma
    n = 96
    result = subevict.closed_loop(model, ids[:n], "h2o,opt", [n, 24], quiet=True)
    full, small = result["runs"][:2], result["runs"][2:]
    for run in full:
        assert (run.metrics["token_logprob"] == result["full"]["token_logprob"]).all()
    for run in small:
        assert [r.layer for r in run.layers] == [5, 11, 17]
        assert run.summary(0.0)["mass_order_violations"] == 0
    with pytest.raises(subevict.InputError, match="layer 0 is a sliding-window layer"):
        subevict.closed_loop(model, ids[:n], "h2o", [24], layers=[0], quiet=True)


def test_the_tokenizer_encodes_as_sentencepiece_merges(gemma):
    model, _ = gemma
    tokens = models.field(model.reader, "tokenizer.ggml.tokens")
    ids = models.tokenize(model, "Hello world, the GNU General Public License.", 10)[0].tolist()
    pieces = [tokens[i] for i in ids[1:]]
    assert "".join(pieces).replace("\u2581", " ") == "Hello world, the GNU General Public License."
    assert pieces[:4] == ["Hello", "\u2581world", ",", "\u2581the"]


def test_export_records_each_layers_window_and_every_tool_reads_it(gemma, tmp_path):
    model, _ = gemma
    out = tmp_path / "gemma.safetensors"
    n = 600  # beyond the 512-key window
    result = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "export_gguf.py"),
                             "--gguf", model.path, "--text-file", TEXT, "--tokens", str(n),
                             "--layers", "4,5", "-o", str(out)],
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    w = subevict.read_workload(str(out))
    assert w.windows == [512, 0]  # source layer 4 slides, layer 5 is global
    window_rows = subevict.attention(w, 0, 0)
    global_rows = subevict.attention(w, 1, 0)
    last = n - 1
    assert float(abs(window_rows[last, :last - 511]).max()) == 0.0
    assert abs(float(window_rows[last].sum()) - 1.0) < 1e-9
    assert float(global_rows[last, :last - 511].sum()) > 1e-3  # the global layer still sees them
    assert [layer["window"] for layer in subevict.inspect(w)["layers"]] == [512, 0]
    # The same tensors read as global attention differ: the mask is part of the workload.
    unmasked = subevict.Workload(w.q, w.k, w.v, w.score_scale, w.metadata)
    assert float(subevict.attention(unmasked, 0, 0)[last, :last - 511].sum()) > 1e-3
    # Each layer's pre-RoPE q and k, rotated on its own base (10000 on the sliding layer, 1e6 on
    # the global one) by an independent RoPE, give the stored q and k.
    from safetensors.numpy import load_file
    from safetensors import safe_open

    tensors = load_file(str(out))
    with safe_open(str(out), framework="np") as stream:
        metadata = stream.metadata()
    rotary = rotary_reference.parse_rotary(metadata, 2)
    assert rotary == [(10000.0, 256), (1000000.0, 256)]
    for layer, (base, dims) in enumerate(rotary):
        for part in ("q", "k"):
            error, tolerance = rotary_reference.max_rotation_error(
                tensors[f"layers.{layer}.{part}_pre"], tensors[f"layers.{layer}.{part}"], base, dims)
            assert error <= tolerance, (layer, part, error, tolerance)
