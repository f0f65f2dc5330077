"""Small GGUF files of the LLaMA-shaped families (llama, qwen2, qwen3, phi3) from random weights,
written with the gguf package in llama.cpp's tensor names and metadata, with a small tokenizer
vocabulary so that llama.cpp itself loads and runs them: the test models of
tests/models/families_test.py and tests/models/llama_cpp_families_test.py, and of
`scripts/llama_cpp_check.py --models qwen2-tiny,...` (which imports this file from here).
Needs numpy, torch and gguf; not subevict.

    weights = random_weights("qwen3", seed=3)        # Hugging Face names -> float32 tensors
    write_gguf("qwen3.gguf", "qwen3", weights)       # vocabulary included

The vocabulary: llama.cpp refuses a file without tokenizer.ggml.model and its token list, and the
list must be as long as the embedding's vocabulary. Byte-level BPE (`gpt2`, with one merge: the
loader needs tokenizer.ggml.merges) for llama, qwen2 (pre-tokenizer `qwen2`) and qwen3, as their
converted files carry; SentencePiece (`llama`: tokens, scores, token types with <unk>, <s>, </s>
and the newline byte) for phi3, as Phi-3's files carry. The vocabularies are there to load: the
files run on token ids. Do not tokenize text with them in llama.cpp: a character outside the
SentencePiece pieces (a tab, say) sends its byte fallback to a byte token this vocabulary lacks,
and llama.cpp aborts the process (an uncaught std::out_of_range).
"""

from __future__ import annotations

import numpy as np
import torch

LAYERS, HIDDEN, HEADS, KV_HEADS, FFN, VOCAB = 2, 64, 4, 2, 96, 97
EPS, THETA, CONTEXT = 1e-6, 10000.0, 2048
FAMILIES = ("llama", "qwen2", "qwen3", "phi3")


def random_weights(family, seed, output_scale=0.3):
    """Hugging Face parameter names -> float32 tensors of a small model of `family` (llama, qwen2,
    qwen3, phi3). `output_scale`: the standard deviation of lm_head's entries (logits of standard
    deviation about output_scale * sqrt(HIDDEN); larger separates the top logits further)."""
    g = torch.Generator().manual_seed(seed)
    d = HIDDEN // HEADS

    def r(*shape, scale=0.3):
        return torch.randn(*shape, generator=g) * scale

    def norm(n):
        return 1.0 + r(n, scale=0.1)

    w = {"model.embed_tokens.weight": r(VOCAB, HIDDEN, scale=1.0), "model.norm.weight": norm(HIDDEN),
         "lm_head.weight": r(VOCAB, HIDDEN, scale=output_scale)}
    for i in range(LAYERS):
        p = f"model.layers.{i}."
        w[p + "input_layernorm.weight"] = norm(HIDDEN)
        w[p + "post_attention_layernorm.weight"] = norm(HIDDEN)
        w[p + "self_attn.o_proj.weight"] = r(HIDDEN, HEADS * d)
        w[p + "mlp.down_proj.weight"] = r(HIDDEN, FFN)
        q, k, v = r(HEADS * d, HIDDEN), r(KV_HEADS * d, HIDDEN), r(KV_HEADS * d, HIDDEN)
        if family == "phi3":
            w[p + "self_attn.qkv_proj.weight"] = torch.cat([q, k, v])
            w[p + "mlp.gate_up_proj.weight"] = torch.cat([r(FFN, HIDDEN), r(FFN, HIDDEN)])
            continue
        w[p + "self_attn.q_proj.weight"], w[p + "self_attn.k_proj.weight"] = q, k
        w[p + "self_attn.v_proj.weight"] = v
        w[p + "mlp.gate_proj.weight"], w[p + "mlp.up_proj.weight"] = r(FFN, HIDDEN), r(FFN, HIDDEN)
        if family == "qwen2":
            for part, rows in (("q", HEADS * d), ("k", KV_HEADS * d), ("v", KV_HEADS * d)):
                w[p + f"self_attn.{part}_proj.bias"] = r(rows)
        if family == "qwen3":
            w[p + "self_attn.q_norm.weight"], w[p + "self_attn.k_norm.weight"] = norm(d), norm(d)
    return w


# Hugging Face names -> llama.cpp's GGUF names (the converter's map for these families).
GGUF_NAMES = {"input_layernorm.weight": "attn_norm.weight", "post_attention_layernorm.weight": "ffn_norm.weight",
              "self_attn.q_proj.weight": "attn_q.weight", "self_attn.k_proj.weight": "attn_k.weight",
              "self_attn.v_proj.weight": "attn_v.weight", "self_attn.q_proj.bias": "attn_q.bias",
              "self_attn.k_proj.bias": "attn_k.bias", "self_attn.v_proj.bias": "attn_v.bias",
              "self_attn.o_proj.weight": "attn_output.weight", "self_attn.qkv_proj.weight": "attn_qkv.weight",
              "self_attn.q_norm.weight": "attn_q_norm.weight", "self_attn.k_norm.weight": "attn_k_norm.weight",
              "mlp.gate_proj.weight": "ffn_gate.weight", "mlp.up_proj.weight": "ffn_up.weight",
              "mlp.gate_up_proj.weight": "ffn_up.weight", "mlp.down_proj.weight": "ffn_down.weight"}


def gguf_tensors(family, weights):
    """llama.cpp's tensor name -> float32 array of Hugging Face `weights`; llama's W_q and W_k with
    the converter's interleaving permutation (ggml's adjacent-pair RoPE), the other families' as
    they are (NeoX RoPE)."""
    def permute_qk(weight, heads):  # convert_hf_to_gguf.py's LlamaModel.permute, written apart
        # from subevict.models.llama.permute_qk so that the test checks that one
        return (weight.reshape(heads, 2, weight.shape[0] // heads // 2, *weight.shape[1:])
                .swapaxes(1, 2).reshape(weight.shape))

    out = {}
    for name, value in weights.items():
        if name == "model.embed_tokens.weight":
            gguf_name = "token_embd.weight"
        elif name == "model.norm.weight":
            gguf_name = "output_norm.weight"
        elif name == "lm_head.weight":
            gguf_name = "output.weight"
        else:
            layer, rest = name[len("model.layers."):].split(".", 1)
            gguf_name = f"blk.{layer}.{GGUF_NAMES[rest]}"
            if family == "llama" and rest in ("self_attn.q_proj.weight", "self_attn.k_proj.weight"):
                value = permute_qk(value, HEADS if rest.startswith("self_attn.q") else KV_HEADS)
        out[gguf_name] = value.numpy().astype(np.float32)
    return out


def _bpe_vocabulary():
    """(tokens, token types, merges) of a byte-level BPE vocabulary of VOCAB entries: the printable
    ASCII bytes '!'..'}' (the byte-level alphabet maps them to themselves), space (U+0120) and
    newline (U+010A) as the alphabet writes them, one merged token and an end-of-text token."""
    tokens = [chr(b) for b in range(ord("!"), ord("!") + VOCAB - 4)]
    tokens += ["\u0120", "\u010a", "\u0120t", "<|endoftext|>"]
    types = [1] * (VOCAB - 1) + [3]  # NORMAL, CONTROL
    return tokens, types, ["\u0120 t"]


def _spm_vocabulary():
    """(tokens, scores, token types) of a SentencePiece vocabulary of VOCAB entries: <unk>, <s>,
    </s>, the newline byte <0x0A>, the word boundary U+2581, printable ASCII pieces and
    <|endoftext|> (llama.cpp's loader sets attributes on it by name for a model named phi3, and
    fails when it is missing)."""
    tokens = ["<unk>", "<s>", "</s>", "<0x0A>", "\u2581"]
    tokens += [chr(b) for b in range(ord("!"), ord("!") + VOCAB - len(tokens) - 1)]
    tokens += ["<|endoftext|>"]
    types = [2, 3, 3, 6] + [1] * (VOCAB - 5) + [3]  # UNKNOWN, CONTROL x2, BYTE, NORMAL.., CONTROL
    scores = [0.0] * 4 + [-float(i) for i in range(VOCAB - 5)] + [0.0]
    return tokens, scores, types


def add_vocabulary(writer, family):
    """The tokenizer metadata llama.cpp needs to load a `family` file of VOCAB tokens."""
    if family == "phi3":
        tokens, scores, types = _spm_vocabulary()
        writer.add_tokenizer_model("llama")
        writer.add_token_list(tokens)
        writer.add_token_scores(scores)
        writer.add_token_types(types)
        writer.add_unk_token_id(0)
        writer.add_bos_token_id(1)
        writer.add_eos_token_id(2)
        writer.add_add_bos_token(True)
        return
    tokens, types, merges = _bpe_vocabulary()
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("qwen2" if family.startswith("qwen") else "default")
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    writer.add_token_merges(merges)
    writer.add_bos_token_id(VOCAB - 1)
    writer.add_eos_token_id(VOCAB - 1)
    writer.add_add_bos_token(False)


def write_gguf(path, family, weights, sliding_window=None, extra_tensors=None):
    """A GGUF file of `family` at `path` with `weights` (random_weights' names), float32 tensors,
    the metadata llama.cpp's loader reads for the family and a tokenizer vocabulary
    (add_vocabulary); `sliding_window` sets `{family}.attention.sliding_window`, `extra_tensors` (GGUF
    name -> array) are written as they are."""
    import gguf

    writer = gguf.GGUFWriter(str(path), family)
    if sliding_window is not None:
        writer.add_uint32(f"{family}.attention.sliding_window", sliding_window)
    writer.add_name(f"test-{family}")
    writer.add_block_count(LAYERS)
    writer.add_context_length(CONTEXT)
    writer.add_embedding_length(HIDDEN)
    writer.add_feed_forward_length(FFN)
    writer.add_head_count(HEADS)
    writer.add_head_count_kv(KV_HEADS)
    writer.add_layer_norm_rms_eps(EPS)
    writer.add_rope_freq_base(THETA)
    if family == "phi3":  # as Phi-3's converter writes it
        writer.add_rope_dimension_count(HIDDEN // HEADS)
    add_vocabulary(writer, family)
    for name, value in gguf_tensors(family, weights).items():
        writer.add_tensor(name, value)
    for name, value in (extra_tensors or {}).items():
        writer.add_tensor(name, value)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


# The llama.cpp comparisons (llama_cpp_families_test.py, scripts/llama_cpp_check.py): one seed per
# family, and lm_head entries of standard deviation 1.0, so that the logits (standard deviation
# about 8) are well separated and the top-1 token is no near-tie that llama.cpp's float16 KV cache
# (logit differences up to ~0.2) could flip.
COMPARISON_SEEDS = {"llama": 10, "qwen2": 11, "qwen3": 12, "phi3": 13}
COMPARISON_OUTPUT_SCALE = 1.0


def write_comparison_file(path, family, sliding_window=None):
    """The small `family` file the llama.cpp comparisons run (write_gguf of random_weights with
    COMPARISON_SEEDS and COMPARISON_OUTPUT_SCALE); returns `path`."""
    weights = random_weights(family, COMPARISON_SEEDS[family],
                             output_scale=COMPARISON_OUTPUT_SCALE)
    write_gguf(path, family, weights, sliding_window=sliding_window)
    return path


def random_ids(count, seed=4):
    """`count` token ids (int64), uniform over the VOCAB tokens (control tokens included)."""
    return torch.randint(0, VOCAB, (count,), generator=torch.Generator().manual_seed(seed))


# The deliberately wrong forwards a comparison must reject: name -> what the defect is. Each
# changes a loaded subevict.models model (ablate); the ones each family's comparison must reject in
# WRONG_FORWARDS.
ABLATIONS = {
    "rope_half_frequency": "every RoPE frequency halved (a wrong RoPE base)",
    "k_bias_off": "the bias of the k projection dropped (a bias forgotten)",
    "qk_norm_off": "no QK-norm of q and k",
    "swap_gate_up": "the gate and up halves of the fused ffn_up swapped",
    "window_off": "every layer global, the file's sliding window ignored (as llama.cpp does for "
                  "phi3: wrong against transformers, not against llama.cpp; in no WRONG_FORWARDS)",
}
WRONG_FORWARDS = {"llama": ("rope_half_frequency",),
                  "qwen2": ("k_bias_off", "rope_half_frequency"),
                  "qwen3": ("qk_norm_off", "rope_half_frequency"),
                  "phi3": ("swap_gate_up", "rope_half_frequency")}


def ablate(model, name):
    """`model` (a subevict.models model; a LLaMA-shaped one for every name but rope_half_frequency,
    which any family takes) with the defect ABLATIONS[name], changed in place and returned;
    ValueError naming the defect when the model has nothing it breaks."""
    if name == "rope_half_frequency":
        f = model.inv_freq
        model.inv_freq = [x * 0.5 for x in f] if isinstance(f, list) else f * 0.5
        return model
    blocks = getattr(model, "blocks", None) or []
    if name == "k_bias_off" and blocks and all("attn_k.bias" in b for b in blocks):
        for block in blocks:
            del block["attn_k.bias"]
    elif name == "qk_norm_off" and getattr(model, "qk_norms", False) is True:
        model.qk_norms = False
    elif name == "window_off" and any(w is not None for w in getattr(model, "windows", [])):
        model.windows = [None] * len(model.windows)
    elif name == "swap_gate_up" and getattr(model, "architecture", None) == "phi3":
        for block in blocks:
            block["ffn_gate"], block["ffn_up"] = block["ffn_up"], block["ffn_gate"]
    else:
        raise ValueError(f"{name} ({ABLATIONS.get(name, 'unknown')}) does not apply to "
                         f"{getattr(model, 'architecture', 'this model')}")
    return model
