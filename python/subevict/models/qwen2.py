"""Qwen2's forward from a GGUF file (llama.cpp's `qwen2` architecture): the LLaMA layout of llama.py
with a bias on the q, k and v projections and RoPE on rotate_half halves as stored (llama.cpp's
converter keeps Hugging Face's layout for this family: ggml's NeoX RoPE), base rope.freq_base."""

from __future__ import annotations

from . import llama

ARCHITECTURE = "qwen2"


def config_of(reader):
    """The model's shape and constants from the file's `qwen2.*` metadata (as llama.config_of)."""
    return llama.config_from(reader, ARCHITECTURE)


class Model(llama.Model):
    """A Qwen2 GGUF model in float32, in the pieces of llama.Model."""

    architecture = ARCHITECTURE
    family = "Qwen2"
    biases = ("attn_q", "attn_k", "attn_v")
    interleaved_rope = False
