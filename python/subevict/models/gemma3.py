"""Gemma 3's forward from a GGUF file (llama.cpp's `gemma3` architecture), in float32 torch, split
at the attention like llama.py.

Per layer: x = RMSNorm(h); q, k, v = x W_q, x W_k, x W_v; per-head RMSNorm of q and k (QK-norm);
RoPE (rotate_half halves; base rope.freq_base on global layers, 10000 on sliding-window layers);
attention with scale 1/sqrt(head_dim) (query_pre_attn_scalar = head_dim), over a window of the
last `attention.sliding_window` keys on five layers of every six (layers 5, 11, 17, ... are
global); h += RMSNorm(o W_o); h += RMSNorm(W_down(gelu_tanh(W_gate x') * W_up x')) with
x' = RMSNorm(h). The embedding is scaled by sqrt(hidden); the output is tied to it. llama.cpp's
converter stores every norm weight with Gemma's +1 already added, so norms multiply by the stored
weight (Model.ablated(shift_norms=True) adds it again: a broken model for tests)."""

from __future__ import annotations

import math

from .errors import ModelError
from .gguf_file import field, tensor_index, tensor_loader
from .llama import rms_norm, rotate_half, set_shape

ARCHITECTURE = "gemma3"

# llama.cpp's gemma3: every sixth layer is global, the others slide; their RoPE base is fixed.
SLIDING_WINDOW_PATTERN = 6
SLIDING_ROPE_BASE = 10000.0

_BLOCK_TENSORS = ("attn_norm", "attn_q", "attn_k", "attn_v", "attn_q_norm", "attn_k_norm",
                  "attn_output", "post_attention_norm", "ffn_norm", "ffn_gate", "ffn_up",
                  "ffn_down", "post_ffw_norm")


def config_of(reader):
    """The model's shape and constants from the file's `gemma3.*` metadata (ModelError naming a
    missing key, and for RoPE scaling or final-logit soft-capping, not supported)."""
    name = reader.data.filename
    tensors = tensor_index(reader)
    scaling = field(reader, "gemma3.rope.scaling.type", "none", required=False)
    if scaling not in ("none", ""):
        raise ModelError(f"{name}: RoPE scaling ({scaling!r}) is not supported")
    if field(reader, "gemma3.final_logit_softcapping", None, required=False) is not None:
        raise ModelError(f"{name}: final logit soft-capping is not supported")
    if "token_embd.weight" not in tensors:
        raise ModelError(f"{name}: tensor token_embd.weight is missing")
    hidden = int(field(reader, "gemma3.embedding_length"))
    heads = int(field(reader, "gemma3.attention.head_count"))
    layers = int(field(reader, "gemma3.block_count"))
    window = int(field(reader, "gemma3.attention.sliding_window"))
    config = {
        "architecture": ARCHITECTURE,
        "vocab_size": int(tensors["token_embd.weight"].shape[-1]),
        "hidden_size": hidden,
        "intermediate_size": int(field(reader, "gemma3.feed_forward_length")),
        "num_hidden_layers": layers,
        "num_attention_heads": heads,
        "num_key_value_heads": int(field(reader, "gemma3.attention.head_count_kv", heads,
                                         required=False)),
        "head_dim": int(field(reader, "gemma3.attention.key_length", hidden // heads,
                              required=False)),
        "rope_theta": float(field(reader, "gemma3.rope.freq_base", 1000000.0, required=False)),
        "rope_local_base_freq": SLIDING_ROPE_BASE,
        "rms_norm_eps": float(field(reader, "gemma3.attention.layer_norm_rms_epsilon")),
        "max_position_embeddings": int(field(reader, "gemma3.context_length")),
        "sliding_window": window,
        "layer_windows": [None if (i + 1) % SLIDING_WINDOW_PATTERN == 0 else window
                          for i in range(layers)],
        "bos_token_id": field(reader, "tokenizer.ggml.bos_token_id", None, required=False),
        "eos_token_id": field(reader, "tokenizer.ggml.eos_token_id", None, required=False),
    }
    # Each layer's RoPE base: the local base on sliding-window layers, rope_theta on global ones.
    config["layer_rope_bases"] = [config["rope_theta"] if w is None else SLIDING_ROPE_BASE
                                  for w in config["layer_windows"]]
    return config


def gelu_tanh(x):
    """GELU with the tanh approximation (Gemma's hidden activation)."""
    import torch

    return torch.nn.functional.gelu(x, approximate="tanh")


class Model:
    """A Gemma 3 GGUF model in float32, in the pieces of llama.Model, plus `windows`: per layer the
    number of most recent keys a query sees (None: every earlier key).

    ablated() gives broken copies for tests."""

    def __init__(self, reader):
        import torch

        c = set_shape(self, config_of(reader))
        self.qk_norm = True
        self.windows = list(c["layer_windows"])
        known = {"token_embd.weight", "output_norm.weight"}
        known |= {f"blk.{i}.{part}.weight" for i in range(self.layers) for part in _BLOCK_TENSORS}
        weight = tensor_loader(reader, known, "Gemma 3")

        self.embedding = weight("token_embd.weight")
        self.output_norm = weight("output_norm.weight")
        self.blocks = [{part: weight(f"blk.{i}.{part}.weight") for part in _BLOCK_TENSORS}
                       for i in range(self.layers)]
        d = self.head_dim
        exponents = torch.arange(0, d, 2, dtype=torch.int64).float() / d
        self.inv_freq = [1.0 / base ** exponents for base in c["layer_rope_bases"]]

    def ablated(self, shift_norms=False, qk_norm=True, window=True, swap_rope_bases=False):
        """A copy sharing the weights, broken as asked (for tests that must see a wrong forward
        fail): shift_norms adds Gemma's +1 to every norm weight a second time; qk_norm=False skips
        the QK-norm; window=False makes every layer global; swap_rope_bases gives the global layers
        the sliding layers' RoPE base and the sliding layers the global one."""
        import copy

        model = copy.copy(self)
        if shift_norms:
            model.output_norm = self.output_norm + 1.0
            model.blocks = [{part: w + 1.0 if part.endswith("norm") else w
                             for part, w in block.items()} for block in self.blocks]
        model.qk_norm = qk_norm
        if not window:
            model.windows = [None] * self.layers
        if swap_rope_bases:
            glob = next(f for f, w in zip(self.inv_freq, self.windows) if w is None)
            local = next(f for f, w in zip(self.inv_freq, self.windows) if w is not None)
            model.inv_freq = [local if w is None else glob for w in self.windows]
        return model

    def embed(self, ids):
        """Hidden states [n, hidden] of token ids (int64 [n]), scaled by sqrt(hidden)."""
        import torch

        return self.embedding[ids] * torch.tensor(math.sqrt(self.config["hidden_size"]))

    def attention_inputs(self, layer, hidden, positions, rotate=True):
        """(q [q_heads, n, d], k [kv_heads, n, d], v [kv_heads, n, d]) of `layer` at `positions`;
        q and k after QK-norm and RoPE (before RoPE with rotate=False)."""
        import torch

        b = self.blocks[layer]
        n, d = hidden.shape[0], self.head_dim
        x = rms_norm(hidden, b["attn_norm"], self.eps)
        q = (x @ b["attn_q"].T).view(n, self.q_heads, d).transpose(0, 1)
        k = (x @ b["attn_k"].T).view(n, self.kv_heads, d).transpose(0, 1)
        v = (x @ b["attn_v"].T).view(n, self.kv_heads, d).transpose(0, 1).contiguous()
        if self.qk_norm:
            q = rms_norm(q, b["attn_q_norm"], self.eps)
            k = rms_norm(k, b["attn_k_norm"], self.eps)
        if not rotate:
            return q.contiguous(), k.contiguous(), v
        freqs = positions.float().unsqueeze(-1) * self.inv_freq[layer].unsqueeze(0)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos(), emb.sin()
        return ((q * cos + rotate_half(q) * sin).contiguous(),
                (k * cos + rotate_half(k) * sin).contiguous(), v)

    def attention_output(self, layer, hidden, heads):
        """The layer's output hidden states [n, hidden] from its input and its query heads'
        attention output [q_heads, n, d]."""
        b = self.blocks[layer]
        n = hidden.shape[0]
        attn = heads.transpose(0, 1).reshape(n, -1) @ b["attn_output"].T
        hidden = hidden + rms_norm(attn, b["post_attention_norm"], self.eps)
        x = rms_norm(hidden, b["ffn_norm"], self.eps)
        mlp = (gelu_tanh(x @ b["ffn_gate"].T) * (x @ b["ffn_up"].T)) @ b["ffn_down"].T
        return hidden + rms_norm(mlp, b["post_ffw_norm"], self.eps)

    def logits(self, hidden):
        """Next-token logits [n, vocab] (the output is the embedding)."""
        return rms_norm(hidden, self.output_norm, self.eps) @ self.embedding.T
