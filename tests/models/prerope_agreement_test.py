"""expected_attention, cap, leverage and compactor against kvpress 0.5.5's own scorers on an
exported model with a rotary: a tiny random Llama-like model (tests/scripts/tiny_llama.py)
exported by scripts/export_qkv.py with its pre-RoPE tensors, compared at the first full step of
every layer, KV head and budget by scripts/prerope_agreement.py (kvpress's press classes run from
its wheel). With the pre-RoPE tensors subevict must evict what kvpress evicts where the two compute
the same thing; without them (the post-RoPE approximation) it does not, so the test fails when the
scorers ignore the pre-RoPE tensors.

kvpress's wheel is fetched once into .cache/kvpress/ by scripts/kvpress_wheel.py (as tests/kvpress
does); skipped, with the reason, where it cannot be fetched or imported.
Run with the project's venv: .venv/bin/python -m pytest -q tests/models/prerope_agreement_test.py
"""

import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.dont_write_bytecode = True  # leave no __pycache__ in scripts/ or tests/scripts/
sys.path.insert(0, os.path.join(ROOT, "scripts"))
sys.path.insert(0, os.path.join(ROOT, "tests", "scripts"))

import export_qkv  # noqa: E402
import kvpress_wheel  # noqa: E402
import prerope_agreement  # noqa: E402
import tiny_llama  # noqa: E402

TEXT = ("Attention sinks, heavy hitters and what to evict: a cache that keeps the keys a query "
        "will need and drops the rest, step after step, as the text goes on and on.")
BUDGETS = [24, 48, 80, 120]


@pytest.fixture(scope="module")
def agreement(tmp_path_factory):
    try:
        kvpress_wheel.load()
    except kvpress_wheel.Unavailable as e:
        pytest.skip(f"kvpress's wheel cannot be loaded: {e}")
    pytest.importorskip("transformers", reason="the tiny model is a transformers Llama")
    out = str(tmp_path_factory.mktemp("prerope") / "tiny.safetensors")
    model = tiny_llama.build_tiny_llama(seed=3, hidden_size=64, num_attention_heads=4, num_key_value_heads=2,
                                        head_dim=16, num_hidden_layers=3, rope_theta=500.0,
                                        max_position_embeddings=256)
    loader = lambda *args: (model, tiny_llama.TinyTokenizer())  # noqa: E731
    assert export_qkv.main(["--model", "tiny", "--text", TEXT, "-o", out], loader=loader) == 0
    result = prerope_agreement.measure(out, BUDGETS)
    print("\nagreement with kvpress (post-RoPE, pre-RoPE):",
          {s: (result["agreement"]["post"][s], result["agreement"]["pre"][s])
           for s in prerope_agreement.SCORERS}, file=sys.stderr)
    return result


@pytest.mark.parametrize("scorer", ["expected_attention", "cap"])
def test_query_statistics_scorers_evict_as_kvpress_with_the_pre_rope_tensors(agreement, scorer):
    # The same formula in both (float32 there, double here): every case agrees.
    assert agreement["agreement"]["pre"][scorer] == 1.0, [c for c in agreement["cases"]
                                                          if c["pre"][scorer] != c["kvpress"][scorer]]


@pytest.mark.parametrize("scorer", prerope_agreement.SCORERS)
def test_the_post_rope_approximation_agrees_less(agreement, scorer):
    # Without the pre-RoPE tensors the scorers read other queries or keys: a scorer that ignored
    # them would agree exactly as often with them as without.
    pre, post = (agreement["agreement"][v][scorer] for v in ("pre", "post"))
    assert pre > post, (scorer, pre, post)
