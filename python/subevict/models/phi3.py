"""Phi-3's forward from a GGUF file (llama.cpp's `phi3` architecture): the LLaMA layout of llama.py
with fused tensors, attn_qkv = [W_q; W_k; W_v] (or the three apart, as some converters write them)
and ffn_up = [W_gate; W_up] (SwiGLU: silu of the first half times the second), RoPE on
rotate_half halves as stored (ggml's NeoX RoPE), and, where the file sets
`phi3.attention.sliding_window`, a window of that many keys on every layer. LongRoPE's
rope_factors tensors (the 128k-context models) are refused."""

from __future__ import annotations

from . import llama
from .errors import ModelError
from .gguf_file import tensor_index

ARCHITECTURE = "phi3"


def config_of(reader):
    """The model's shape and constants from the file's `phi3.*` metadata (as llama.config_of)."""
    return llama.config_from(reader, ARCHITECTURE)


class Model(llama.Model):
    """A Phi-3 GGUF model in float32, in the pieces of llama.Model; its fused tensors are split at
    load time into llama's attn_q, attn_k, attn_v, ffn_gate and ffn_up."""

    architecture = ARCHITECTURE
    family = "Phi-3"
    interleaved_rope = False
    sliding_window = True

    _FUSED = ("attn_norm", "attn_qkv", "attn_output", "ffn_norm", "ffn_up", "ffn_down")
    _APART = ("attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "ffn_norm", "ffn_up",
              "ffn_down")

    def known_tensors(self):
        known = {"token_embd.weight", "output_norm.weight", "output.weight"}
        return known | {f"blk.{i}.{part}.weight" for i in range(self.layers)
                        for part in set(self._FUSED) | set(self._APART)}

    def __init__(self, reader):
        self._tensor_names = set(tensor_index(reader))
        super().__init__(reader)

    def load_block(self, weight, i):
        fused = f"blk.{i}.attn_qkv.weight" in self._tensor_names
        block = {part: weight(f"blk.{i}.{part}.weight")
                 for part in (self._FUSED if fused else self._APART)}
        q_rows, kv_rows = self.q_heads * self.head_dim, self.kv_heads * self.head_dim
        if fused:
            qkv = block.pop("attn_qkv")
            if qkv.shape[0] != q_rows + 2 * kv_rows:
                raise ModelError(f"blk.{i}.attn_qkv.weight: {q_rows + 2 * kv_rows} rows (q, k, v), "
                                 f"got {qkv.shape[0]}")
            block["attn_q"], block["attn_k"], block["attn_v"] = qkv.split([q_rows, kv_rows, kv_rows])
        gate_up = block.pop("ffn_up")
        if gate_up.shape[0] != 2 * self.config["intermediate_size"]:
            raise ModelError(f"blk.{i}.ffn_up.weight: {2 * self.config['intermediate_size']} rows "
                             f"(gate and up), got {gate_up.shape[0]}")
        block["ffn_gate"], block["ffn_up"] = gate_up.chunk(2, dim=0)
        return block
