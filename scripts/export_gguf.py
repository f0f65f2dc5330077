#!/usr/bin/env python3
"""Dump per-layer Q, K, V (after RoPE) and Q, K before RoPE of a GGUF model for subevict.

Reads a GGUF file (llama.cpp's format) with subevict's model code (python/subevict/models/, the
code the closed loop runs too): the file's metadata, its tensors dequantized to float32, its own
vocabulary, and the forward of its architecture family in float32 torch; runs the first N tokens
of the text through it and writes every selected layer's Q and K (after RoPE) and V, and Q and K
before RoPE (q_pre, k_pre) with the rotary parameters that rotate them into Q and K, in
scripts/export_qkv.py's layout and format (see docs/export.md, "GGUF models").

Usage:
    export_gguf.py --gguf FILE --text-file FILE --tokens N [--layers all|0,3]
                   [--if-changed] -o OUT.safetensors

Supported: subevict.models.SUPPORTED_ARCHITECTURES (`llama`: Llama 1/2/3, TinyLlama, SmolLM,
Mistral 7B as converted by llama.cpp, without RoPE scaling; `qwen2`, `qwen3`, `phi3`, `gemma3`;
a sliding-window layer's window is recorded in the file's "attention_windows"); tokenizers `llama` (SentencePiece)
and `gpt2` (byte-level BPE with the pre-tokenizers `smollm`, `llama-bpe`, `gpt2`/`default`).
Needs torch, numpy, tokenizers, gguf (0.17.1) and, for SentencePiece vocabularies, transformers
(4.46.3): scripts/setup_model installs them into .venv/.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import struct
import sys

sys.dont_write_bytecode = True  # leave no __pycache__ in scripts/
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import checkout_models  # noqa: E402
from export_qkv import (FORMAT, ExportError, check_output_path, parse_layers,  # noqa: E402
                        read_text_file, resolve_layers, rotary_metadata, write_safetensors)

models = checkout_models.load()
ModelError = models.ModelError
EXPORTER = "scripts/export_gguf.py"


# ---------------------------------------------------------------------------------------------
# Export


def provenance(reader, config, text, input_ids, layers, gguf_sha256):
    """The safetensors __metadata__ of an export (all values str), less score_scale, which
    export() takes from the built model. rope_base is the model's RoPE base (GGUF
    rope.freq_base), which `subevict workload fit` gives the model's synthetic twin; rope_bases,
    written where the exported layers rotate on different bases, each layer's."""
    import torch

    metadata = {
        "format": FORMAT,
        "source": os.path.basename(reader.data.filename),
        "model_name": str(models.field(reader, "general.name", "", required=False)),
        "model_type": config["architecture"],
        "gguf_sha256": gguf_sha256,
        "prompt_sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
        "tokens": str(int(input_ids.shape[-1])),
        "token_ids_sha256": models.token_ids_sha256(input_ids),
        "source_layers": ",".join(str(i) for i in layers),
        "rope": "rotate_half",
        "rope_base": repr(float(config["rope_theta"])),
        "model_dtype": "float32",
        "exporter": EXPORTER,
        "model_code": "subevict.models",
        "torch_version": torch.__version__,
    }
    windows = config.get("layer_windows") or [None] * config["num_hidden_layers"]
    if any(windows[layer] is not None for layer in layers):
        # Each exported layer's mask (docs/export.md): 0 global, W a sliding window of W keys.
        metadata["attention_windows"] = ",".join(str(windows[layer] or 0) for layer in layers)
    bases = config.get("layer_rope_bases") or [config["rope_theta"]] * config["num_hidden_layers"]
    if len({bases[layer] for layer in layers}) > 1:
        # Each exported layer's RoPE base where they differ (docs/export.md), for `workload fit`.
        metadata["rope_bases"] = ",".join(repr(float(bases[layer])) for layer in layers)
    # The rotary of the pre-RoPE tensors (every supported family: full-width rotate_half RoPE).
    metadata.update(rotary_metadata([bases[layer] for layer in layers], config["head_dim"]))
    return metadata


def read_metadata(path):
    """The __metadata__ dict of an existing safetensors file, or None when it cannot be read."""
    try:
        with open(path, "rb") as stream:
            (length,) = struct.unpack("<Q", stream.read(8))
            if length > 100_000_000:
                return None
            header = json.loads(stream.read(length))
    except (OSError, struct.error, ValueError):
        return None
    metadata = header.get("__metadata__") if isinstance(header, dict) else None
    return metadata if isinstance(metadata, dict) else None


def capture_qkv(model, ids, layers):
    """{"layers.{i}.q": [q_heads, n, d], ".k", ".v": [kv_heads, n, d], ".q_pre", ".k_pre" (q and k
    before RoPE)} (float32 torch) of the full-cache forward of `ids` (int64 [n]) at the model
    `layers` (renumbered i = 0, 1, ...)."""
    index = {layer: i for i, layer in enumerate(layers)}
    tensors = {}
    rotated_inputs = model.attention_inputs

    def attention_inputs(layer, hidden, positions):
        if layer in index:
            q_pre, k_pre, _ = rotated_inputs(layer, hidden, positions, rotate=False)
            tensors[f"layers.{index[layer]}.q_pre"] = q_pre.clone()
            tensors[f"layers.{index[layer]}.k_pre"] = k_pre.clone()
        return rotated_inputs(layer, hidden, positions)

    def capture(layer, q, k, v):
        if layer in index:
            for part, x in zip("qkv", (q, k, v)):
                tensors[f"layers.{index[layer]}.{part}"] = x.clone()
        return models.attend(q, k, v, model.score_scale,
                             models.causal_keep(q.shape[1], k.shape[0], model.windows[layer]))

    model.attention_inputs = attention_inputs  # this export's model only
    try:
        models.forward(model, ids, capture)
    finally:
        del model.attention_inputs
    return {f"layers.{i}.{part}": tensors[f"layers.{i}.{part}"]
            for i in range(len(layers)) for part in ("q", "k", "v", "q_pre", "k_pre")}


def export(gguf_path, text, tokens, layers, output, if_changed=False, log=None):
    """Exports `tokens` tokens of `text` through the GGUF model to `output`; returns
    (tensors, metadata), tensors None when if_changed found `output` current (its metadata,
    score_scale aside, equals this export's: the scale follows from the model file)."""
    log = log or (lambda message: None)
    reader = models.open_gguf(gguf_path)
    config = models.config_of(reader)
    selected = resolve_layers(layers, config["num_hidden_layers"])
    input_ids = models.tokenize(reader, text, tokens)
    metadata = provenance(reader, config, text, input_ids, selected,
                          models.file_sha256(gguf_path))
    existing = read_metadata(output) if if_changed else None
    if existing is not None and "score_scale" in existing:
        if {k: v for k, v in existing.items() if k != "score_scale"} == metadata:
            log(f"{output} is current (same provenance); not rewritten")
            return None, existing
    log(f"dequantizing {len(reader.tensors)} tensors of {os.path.basename(gguf_path)}")
    model = models.load(gguf_path)
    metadata["score_scale"] = repr(model.score_scale)
    log(f"running {tokens} tokens through {model.layers} layers")
    tensors = capture_qkv(model, input_ids[0], selected)
    # The stdlib writer: safetensors 0.8 writes __metadata__ in hash-map order, so its files
    # differ from run to run; export_qkv's own writer sorts the keys (bit-identical files).
    write_safetensors(output, tensors, metadata, writer="stdlib")
    return tensors, metadata


def build_parser():
    parser = argparse.ArgumentParser(
        prog="export_gguf.py",
        description="Dump per-layer post-RoPE Q, K, V of a GGUF model into "
                    "subevict's safetensors layout (see docs/export.md).")
    parser.add_argument("--gguf", required=True, help="the .gguf model file")
    parser.add_argument("--text-file", required=True, help="a UTF-8 text file to run")
    parser.add_argument("--tokens", type=int, required=True,
                        help="run the first N tokens of the text (BOS included when the model "
                             "adds one); the text must have at least N")
    parser.add_argument("--layers", default="all",
                        help="'all' (default) or comma-separated layer indices, e.g. 0,3")
    parser.add_argument("--if-changed", action="store_true",
                        help="leave OUT alone when its provenance metadata already matches")
    parser.add_argument("-o", "--output", required=True, help="the .safetensors file to write")
    return parser


def run(args):
    """Checks the arguments, then exports; returns the exit status."""
    if args.tokens < 1:
        raise ExportError(f"--tokens must be at least 1, got {args.tokens}")
    layers = parse_layers(args.layers)
    output = check_output_path(args.output)
    text = read_text_file(args.text_file)
    if not text.strip():
        raise ExportError(f"--text-file {args.text_file} is empty")

    def log(message):
        print(f"export_gguf: {message}", file=sys.stderr, flush=True)

    tensors, metadata = export(args.gguf, text, args.tokens, layers, output,
                               if_changed=args.if_changed, log=log)
    if tensors is not None:
        q, k = tensors["layers.0.q"], tensors["layers.0.k"]
        log(f"wrote {args.output}: layers={len(tensors) // 5} q_heads={q.shape[0]} "
            f"kv_heads={k.shape[0]} tokens={q.shape[1]} head_dim={q.shape[2]} "
            f"score_scale={metadata['score_scale']}")
    return 0


def main(argv=None):
    """Command-line entry point; returns the exit status (2 with a one-line error)."""
    args = build_parser().parse_args(argv)
    try:
        return run(args)
    except (ExportError, ModelError) as error:
        print(f"export_gguf: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
