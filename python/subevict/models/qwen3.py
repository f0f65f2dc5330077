"""Qwen3's forward from a GGUF file (llama.cpp's `qwen3` architecture): the LLaMA layout of llama.py
with a per-head RMSNorm of q and of k (QK-norm, weights attn_q_norm / attn_k_norm over head_dim)
after the projections and before RoPE, no projection bias, and RoPE on rotate_half halves as
stored (ggml's NeoX RoPE; the converter does not permute), base rope.freq_base."""

from __future__ import annotations

from . import llama

ARCHITECTURE = "qwen3"


def config_of(reader):
    """The model's shape and constants from the file's `qwen3.*` metadata (as llama.config_of)."""
    return llama.config_from(reader, ARCHITECTURE)


class Model(llama.Model):
    """A Qwen3 GGUF model in float32, in the pieces of llama.Model."""

    architecture = ARCHITECTURE
    family = "Qwen3"
    qk_norms = True
    interleaved_rope = False
