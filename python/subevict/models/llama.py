"""The LLaMA family's forward (Llama 1/2/3, TinyLlama, SmolLM, Mistral as converted by llama.cpp)
from a GGUF file, in float32 torch, split at the attention so that a caller decides which keys each
query sees (subevict.closed_loop, scripts/export_gguf.py); the base of the families of the same
shape (qwen2.py, qwen3.py, phi3.py).

Per layer: x = RMSNorm(h); q, k, v = x W_q, x W_k, x W_v; RoPE (rotate_half halves, base
rope.freq_base) on q and k; attention (the caller's); h += o W_o; h += W_down(silu(W_gate x') *
W_up x') with x' = RMSNorm(h). llama.cpp's converter interleaves the rotary pairs of W_q and W_k;
the rows are permuted back so that rotate_half applies (undo_permutation=False keeps them, a broken
model for tests)."""

from __future__ import annotations

import math

from .errors import ModelError
from .gguf_file import field, tensor_index, tensor_loader

ARCHITECTURE = "llama"

_BLOCK_TENSORS = ("attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "ffn_norm",
                  "ffn_gate", "ffn_up", "ffn_down")


def config_of(reader):
    """The model's shape and constants from the file's `llama.*` metadata (ModelError naming the
    key or tensor when one is missing, and for RoPE scaling or partial RoPE, not supported)."""
    return config_from(reader, ARCHITECTURE)


def config_from(reader, arch):
    """config_of for a LLaMA-shaped family whose metadata keys start with `arch` (llama, qwen2,
    qwen3, phi3 share the layout)."""
    name = reader.data.filename
    tensors = tensor_index(reader)
    scaling = field(reader, f"{arch}.rope.scaling.type", "none", required=False)
    if scaling not in ("none", "") or "rope_freqs.weight" in tensors or any(
            t.startswith("rope_factors") for t in tensors):
        raise ModelError(f"{name}: RoPE scaling ({scaling!r} or a rope_freqs/rope_factors tensor) "
                         "is not supported")
    hidden = int(field(reader, f"{arch}.embedding_length"))
    heads = int(field(reader, f"{arch}.attention.head_count"))
    head_dim = int(field(reader, f"{arch}.attention.key_length", hidden // heads, required=False))
    rope_dim = int(field(reader, f"{arch}.rope.dimension_count", head_dim, required=False))
    if rope_dim != head_dim:
        raise ModelError(f"{name}: partial RoPE (rope.dimension_count {rope_dim}, head_dim "
                         f"{head_dim}) is not supported")
    if "token_embd.weight" not in tensors:
        raise ModelError(f"{name}: tensor token_embd.weight is missing")
    window = field(reader, f"{arch}.attention.sliding_window", None, required=False)
    return {
        "architecture": arch,
        "vocab_size": int(field(reader, f"{arch}.vocab_size",
                                int(tensors["token_embd.weight"].shape[-1]), required=False)),
        "hidden_size": hidden,
        "intermediate_size": int(field(reader, f"{arch}.feed_forward_length")),
        "num_hidden_layers": int(field(reader, f"{arch}.block_count")),
        "num_attention_heads": heads,
        "num_key_value_heads": int(field(reader, f"{arch}.attention.head_count_kv", heads,
                                         required=False)),
        "head_dim": head_dim,
        "rope_theta": float(field(reader, f"{arch}.rope.freq_base", 10000.0, required=False)),
        "rms_norm_eps": float(field(reader, f"{arch}.attention.layer_norm_rms_epsilon")),
        "max_position_embeddings": int(field(reader, f"{arch}.context_length")),
        "sliding_window": None if window is None else int(window),
        "tie_word_embeddings": "output.weight" not in tensors,
        "bos_token_id": field(reader, "tokenizer.ggml.bos_token_id", None, required=False),
        "eos_token_id": field(reader, "tokenizer.ggml.eos_token_id", None, required=False),
    }


def permute_qk(weight, heads):
    """llama.cpp's converter permutation of a W_q/W_k weight ([heads * head_dim, in]): within each
    head, rows (0..D/2-1 | D/2..D-1) of the rotate_half layout become interleaved pairs
    (0, D/2, 1, D/2+1, ...), as ggml's RoPE rotates adjacent pairs."""
    rows = weight.shape[0]
    return (weight.reshape(heads, 2, rows // heads // 2, *weight.shape[1:])
            .transpose(1, 2).reshape(weight.shape))


def unpermute_qk(weight, heads):
    """The inverse of permute_qk: interleaved pairs back to rotate_half halves."""
    rows = weight.shape[0]
    return (weight.reshape(heads, rows // heads // 2, 2, *weight.shape[1:])
            .transpose(1, 2).reshape(weight.shape))


def rms_norm(x, weight, eps):
    """x / sqrt(mean(x^2) + eps) * weight over the last axis (float32)."""
    import torch

    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight


def rotate_half(x):
    """(x1, x2) -> (-x2, x1) on the two halves of the last axis."""
    import torch

    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def set_shape(model, config):
    """Sets a model's config and the shape attributes every family has (layers, q_heads, kv_heads,
    head_dim, score_scale = 1/sqrt(head_dim), eps); returns the config."""
    model.config = config
    model.layers = config["num_hidden_layers"]
    model.q_heads = config["num_attention_heads"]
    model.kv_heads = config["num_key_value_heads"]
    model.head_dim = config["head_dim"]
    model.score_scale = 1.0 / math.sqrt(model.head_dim)
    model.eps = config["rms_norm_eps"]
    return config


class Model:
    """A LLaMA-family GGUF model in float32, in pieces: embed, attention_inputs (q, k, v of a
    layer after RoPE), attention_output (the rest of the layer given the attention's output),
    logits. Every piece works on any set of positions, so a token-by-token decode and a
    whole-sequence pass run the same arithmetic per position.

    Families of the same shape subclass it and set: `architecture` (the metadata prefix),
    `family` (for messages), `biases` (the projections with a bias, qwen2: q, k, v), `qk_norms`
    (per-head RMSNorm of q and k after the projection, qwen3), `interleaved_rope` (llama.cpp's
    converter permuted W_q and W_k for ggml's adjacent-pair RoPE: llama only), `sliding_window`
    (every layer sees the last `attention.sliding_window` keys, where the file sets it: phi3);
    phi3 overrides the loading of its fused tensors (load_block)."""

    architecture = ARCHITECTURE
    family = "LLaMA"
    biases = ()
    qk_norms = False
    interleaved_rope = True
    sliding_window = False  # whether `attention.sliding_window` limits every layer (phi3)

    def __init__(self, reader, undo_permutation=True):
        c = set_shape(self, config_from(reader, self.architecture))
        window = c["sliding_window"] if self.sliding_window and c["sliding_window"] else None
        self.windows = [window] * self.layers  # None: every layer attends to all earlier keys
        weight = tensor_loader(reader, self.known_tensors(), self.family)
        self.embedding = weight("token_embd.weight")
        self.output_norm = weight("output_norm.weight")
        self.output = self.embedding if c["tie_word_embeddings"] else weight("output.weight")
        self.blocks = []
        for i in range(self.layers):
            block = self.load_block(weight, i)
            if self.interleaved_rope and undo_permutation:
                block["attn_q"] = unpermute_qk(block["attn_q"], self.q_heads)
                block["attn_k"] = unpermute_qk(block["attn_k"], self.kv_heads)
            self.blocks.append(block)
        import torch

        d = self.head_dim
        self.inv_freq = 1.0 / (c["rope_theta"] ** (torch.arange(0, d, 2, dtype=torch.int64)
                                                   .float() / d))

    def block_tensor_names(self):
        """The names of one block's tensors, without the `blk.N.` prefix."""
        names = [f"{part}.weight" for part in _BLOCK_TENSORS]
        names += [f"{part}.bias" for part in self.biases]
        if self.qk_norms:
            names += ["attn_q_norm.weight", "attn_k_norm.weight"]
        return names

    def known_tensors(self):
        known = {"token_embd.weight", "output_norm.weight", "output.weight"}
        return known | {f"blk.{i}.{name}" for i in range(self.layers)
                        for name in self.block_tensor_names()}

    def load_block(self, weight, i):
        """Block i's tensors by name (weights as `part`, biases as `part.bias`)."""
        return {name[:-len(".weight")] if name.endswith(".weight") else name:
                weight(f"blk.{i}.{name}") for name in self.block_tensor_names()}

    def embed(self, ids):
        """Hidden states [n, hidden] of token ids (int64 [n])."""
        return self.embedding[ids]

    def rope(self, x, positions):
        """x [heads, n, d] rotated to `positions` (int64 [n])."""
        import torch

        freqs = positions.float().unsqueeze(-1) * self.inv_freq.unsqueeze(0)
        emb = torch.cat((freqs, freqs), dim=-1)
        return x * emb.cos() + rotate_half(x) * emb.sin()

    def attention_inputs(self, layer, hidden, positions, rotate=True):
        """(q [q_heads, n, d], k [kv_heads, n, d], v [kv_heads, n, d]) of `layer` at `positions`
        from its input hidden states [n, hidden]; q and k after the QK-norm (if any) and RoPE
        (before RoPE with rotate=False)."""
        b = self.blocks[layer]
        n, d = hidden.shape[0], self.head_dim
        x = rms_norm(hidden, b["attn_norm"], self.eps)

        def project(part, heads):
            y = x @ b[part].T
            if f"{part}.bias" in b:
                y = y + b[f"{part}.bias"]
            return y.view(n, heads, d).transpose(0, 1)

        q, k = project("attn_q", self.q_heads), project("attn_k", self.kv_heads)
        v = project("attn_v", self.kv_heads).contiguous()
        if self.qk_norms:
            q = rms_norm(q, b["attn_q_norm"], self.eps)
            k = rms_norm(k, b["attn_k_norm"], self.eps)
        if not rotate:
            return q.contiguous(), k.contiguous(), v
        return self.rope(q, positions).contiguous(), self.rope(k, positions).contiguous(), v

    def attention_output(self, layer, hidden, heads):
        """The layer's output hidden states [n, hidden] from its input `hidden` and the attention
        output of its query heads, `heads` [q_heads, n, d]."""
        import torch

        b = self.blocks[layer]
        n = hidden.shape[0]
        hidden = hidden + heads.transpose(0, 1).reshape(n, -1) @ b["attn_output"].T
        x = rms_norm(hidden, b["ffn_norm"], self.eps)
        mlp = (torch.nn.functional.silu(x @ b["ffn_gate"].T) * (x @ b["ffn_up"].T)) @ b["ffn_down"].T
        return hidden + mlp

    def logits(self, hidden):
        """Next-token logits [n, vocab] of the last layer's hidden states."""
        return rms_norm(hidden, self.output_norm, self.eps) @ self.output.T
