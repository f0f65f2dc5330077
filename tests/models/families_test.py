"""The forwards of the LLaMA-shaped families (subevict.models: llama, qwen2, qwen3, phi3) on small
GGUF files that the tests write with the gguf package (small_gguf.py: llama.cpp's tensor names,
metadata and a small vocabulary), from random weights. llama.cpp itself runs the same files:
llama_cpp_families_test.py.

References, independent of subevict.models:
- Hugging Face transformers' LlamaForCausalLM, Qwen2ForCausalLM and Phi3ForCausalLM on the same
  weights (the models llama.cpp's converter reads);
- for Qwen3 (newer than the transformers that runs on this torch), `reference_logits` below: one
  position at a time in float64 numpy from the Hugging Face parameter names, itself checked
  against transformers on Qwen2 and Phi-3 here.
Each family also gets a deliberately wrong forward (a bias dropped, QK-norm off, gate and up
swapped, the interleaved RoPE of llama) that must miss the reference.
"""

import numpy as np
import pytest
import torch

from small_gguf import (EPS, FFN, HEADS, HIDDEN, KV_HEADS, LAYERS, THETA, VOCAB, ablate,
                        random_weights, write_gguf)
from subevict import models

TOKENS = 40
# float32 forwards in different orders against each other or float64: logits of magnitude ~10
# agree to ~1e-5; a wrong forward misses by far more than 1e-2.
LOGIT_TOL = 1e-3


def transformers_logits(family, weights, ids, sliding_window=None):
    import transformers

    common = dict(vocab_size=VOCAB, hidden_size=HIDDEN, intermediate_size=FFN, num_hidden_layers=LAYERS,
                  num_attention_heads=HEADS, num_key_value_heads=KV_HEADS, max_position_embeddings=256,
                  rms_norm_eps=EPS, rope_theta=THETA, tie_word_embeddings=False, attn_implementation="eager")
    if family == "llama":
        model = transformers.LlamaForCausalLM(transformers.LlamaConfig(**common))
    elif family == "qwen2":
        model = transformers.Qwen2ForCausalLM(transformers.Qwen2Config(**common))
    else:
        model = transformers.Phi3ForCausalLM(transformers.Phi3Config(
            **common, pad_token_id=0, bos_token_id=1, eos_token_id=2, original_max_position_embeddings=256,
            sliding_window=sliding_window))
    missing, unexpected = model.load_state_dict(weights, strict=False)
    assert not unexpected and all("rotary" in m for m in missing), (missing, unexpected)
    model.eval()
    with torch.no_grad():
        return model(ids[None]).logits[0]


def reference_logits(weights, ids):
    """Logits [n, vocab] in float64, one position at a time with an explicit cache, from the Hugging
    Face names: the LLaMA layout, a projection bias and QK-norm where the weights have them, the
    fused qkv and gate_up of Phi-3, RoPE on rotate_half halves."""
    w = {name: t.double().numpy() for name, t in weights.items()}
    d = HIDDEN // HEADS
    inv_freq = 1.0 / THETA ** (np.arange(0, d, 2) / d)

    def rms(x, weight):
        return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + EPS) * weight

    def rope(x, position):  # x [heads, d]
        angles = position * inv_freq
        cos, sin = np.cos(np.concatenate([angles, angles])), np.sin(np.concatenate([angles, angles]))
        rotated = np.concatenate([-x[:, d // 2:], x[:, :d // 2]], axis=-1)
        return x * cos + rotated * sin

    keys = [[] for _ in range(LAYERS)]
    values = [[] for _ in range(LAYERS)]
    out = []
    for position, token in enumerate(ids.tolist()):
        h = w["model.embed_tokens.weight"][token]
        for i in range(LAYERS):
            p = f"model.layers.{i}."
            x = rms(h, w[p + "input_layernorm.weight"])
            if p + "self_attn.qkv_proj.weight" in w:
                q, k, v = np.split(w[p + "self_attn.qkv_proj.weight"] @ x, [HEADS * d, (HEADS + KV_HEADS) * d])
            else:
                q, k, v = (w[p + f"self_attn.{c}_proj.weight"] @ x + w.get(p + f"self_attn.{c}_proj.bias", 0.0)
                           for c in "qkv")
            q, k, v = q.reshape(HEADS, d), k.reshape(KV_HEADS, d), v.reshape(KV_HEADS, d)
            if p + "self_attn.q_norm.weight" in w:
                q, k = rms(q, w[p + "self_attn.q_norm.weight"]), rms(k, w[p + "self_attn.k_norm.weight"])
            keys[i].append(rope(k, position))
            values[i].append(v)
            q = rope(q, position)
            heads = []
            for head in range(HEADS):
                kv = head // (HEADS // KV_HEADS)
                K = np.stack([key[kv] for key in keys[i]])
                V = np.stack([value[kv] for value in values[i]])
                s = K @ q[head] / np.sqrt(d)
                a = np.exp(s - s.max())
                heads.append((a / a.sum()) @ V)
            h = h + w[p + "self_attn.o_proj.weight"] @ np.concatenate(heads)
            x = rms(h, w[p + "post_attention_layernorm.weight"])
            if p + "mlp.gate_up_proj.weight" in w:
                gate, up = np.split(w[p + "mlp.gate_up_proj.weight"] @ x, 2)
            else:
                gate, up = w[p + "mlp.gate_proj.weight"] @ x, w[p + "mlp.up_proj.weight"] @ x
            h = h + w[p + "mlp.down_proj.weight"] @ (gate / (1 + np.exp(-gate)) * up)
        out.append(w["lm_head.weight"] @ rms(h, w["model.norm.weight"]))
    return torch.from_numpy(np.stack(out))


def ids_of(seed):
    return torch.randint(0, VOCAB, (TOKENS,), generator=torch.Generator().manual_seed(seed))


def gap(a, b):
    return float((a.double() - b.double()).abs().max())


@pytest.mark.parametrize("family", ["qwen2", "phi3"])
def test_transformers_and_the_reference_agree(family):
    """The float64 reference that checks Qwen3 is itself right on the families transformers has."""
    weights, ids = random_weights(family, 1), ids_of(2)
    assert gap(transformers_logits(family, weights, ids), reference_logits(weights, ids)) < LOGIT_TOL


@pytest.mark.parametrize("family", ["llama", "qwen2", "qwen3", "phi3"])
def test_the_gguf_forward_matches_the_reference(family, tmp_path):
    weights, ids = random_weights(family, 3), ids_of(4)
    path = tmp_path / f"{family}.gguf"
    write_gguf(path, family, weights)
    model = models.load(str(path))
    assert model.config["architecture"] == family
    assert (model.layers, model.q_heads, model.kv_heads, model.head_dim) == (LAYERS, HEADS, KV_HEADS, HIDDEN // HEADS)
    assert model.windows == [None] * LAYERS
    ours = models.forward(model, ids)
    assert gap(ours, reference_logits(weights, ids)) < LOGIT_TOL
    if family != "qwen3":
        assert gap(ours, transformers_logits(family, weights, ids)) < LOGIT_TOL


def broken(family, model):
    """A wrong forward of each family: what a plausible bug would do (a bias forgotten, the QK-norm
    skipped, the fused gate and up halves swapped)."""
    return ablate(model, {"qwen2": "k_bias_off", "qwen3": "qk_norm_off", "phi3": "swap_gate_up"}[family])


@pytest.mark.parametrize("family", ["qwen2", "qwen3", "phi3"])
def test_a_wrong_forward_misses_the_reference(family, tmp_path):
    weights, ids = random_weights(family, 3), ids_of(4)
    path = tmp_path / f"{family}.gguf"
    write_gguf(path, family, weights)
    reference = reference_logits(weights, ids)
    assert gap(models.forward(broken(family, models.load(str(path))), ids), reference) > 100 * LOGIT_TOL
    # llama's converter permutes W_q and W_k for ggml's interleaved RoPE; these families' do not.
    interleaved = models.load(str(path))
    from subevict.models.llama import unpermute_qk

    for block in interleaved.blocks:
        block["attn_q"] = unpermute_qk(block["attn_q"], HEADS)
        block["attn_k"] = unpermute_qk(block["attn_k"], KV_HEADS)
    assert gap(models.forward(interleaved, ids), reference) > 100 * LOGIT_TOL


def test_sliding_windows_and_unsupported_files_are_read_as_stated(tmp_path):
    ids = ids_of(6)
    weights = random_weights("phi3", 5)
    write_gguf(tmp_path / "global.gguf", "phi3", weights)
    write_gguf(tmp_path / "window.gguf", "phi3", weights, sliding_window=16)
    windowed = models.load(str(tmp_path / "window.gguf"))
    assert windowed.windows == [16] * LAYERS
    full, local = models.forward(models.load(str(tmp_path / "global.gguf")), ids), models.forward(windowed, ids)
    assert gap(full[:16], local[:16]) == 0.0  # the first 16 queries see every key either way
    assert gap(full[16:], local[16:]) > 100 * LOGIT_TOL  # later ones see the last 16 only
    assert gap(local, transformers_logits("phi3", weights, ids, sliding_window=16)) < LOGIT_TOL
    # llama.cpp reads the key for phi3 alone: a qwen2 file that names one attends globally. (llama.cpp
    # 0.3.36 then ignores it for phi3 too: llama_cpp_families_test.py.)
    write_gguf(tmp_path / "qwen2.gguf", "qwen2", random_weights("qwen2", 5), sliding_window=16)
    assert models.load(str(tmp_path / "qwen2.gguf")).windows == [None] * LAYERS
    # LongRoPE's factors (the 128k-context Phi-3 files) are refused, naming them.
    write_gguf(tmp_path / "long.gguf", "phi3", weights,
               extra_tensors={"rope_factors_long.weight": np.ones(HIDDEN // HEADS // 2, dtype=np.float32)})
    with pytest.raises(models.ModelError, match="rope_factors"):
        models.load(str(tmp_path / "long.gguf"))
    # An architecture outside the list is refused with the list.
    write_gguf(tmp_path / "other.gguf", "falcon", random_weights("qwen2", 5))
    with pytest.raises(models.ModelError, match="unsupported architecture 'falcon'.*qwen3"):
        models.load(str(tmp_path / "other.gguf"))
