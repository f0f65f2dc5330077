#!/usr/bin/env python3
"""Dump per-layer Q, K, V (after RoPE) of a LLaMA-family GGUF model for subevict.

Reads a GGUF file (llama.cpp's format) with the `gguf` package, dequantizes every tensor to
float32, builds a transformers `LlamaConfig` from the file's `llama.*` metadata, undoes the
row permutation llama.cpp's converter applies to the q/k projections (so that Hugging Face's
rotate_half RoPE applies), loads the weights into `LlamaForCausalLM`, tokenizes the text with
the file's own vocabulary and runs scripts/export_qkv.py's capture on the first N tokens.
The output has export_qkv's layout and format (see docs/export.md, "GGUF models").

Usage:
    export_gguf.py --gguf FILE --text-file FILE --tokens N [--layers all|0,3]
                   [--if-changed] -o OUT.safetensors

Supported: general.architecture `llama` (Llama 1/2/3, TinyLlama, SmolLM, Mistral 7B as
converted by llama.cpp) without RoPE scaling; tokenizers `llama` (SentencePiece) and `gpt2`
(byte-level BPE with the pre-tokenizers `smollm`, `llama-bpe`, `gpt2`/`default`).
Needs torch, numpy, transformers (tested with 4.46.3) and gguf (0.17.1): scripts/setup_model
installs them into .venv/.
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

from export_qkv import (FORMAT, ExportError, capture_qkv, check_output_path,  # noqa: E402
                        parse_layers, read_text_file, resolve_layers, score_scale,
                        write_safetensors)

EXPORTER = "scripts/export_gguf.py"
SUPPORTED_ARCHITECTURES = ("llama",)

# GGUF tensor name (with {i} for the block) -> LlamaForCausalLM state-dict name.
TENSOR_NAMES = {
    "token_embd.weight": "model.embed_tokens.weight",
    "output_norm.weight": "model.norm.weight",
    "output.weight": "lm_head.weight",
    "blk.{i}.attn_norm.weight": "model.layers.{i}.input_layernorm.weight",
    "blk.{i}.ffn_norm.weight": "model.layers.{i}.post_attention_layernorm.weight",
    "blk.{i}.attn_q.weight": "model.layers.{i}.self_attn.q_proj.weight",
    "blk.{i}.attn_k.weight": "model.layers.{i}.self_attn.k_proj.weight",
    "blk.{i}.attn_v.weight": "model.layers.{i}.self_attn.v_proj.weight",
    "blk.{i}.attn_output.weight": "model.layers.{i}.self_attn.o_proj.weight",
    "blk.{i}.ffn_gate.weight": "model.layers.{i}.mlp.gate_proj.weight",
    "blk.{i}.ffn_up.weight": "model.layers.{i}.mlp.up_proj.weight",
    "blk.{i}.ffn_down.weight": "model.layers.{i}.mlp.down_proj.weight",
}

# Regular expressions of the byte-level BPE pre-tokenizers, by tokenizer.ggml.pre. Each list is
# applied in order (a split isolating each match), as llama.cpp's llama-vocab.cpp does.
GPT2_REGEX = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)"
LLAMA3_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
                r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
BPE_PRE_TOKENIZERS = {
    "default": [GPT2_REGEX],
    "gpt2": [GPT2_REGEX],
    "smollm": [r"\p{N}", GPT2_REGEX],
    "llama-bpe": [LLAMA3_REGEX],
}


# ---------------------------------------------------------------------------------------------
# Reading the GGUF file


def open_gguf(path):
    """A gguf.GGUFReader of `path`; ExportError naming the file when it is missing or not a
    GGUF file."""
    if not os.path.isfile(path):
        raise ExportError(f"--gguf {path}: no such file")
    with open(path, "rb") as stream:
        magic = stream.read(4)
    if magic != b"GGUF":
        raise ExportError(f"--gguf {path} is not a GGUF file (expected the magic bytes 'GGUF', "
                          f"found {magic!r})")
    try:
        import gguf
    except ImportError:
        raise ExportError("the gguf package is not installed (scripts/setup_model installs "
                          "it into .venv/)") from None
    try:
        return gguf.GGUFReader(path)
    except (ValueError, IndexError, OSError) as error:
        raise ExportError(f"--gguf {path}: cannot read the GGUF file: {error}") from None


def field(reader, key, default=None, required=True):
    """The value of metadata `key` (a Python scalar, str or list), or `default` when absent
    and not `required`."""
    entry = reader.fields.get(key)
    if entry is None:
        if required:
            raise ExportError(f"{reader.data.filename}: GGUF metadata key {key} is missing")
        return default
    return entry.contents()


def file_sha256(path):
    """The hex SHA-256 of the file at `path`."""
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def model_config(reader):
    """A dict of LlamaConfig arguments from the GGUF metadata (`llama.*` keys)."""
    arch = field(reader, "general.architecture")
    if arch not in SUPPORTED_ARCHITECTURES:
        raise ExportError(f"{reader.data.filename}: unsupported architecture {arch!r} (expected "
                          f"one of {', '.join(SUPPORTED_ARCHITECTURES)})")
    tensors = tensor_index(reader)
    scaling = field(reader, f"{arch}.rope.scaling.type", "none", required=False)
    if scaling not in ("none", "") or "rope_freqs.weight" in tensors:
        raise ExportError(f"{reader.data.filename}: RoPE scaling ({scaling!r} or a "
                          "rope_freqs.weight tensor) is not supported")
    hidden = field(reader, f"{arch}.embedding_length")
    heads = field(reader, f"{arch}.attention.head_count")
    head_dim = field(reader, f"{arch}.attention.key_length", hidden // heads, required=False)
    rope_dim = field(reader, f"{arch}.rope.dimension_count", head_dim, required=False)
    if rope_dim != head_dim:
        raise ExportError(f"{reader.data.filename}: partial RoPE (rope.dimension_count "
                          f"{rope_dim}, head_dim {head_dim}) is not supported")
    if "token_embd.weight" not in tensors:
        raise ExportError(f"{reader.data.filename}: tensor token_embd.weight is missing")
    vocab = field(reader, f"{arch}.vocab_size", int(tensors["token_embd.weight"].shape[-1]),
                  required=False)
    return {
        "vocab_size": int(vocab),
        "hidden_size": int(hidden),
        "intermediate_size": int(field(reader, f"{arch}.feed_forward_length")),
        "num_hidden_layers": int(field(reader, f"{arch}.block_count")),
        "num_attention_heads": int(heads),
        "num_key_value_heads": int(field(reader, f"{arch}.attention.head_count_kv", heads,
                                         required=False)),
        "head_dim": int(head_dim),
        "rope_theta": float(field(reader, f"{arch}.rope.freq_base", 10000.0, required=False)),
        "rms_norm_eps": float(field(reader, f"{arch}.attention.layer_norm_rms_epsilon")),
        "max_position_embeddings": int(field(reader, f"{arch}.context_length")),
        "tie_word_embeddings": "output.weight" not in tensors,
        "bos_token_id": field(reader, "tokenizer.ggml.bos_token_id", None, required=False),
        "eos_token_id": field(reader, "tokenizer.ggml.eos_token_id", None, required=False),
    }


def tensor_index(reader):
    """{name: gguf ReaderTensor} of the file's tensors."""
    return {tensor.name: tensor for tensor in reader.tensors}


# ---------------------------------------------------------------------------------------------
# Weights


def permute_qk(weight, heads):
    """llama.cpp's converter permutation of a q_proj/k_proj weight ([heads * head_dim, in]):
    within each head, rows (0..D/2-1, D/2..D-1) of Hugging Face's rotate_half layout become
    interleaved pairs (0, D/2, 1, D/2+1, ...), as ggml's RoPE rotates adjacent pairs."""
    rows = weight.shape[0]
    return (weight.reshape(heads, 2, rows // heads // 2, *weight.shape[1:])
            .transpose(1, 2).reshape(weight.shape))


def unpermute_qk(weight, heads):
    """The inverse of permute_qk: interleaved pairs back to rotate_half halves."""
    rows = weight.shape[0]
    return (weight.reshape(heads, rows // heads // 2, 2, *weight.shape[1:])
            .transpose(1, 2).reshape(weight.shape))


def dequantize(tensor):
    """A float32 torch tensor of a GGUF tensor, in torch's [out, in] (row-major) shape."""
    import gguf
    import numpy
    import torch

    try:
        values = gguf.quants.dequantize(tensor.data, tensor.tensor_type)
    except NotImplementedError:
        raise ExportError(f"tensor {tensor.name}: GGML type {tensor.tensor_type.name} cannot "
                          "be dequantized by the gguf package") from None
    shape = tuple(int(n) for n in reversed(tensor.shape))  # GGUF lists ne0 (columns) first
    values = numpy.array(values, dtype=numpy.float32, order="C").reshape(shape)  # writable
    return torch.from_numpy(values)


def tensor_names(layers):
    """[(GGUF tensor name, LlamaForCausalLM state-dict name)] for a model of `layers` blocks."""
    pairs = []
    for gguf_name, hf_name in TENSOR_NAMES.items():
        if "{i}" in gguf_name:
            pairs += [(gguf_name.format(i=i), hf_name.format(i=i)) for i in range(layers)]
        else:
            pairs.append((gguf_name, hf_name))
    return pairs


def state_dict(reader, config, undo_permutation=True):
    """The LlamaForCausalLM state dict (float32) of the GGUF tensors. undo_permutation=False
    keeps llama.cpp's interleaved q/k rows (wrong for rotate_half; for tests)."""
    tensors = tensor_index(reader)
    pairs = tensor_names(config["num_hidden_layers"])
    unknown = sorted(set(tensors) - {gguf_name for gguf_name, _ in pairs})
    if unknown:
        raise ExportError(f"{reader.data.filename}: unsupported tensors {', '.join(unknown[:3])}"
                          " (not part of a LLaMA model)")
    heads = {"attn_q": config["num_attention_heads"], "attn_k": config["num_key_value_heads"]}
    result = {}
    for gguf_name, hf_name in pairs:
        if gguf_name not in tensors:
            if gguf_name == "output.weight":
                continue  # tied to token_embd.weight
            raise ExportError(f"{reader.data.filename}: tensor {gguf_name} is missing")
        weight = dequantize(tensors[gguf_name])
        kind = gguf_name.split(".")[-2]
        if undo_permutation and kind in heads:
            weight = unpermute_qk(weight, heads[kind])
        result[hf_name] = weight
    if config["tie_word_embeddings"]:
        result["lm_head.weight"] = result["model.embed_tokens.weight"]
    return result


def build_model(reader, undo_permutation=True):
    """(LlamaForCausalLM in float32 and eval mode with the GGUF weights, config dict). Eager
    attention, so that output_attentions works and no fused kernel reorders the arithmetic."""
    from transformers import LlamaConfig, LlamaForCausalLM

    config = model_config(reader)
    weights = state_dict(reader, config, undo_permutation)
    model = LlamaForCausalLM(LlamaConfig(**config, attn_implementation="eager"))
    model.load_state_dict(weights, strict=True)
    return model.eval(), config


# ---------------------------------------------------------------------------------------------
# Tokenizer


def load_tokenizer(reader):
    """(tokenizers.Tokenizer from the GGUF vocabulary, add_bos, bos_id).

    `gpt2` vocabularies (byte-level BPE) are built here from tokenizer.ggml.tokens/merges with
    the pre-tokenizer named by tokenizer.ggml.pre; `llama` (SentencePiece) ones through
    transformers' GGUF converter. add_bos follows tokenizer.ggml.add_bos_token (llama.cpp adds
    BOS when the key is absent)."""
    kind = field(reader, "tokenizer.ggml.model")
    if kind == "gpt2":
        tokenizer = _byte_level_bpe(reader)
    elif kind == "llama":
        tokenizer = _sentencepiece_bpe(reader)
    else:
        raise ExportError(f"{reader.data.filename}: unsupported tokenizer.ggml.model {kind!r} "
                          "(expected gpt2 or llama)")
    add_bos = bool(field(reader, "tokenizer.ggml.add_bos_token", True, required=False))
    bos = field(reader, "tokenizer.ggml.bos_token_id", None, required=False)
    if add_bos and bos is None:
        raise ExportError(f"{reader.data.filename}: add_bos_token is set but bos_token_id is "
                          "missing")
    return tokenizer, add_bos, bos


def _byte_level_bpe(reader):
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers

    pre = field(reader, "tokenizer.ggml.pre", "default", required=False)
    if pre not in BPE_PRE_TOKENIZERS:
        raise ExportError(f"{reader.data.filename}: unsupported tokenizer.ggml.pre {pre!r} "
                          f"(supported: {', '.join(sorted(BPE_PRE_TOKENIZERS))})")
    tokens = field(reader, "tokenizer.ggml.tokens")
    merges = [tuple(m.split(" ", 1)) for m in field(reader, "tokenizer.ggml.merges")]
    vocab = {token: i for i, token in enumerate(tokens)}
    tokenizer = Tokenizer(models.BPE(vocab, merges, fuse_unk=False, byte_fallback=False))
    splits = [pre_tokenizers.Split(Regex(r), behavior="isolated")
              for r in BPE_PRE_TOKENIZERS[pre]]
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        splits + [pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tokenizer.decoder = decoders.ByteLevel()
    return tokenizer


def _sentencepiece_bpe(reader):
    from transformers.integrations.ggml import convert_gguf_tokenizer
    from transformers.modeling_gguf_pytorch_utils import load_gguf_checkpoint

    parsed = load_gguf_checkpoint(reader.data.filename, return_tensors=False)
    tokenizer, _ = convert_gguf_tokenizer("llama", parsed["tokenizer"])
    tokenizer.post_processor = None  # BOS is added by tokenize(), as the metadata says
    return tokenizer


def tokenize(reader, text, tokens):
    """The first `tokens` token ids of `text` ([1, tokens] int64 torch tensor), BOS first when
    the model adds one."""
    import torch

    tokenizer, add_bos, bos = load_tokenizer(reader)
    ids = tokenizer.encode(text, add_special_tokens=False).ids
    if add_bos:
        ids = [int(bos)] + ids
    if len(ids) < tokens:
        raise ExportError(f"the text has {len(ids)} tokens{' with BOS' if add_bos else ''}, "
                          f"fewer than --tokens {tokens}")
    return torch.tensor([ids[:tokens]], dtype=torch.int64)


def token_ids_sha256(input_ids):
    """SHA-256 of the token ids written as comma-separated decimals (e.g. '1,504,22')."""
    text = ",".join(str(int(i)) for i in input_ids.reshape(-1).tolist())
    return hashlib.sha256(text.encode("ascii")).hexdigest()


# ---------------------------------------------------------------------------------------------
# Export


def provenance(reader, config, text, input_ids, layers, gguf_sha256):
    """The safetensors __metadata__ of an export (all values str), less score_scale, which
    export() takes from the built model. rope_base is the model's RoPE base (GGUF
    rope.freq_base), which `subevict workload fit` gives the model's synthetic twin."""
    import torch
    import transformers

    return {
        "format": FORMAT,
        "source": os.path.basename(reader.data.filename),
        "model_name": str(field(reader, "general.name", "", required=False)),
        "model_type": "llama",
        "gguf_sha256": gguf_sha256,
        "prompt_sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
        "tokens": str(int(input_ids.shape[-1])),
        "token_ids_sha256": token_ids_sha256(input_ids),
        "source_layers": ",".join(str(i) for i in layers),
        "rope": "rotate_half",
        "rope_base": repr(float(config["rope_theta"])),
        "model_dtype": "float32",
        "exporter": EXPORTER,
        "torch_version": torch.__version__,
        "transformers_version": transformers.__version__,
    }


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


def export(gguf_path, text, tokens, layers, output, if_changed=False, undo_permutation=True,
           log=None):
    """Exports `tokens` tokens of `text` through the GGUF model to `output`; returns
    (tensors, metadata), tensors None when if_changed found `output` current (its metadata,
    score_scale aside, equals this export's: the scale follows from the model file)."""
    log = log or (lambda message: None)
    reader = open_gguf(gguf_path)
    config = model_config(reader)
    selected = resolve_layers(layers, config["num_hidden_layers"])
    input_ids = tokenize(reader, text, tokens)
    metadata = provenance(reader, config, text, input_ids, selected, file_sha256(gguf_path))
    existing = read_metadata(output) if if_changed else None
    if existing is not None and "score_scale" in existing:
        if {k: v for k, v in existing.items() if k != "score_scale"} == metadata:
            log(f"{output} is current (same provenance); not rewritten")
            return None, existing
    log(f"dequantizing {len(reader.tensors)} tensors of {os.path.basename(gguf_path)}")
    model, config = build_model(reader, undo_permutation)
    attn = model.model.layers[0].self_attn
    metadata["score_scale"] = repr(score_scale(model, attn, config["head_dim"]))
    log(f"running {tokens} tokens through {config['num_hidden_layers']} layers")
    tensors = capture_qkv(model, input_ids, selected)
    # The stdlib writer: safetensors 0.8 writes __metadata__ in hash-map order, so its files
    # differ from run to run; export_qkv's own writer sorts the keys (bit-identical files).
    write_safetensors(output, tensors, metadata, writer="stdlib")
    return tensors, metadata


def build_parser():
    parser = argparse.ArgumentParser(
        prog="export_gguf.py",
        description="Dump per-layer post-RoPE Q, K, V of a LLaMA-family GGUF model into "
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
        log(f"wrote {args.output}: layers={len(tensors) // 3} q_heads={q.shape[0]} "
            f"kv_heads={k.shape[0]} tokens={q.shape[1]} head_dim={q.shape[2]} "
            f"score_scale={metadata['score_scale']}")
    return 0


def main(argv=None):
    """Command-line entry point; returns the exit status (2 with a one-line error)."""
    args = build_parser().parse_args(argv)
    try:
        return run(args)
    except ExportError as error:
        print(f"export_gguf: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
