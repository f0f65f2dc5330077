#!/usr/bin/env python3
"""Dump per-layer Q, K, V (after RoPE) of a Hugging Face causal LM for subevict.

Runs one forward pass of a prompt through the model, records the outputs of every selected
attention module's q/k/v projections with forward hooks, applies the model's own rotary
position embedding to q and k (cos/sin taken from the model's rotary module, rotate_half
convention), and writes them as float32 in subevict's safetensors layout:

    layers.{l}.q   [q_heads,  tokens, head_dim]
    layers.{l}.k   [kv_heads, tokens, head_dim]   (KV heads are not repeated for GQA)
    layers.{l}.v   [kv_heads, tokens, head_dim]
    layers.{l}.q_pre, layers.{l}.k_pre   q and k before the rotation (plain RoPE only)
    __metadata__   format=subevict.qkv.v1, score_scale, source, exporter, tokens,
                   prompt_sha256, source_layers, rope, model_dtype[, model_type]
                   [, rotary_bases, rotary_dims, rotary_pairing (with q_pre/k_pre)]

l runs over 0..L-1 in the order of the selected model layers (source_layers lists which).

Usage:
    export_qkv.py --model NAME_OR_PATH (--text STR | --text-file F) [--max-tokens N]
                  [--layers 0,1,5 | all] [--dtype float32|bfloat16|float16]
                  [--device cpu|cuda] [--rope auto|none] -o OUT.safetensors

transformers is only needed for loading the model (imported inside main); the capture and
writing functions work on any torch module laid out like Hugging Face's Llama family
(`...self_attn.{q_proj,k_proj,v_proj}`, a `rotary_emb` module on the base model or on each
attention module). See docs/export.md.
"""

from __future__ import annotations

import argparse
import array
import hashlib
import inspect
import json
import math
import os
import struct
import sys
import tempfile

FORMAT = "subevict.qkv.v1"
EXPORTER = "scripts/export_qkv.py"
DTYPES = ("float32", "bfloat16", "float16")


class ExportError(Exception):
    """A user-facing failure; main() prints it as one line and exits non-zero."""


# ---------------------------------------------------------------------------------------------
# Argument helpers


def parse_layers(spec):
    """'all' -> None; '0,1,5' -> [0, 1, 5] (sorted). Raises ExportError on anything else."""
    spec = spec.strip()
    if spec.lower() == "all":
        return None
    layers = []
    for part in spec.split(","):
        part = part.strip()
        if not part.isdigit():
            raise ExportError(
                f"bad --layers value {spec!r}: expected 'all' or comma-separated layer indices "
                "such as 0,1,5")
        index = int(part)
        if index in layers:
            raise ExportError(f"bad --layers value {spec!r}: layer {index} is listed twice")
        layers.append(index)
    return sorted(layers)


def resolve_layers(layers, count):
    """The selected layer indices checked against the model's `count` attention layers."""
    if count == 0:
        raise ExportError("the model has no attention layers")
    if layers is None:
        return list(range(count))
    for index in layers:
        if index >= count:
            raise ExportError(f"unknown layer index {index}: the model has {count} attention "
                              f"layers (0..{count - 1})")
    return list(layers)


# ---------------------------------------------------------------------------------------------
# Model inspection


def _is_module(obj):
    import torch

    return isinstance(obj, torch.nn.Module)


def _decoder_of(model):
    """The language-model decoder inside `model` (model.get_decoder() where it exists)."""
    get_decoder = getattr(model, "get_decoder", None)
    if callable(get_decoder):
        try:
            decoder = get_decoder()
        except Exception:  # some models do not implement it
            decoder = None
        if _is_module(decoder):
            return decoder
    return model


def find_attention_modules(model):
    """[(name, module)] of the self-attention modules with separate q_proj/k_proj/v_proj, in
    forward (layer) order, searched within the language-model decoder."""
    decoder = _decoder_of(model)
    prefix = ""
    if decoder is not model:
        for name, module in model.named_modules():
            if module is decoder:
                prefix = name + "." if name else ""
                break
    found = []
    for name, module in decoder.named_modules():
        if "cross_attn" in name or "encoder_attn" in name:
            continue
        if all(_is_module(getattr(module, p, None)) for p in ("q_proj", "k_proj", "v_proj")):
            if any(name.startswith(other + ".") for other, _ in found):
                continue
            found.append((prefix + name, module))
    return found


def _head_dim(model, attn):
    value = getattr(attn, "head_dim", None)
    if isinstance(value, int) and value > 0:
        return value
    config = getattr(model, "config", None)
    value = getattr(config, "head_dim", None)
    if isinstance(value, int) and value > 0:
        return value
    hidden = getattr(config, "hidden_size", None)
    heads = getattr(config, "num_attention_heads", None)
    if isinstance(hidden, int) and isinstance(heads, int) and heads > 0:
        return hidden // heads
    raise ExportError("cannot determine head_dim: neither the attention module nor the model "
                      "config states it")


def rotary_candidates(model, attn):
    """The rotary embedding modules that may supply `attn`'s cos/sin, most specific first.

    Older transformers keep one per attention module (`attn.rotary_emb`); current ones keep
    one on the base model (`model.model.rotary_emb`), with a `rotary_emb_local` beside it for
    sliding-window layers in some models (Gemma 3). Some versions in between have both, and
    only the base model's runs: capture_qkv uses the first candidate that ran."""
    found = []

    def add(module):
        if _is_module(module) and all(module is not other for other in found):
            found.append(module)

    add(getattr(attn, "rotary_emb", None))
    sliding = bool(getattr(attn, "is_sliding", False))
    for base in (getattr(model, "model", None), _decoder_of(model), model):
        if _is_module(base):
            if sliding:
                add(getattr(base, "rotary_emb_local", None))
            add(getattr(base, "rotary_emb", None))
    if not found:
        for name, module in model.named_modules():
            if name.split(".")[-1] == "rotary_emb":
                add(module)
                break
    return found


def find_rotary_embedding(model, attn):
    """The most specific rotary embedding module for `attn` (see rotary_candidates), or None."""
    candidates = rotary_candidates(model, attn)
    return candidates[0] if candidates else None


def score_scale(model, attn, head_dim):
    """The factor the model multiplies q.k by before the softmax."""
    value = getattr(attn, "scaling", None)
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
        return float(value)
    config = getattr(model, "config", None)
    value = getattr(config, "query_pre_attn_scalar", None)
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
        return float(value) ** -0.5
    return 1.0 / math.sqrt(head_dim)


# ---------------------------------------------------------------------------------------------
# RoPE


def rotate_half(x):
    """(x1, x2) -> (-x2, x1) over the last dimension's two halves."""
    import torch

    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def apply_rope(x, cos, sin):
    """x: [heads, tokens, head_dim]; cos, sin: [tokens, rot_dim] with rot_dim <= head_dim (the
    first rot_dim entries of each vector are rotated, as in partial-rotary models)."""
    import torch

    rot = cos.shape[-1]
    if rot > x.shape[-1] or rot % 2:
        raise ExportError(f"rotary embedding width {rot} does not fit head_dim {x.shape[-1]}")
    cos = cos.to(x.dtype)
    sin = sin.to(x.dtype)
    if rot == x.shape[-1]:
        return x * cos + rotate_half(x) * sin
    x_rot, x_pass = x[..., :rot], x[..., rot:]
    return torch.cat((x_rot * cos + rotate_half(x_rot) * sin, x_pass), dim=-1)


# The largest |cos − cos'| and |sin − sin'| between a rotary module's float32 table and the
# table of the base inferred from it, per position: float32 rounds the angle p θ_j to within
# about p · 2^-24 radians (and θ_j itself to 2^-24 relative), so 8 p 2^-24 bounds a plain
# rotary's error; a scaled one (Llama 3's, YaRN's) misses it by orders of magnitude.
ROPE_TABLE_TOLERANCE_PER_POSITION = 8 * 2.0 ** -24


def plain_rotary_base(cos, sin):
    """The RoPE base b of a (cos, sin) table [T, R] (positions 0..T-1, rotate_half layout) when
    it is plain RoPE, cos[p, j] = cos(p b^(-2j/R)) for j < R/2 (repeated in both halves), within
    ROPE_TABLE_TOLERANCE_PER_POSITION per position; None otherwise (scaled or learned rotaries,
    R < 4, fewer than 2 positions), where no pre-RoPE tensors can be described."""
    import math

    import torch

    tokens, rot = cos.shape
    if rot < 4 or rot % 2 or tokens < 2:
        return None
    theta_1 = math.atan2(float(sin[1, 1]), float(cos[1, 1]))
    if not 0.0 < theta_1 < 1.0:
        return None
    base = theta_1 ** (-rot / 2.0)
    half = torch.arange(0, rot, 2, dtype=torch.float64) / rot
    freqs = torch.arange(tokens, dtype=torch.float64).unsqueeze(-1) * (base ** -half).unsqueeze(0)
    emb = torch.cat((freqs, freqs), dim=-1)
    error = torch.maximum((emb.cos() - cos.double()).abs(), (emb.sin() - sin.double()).abs())
    bound = ROPE_TABLE_TOLERANCE_PER_POSITION * torch.arange(1, tokens + 1, dtype=torch.float64)
    return base if bool((error.max(dim=-1).values <= bound).all()) else None


def rotary_metadata(bases, dims):
    """The workload metadata entries that describe pre-RoPE tensors (core/workload_io.hpp): each
    exported layer's base, the rotated dims, the pairing."""
    return {"rotary_bases": ",".join(repr(float(b)) for b in bases), "rotary_dims": str(int(dims)),
            "rotary_pairing": "rotate_half"}


def _normalize_cos_sin(output, positions, what):
    """A rotary module's (cos, sin) output, any of [b=1, T, R], [1, 1, N, R] or [N, R], as the
    [T, R] rows for `positions`."""
    if not isinstance(output, (tuple, list)) or len(output) < 2:
        raise ExportError(f"{what} did not return (cos, sin)")
    cos, sin = output[0], output[1]
    if cos.shape != sin.shape or cos.dim() < 2:
        raise ExportError(f"{what} returned cos/sin of unexpected shapes {tuple(cos.shape)}, "
                          f"{tuple(sin.shape)}")
    rot = cos.shape[-1]
    cos = cos.reshape(-1, rot)
    sin = sin.reshape(-1, rot)
    tokens = positions.shape[0]
    if cos.shape[0] == tokens:
        return cos, sin
    if cos.shape[0] > int(positions.max()):
        index = positions.to(cos.device)
        return cos[index], sin[index]
    raise ExportError(f"{what} returned {cos.shape[0]} positions for {tokens} tokens")


def rope_cos_sin(rotary, x, positions):
    """Calls a rotary embedding module the way the model does and returns (cos, sin) as
    [tokens, rot_dim]. Current transformers: forward(x, position_ids); older ones:
    forward(x, seq_len)."""
    try:
        params = inspect.signature(rotary.forward).parameters
    except (TypeError, ValueError):
        params = {}
    if "position_ids" not in params and "seq_len" in params:
        output = rotary(x, seq_len=int(positions.max()) + 1)
    else:
        output = rotary(x, positions.unsqueeze(0))
    return _normalize_cos_sin(output, positions, type(rotary).__name__)


# ---------------------------------------------------------------------------------------------
# Capture


def _first_tensor(output):
    if isinstance(output, (tuple, list)):
        output = output[0]
    return output


def _forward_accepts(model, name):
    try:
        params = inspect.signature(model.forward).parameters
    except (TypeError, ValueError):
        return False
    return name in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


def capture_qkv(model, input_ids, layers=None, rope="auto", pre_rope=None):
    """One forward pass of input_ids ([1, tokens]) through `model`; returns the ordered dict
    {"layers.{l}.q": [q_heads, T, D], "layers.{l}.k"/".v": [kv_heads, T, D]} of float32 CPU
    tensors for the selected model layers (None: all), renumbered l = 0, 1, ... .

    q and k are rotated with the model's own RoPE (rope="auto"), or left as projected
    (rope="none", for models with learned or absolute positions). Where an attention module has
    q_norm/k_norm (Qwen 3, OLMo 2, Gemma 3), their outputs are captured instead of the raw
    projections, since the model normalises before rotating.

    With rope="auto" and a dict `pre_rope`, layers whose rotary is plain RoPE (plain_rotary_base)
    also get "layers.{l}.q_pre"/".k_pre", the same heads before the rotation, and pre_rope[l] =
    (base, rotated dims); where any selected layer's rotary is not plain, none does."""
    import torch

    if rope not in ("auto", "none"):
        raise ExportError(f"unknown rope mode {rope!r} (expected auto or none)")
    if input_ids.dim() != 2 or input_ids.shape[0] != 1:
        raise ExportError(f"input_ids must have shape [1, tokens], got {tuple(input_ids.shape)}")
    tokens = int(input_ids.shape[1])
    if tokens == 0:
        raise ExportError("no tokens to run")
    attention = find_attention_modules(model)
    if not attention:
        raise ExportError("no attention modules with separate q_proj/k_proj/v_proj found (models "
                          "with a fused QKV projection, such as GPT-2, GPT-NeoX or Phi-3, are "
                          "not supported)")
    selected = resolve_layers(layers, len(attention))

    captured = {}
    rotary_calls = {}
    rotaries = {}
    hooked = set()
    handles = []

    def store(key):
        def hook(_module, _inputs, output):
            captured[key] = _first_tensor(output).detach()
        return hook

    def store_rotary(key):
        def hook(_module, _inputs, output):
            if isinstance(output, (tuple, list)) and len(output) >= 2:
                rotary_calls.setdefault(key, []).append((output[0].detach(), output[1].detach()))
        return hook

    try:
        for out_index, layer in enumerate(selected):
            name, attn = attention[layer]
            q_src = attn.q_norm if _is_module(getattr(attn, "q_norm", None)) else attn.q_proj
            k_src = attn.k_norm if _is_module(getattr(attn, "k_norm", None)) else attn.k_proj
            for part, module in (("q", q_src), ("k", k_src), ("v", attn.v_proj)):
                handles.append(module.register_forward_hook(store((out_index, part))))
            if rope == "auto":
                candidates = rotary_candidates(model, attn)
                if not candidates:
                    raise ExportError(
                        f"no rotary embedding module found for {name}; if the model uses "
                        "learned or absolute positions (e.g. OPT), pass --rope none")
                rotaries[out_index] = candidates
                for rotary in candidates:
                    if id(rotary) not in hooked:
                        hooked.add(id(rotary))
                        handles.append(rotary.register_forward_hook(store_rotary(id(rotary))))
        kwargs = {"use_cache": False} if _forward_accepts(model, "use_cache") else {}
        with torch.no_grad():
            model(input_ids=input_ids, **kwargs)
    finally:
        for handle in handles:
            handle.remove()

    positions = torch.arange(tokens, device=input_ids.device)
    result = {}
    with torch.no_grad():
        for out_index, layer in enumerate(selected):
            name, attn = attention[layer]
            head_dim = _head_dim(model, attn)
            heads = {}
            for part in ("q", "k", "v"):
                if (out_index, part) not in captured:
                    raise ExportError(f"{name}: the {part} projection did not run in the forward "
                                      "pass")
                x = captured[(out_index, part)]
                if x.shape[0] != 1 or x.shape[1] != tokens or x.numel() % (tokens * head_dim):
                    raise ExportError(f"{name}: {part} output of shape {tuple(x.shape)} does not "
                                      f"split into heads of {head_dim} over {tokens} tokens")
                heads[part] = x.reshape(tokens, -1, head_dim).transpose(0, 1)
            if rope == "auto":
                candidates = rotaries[out_index]
                ran = [r for r in candidates if rotary_calls.get(id(r))]
                rotary = ran[0] if ran else candidates[0]
                calls = rotary_calls.get(id(rotary), [])
                if len(calls) > 1 and not all(torch.equal(c[0], calls[0][0]) and
                                              torch.equal(c[1], calls[0][1]) for c in calls):
                    raise ExportError(
                        f"{type(rotary).__name__} ran {len(calls)} times with different results; "
                        "per-layer RoPE variants of this kind are not supported")
                what = f"{type(rotary).__name__} of {name}"
                if calls:
                    cos, sin = _normalize_cos_sin(calls[0], positions, what)
                else:
                    cos, sin = rope_cos_sin(rotary, heads["q"].unsqueeze(0), positions)
                if pre_rope is not None:
                    base = plain_rotary_base(cos, sin)
                    if base is not None:
                        heads["q_pre"], heads["k_pre"] = heads["q"], heads["k"]
                        pre_rope[out_index] = (base, int(cos.shape[-1]))
                heads["q"] = apply_rope(heads["q"], cos, sin)
                heads["k"] = apply_rope(heads["k"], cos, sin)
            for part in [p for p in ("q", "k", "v", "q_pre", "k_pre") if p in heads]:
                result[f"layers.{out_index}.{part}"] = (
                    heads[part].to(device="cpu", dtype=torch.float32).contiguous())
        shapes = {(result[f"layers.{i}.q"].shape, result[f"layers.{i}.k"].shape)
                  for i in range(len(selected))}
        if len(shapes) != 1:
            raise ExportError("the selected layers differ in head counts or head_dim; export them "
                              "separately")
        kv = result["layers.0.k"].shape[0]
        if result["layers.0.q"].shape[0] % kv:
            raise ExportError(f"q_heads {result['layers.0.q'].shape[0]} is not a multiple of "
                              f"kv_heads {kv}")
    if pre_rope is not None and (len(pre_rope) != len(selected) or
                                 len({dims for _, dims in pre_rope.values()}) > 1):
        pre_rope.clear()  # pre-RoPE tensors in every layer or in none, one rotated width
        result = {name: x for name, x in result.items() if not name.endswith("_pre")}
    return result


# ---------------------------------------------------------------------------------------------
# safetensors writing


def _tensor_bytes(tensor):
    """The little-endian float32 bytes of a CPU float32 tensor, in row-major order."""
    flat = tensor.contiguous().reshape(-1)
    try:
        import numpy  # noqa: F401  (torch's .numpy() needs it)

        data = flat.numpy().astype("<f4", copy=False).tobytes()
    except (ImportError, RuntimeError):
        values = array.array("f", flat.tolist())
        if sys.byteorder == "big":
            values.byteswap()
        data = values.tobytes()
    return data


def build_header(tensors, metadata):
    """The padded header bytes and the payload order for `tensors` (name -> float32 tensor).

    Tensors are laid out sorted by name, as safetensors orders tensors of one dtype, and the
    JSON is compact and space-padded to a multiple of 8 bytes, as safetensors pads it."""
    order = sorted(tensors)
    header = {}
    if metadata:
        header["__metadata__"] = dict(sorted(metadata.items()))  # safetensors >= 0.4 sorts too
    offset = 0
    for name in order:
        size = tensors[name].numel() * 4
        header[name] = {"dtype": "F32", "shape": list(tensors[name].shape),
                        "data_offsets": [offset, offset + size]}
        offset += size
    raw = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    raw += b" " * (-len(raw) % 8)
    return raw, order


def _write_stdlib(stream, tensors, metadata):
    raw, order = build_header(tensors, metadata)
    stream.write(struct.pack("<Q", len(raw)))
    stream.write(raw)
    for name in order:
        stream.write(_tensor_bytes(tensors[name]))


def _have_safetensors():
    try:
        import safetensors.torch  # noqa: F401
    except ImportError:
        return False
    return True


def write_safetensors(path, tensors, metadata, writer="auto"):
    """Writes `tensors` (name -> torch float32 tensor) and `metadata` (str -> str) to `path`
    atomically: a temporary file in the same directory is renamed over `path` once complete.

    writer: "safetensors" (safetensors.torch.save_file), "stdlib" (json + struct) or "auto"
    (safetensors when importable). Both produce the same tensor payload and header content."""
    import torch

    if writer == "auto":
        writer = "safetensors" if _have_safetensors() else "stdlib"
    if writer not in ("safetensors", "stdlib"):
        raise ValueError(f"unknown writer {writer!r}")
    for key, value in (metadata or {}).items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise ExportError(f"metadata must map str to str, got {key!r}: {value!r}")
    prepared = {}
    for name, tensor in tensors.items():
        if not isinstance(name, str) or name == "__metadata__":
            raise ExportError(f"bad tensor name {name!r}")
        if not isinstance(tensor, torch.Tensor) or tensor.dtype != torch.float32:
            raise ExportError(f"tensor {name} must be a float32 torch tensor")
        prepared[name] = tensor.detach().to("cpu").contiguous()

    path = os.path.abspath(path)
    directory = os.path.dirname(path)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix="." + os.path.basename(path) + ".",
                               suffix=".tmp")
    try:
        if writer == "safetensors":
            os.close(fd)
            fd = None
            from safetensors.torch import save_file

            save_file(prepared, tmp, metadata=dict(metadata) if metadata else None)
            with open(tmp, "rb+") as stream:
                os.fsync(stream.fileno())
        else:
            with os.fdopen(fd, "wb") as stream:
                fd = None
                _write_stdlib(stream, prepared, metadata)
                stream.flush()
                os.fsync(stream.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        if fd is not None:
            os.close(fd)
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return path


# ---------------------------------------------------------------------------------------------
# Command line


def build_parser():
    parser = argparse.ArgumentParser(
        prog="export_qkv.py",
        description="Dump per-layer post-RoPE Q, K, V of a Hugging Face causal LM into "
                    "subevict's safetensors layout (see docs/export.md).")
    parser.add_argument("--model", required=True, help="model name on the hub or local path")
    text = parser.add_mutually_exclusive_group(required=True)
    text.add_argument("--text", help="the prompt")
    text.add_argument("--text-file", help="a UTF-8 file holding the prompt")
    parser.add_argument("--max-tokens", type=int, default=None,
                        help="keep only the first N tokens of the prompt")
    parser.add_argument("--layers", default="all",
                        help="'all' (default) or comma-separated layer indices, e.g. 0,1,5")
    parser.add_argument("--dtype", choices=DTYPES, default="float32",
                        help="dtype the model runs in (the file is always float32)")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--rope", choices=("auto", "none"), default="auto",
                        help="auto: rotate q and k with the model's rotary embedding; none: "
                             "export the projections as they are (learned positions, e.g. OPT)")
    parser.add_argument("--trust-remote-code", action="store_true",
                        help="pass trust_remote_code=True to transformers")
    parser.add_argument("-o", "--output", required=True, help="the .safetensors file to write")
    return parser


def load_hf_model(name, dtype, device, trust_remote_code=False):
    """(model, tokenizer) through transformers' Auto classes, in eval mode on `device`."""
    try:
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError:
        raise ExportError("transformers is not installed (pip install transformers)") from None
    import torch

    tokenizer = AutoTokenizer.from_pretrained(name, trust_remote_code=trust_remote_code)
    model = AutoModelForCausalLM.from_pretrained(name, torch_dtype=getattr(torch, dtype),
                                                 trust_remote_code=trust_remote_code)
    return model.to(device).eval(), tokenizer


def read_text_file(path):
    """The UTF-8 text of --text-file `path`; ExportError when unreadable or not UTF-8."""
    try:
        with open(path, encoding="utf-8") as stream:
            return stream.read()
    except OSError as error:
        raise ExportError(f"cannot read --text-file {path}: {error.strerror or error}") from None
    except UnicodeDecodeError:
        raise ExportError(f"--text-file {path} is not UTF-8") from None


def check_output_path(path):
    """The absolute form of output `path`, after checking that it is not a directory and that
    its directory exists (so that a long run does not fail at the end)."""
    output = os.path.abspath(path)
    if os.path.isdir(output):
        raise ExportError(f"output {path} is a directory")
    if not os.path.isdir(os.path.dirname(output)):
        raise ExportError(f"output directory does not exist: {os.path.dirname(output)}")
    return output


def _read_text(args):
    if args.text_file is not None:
        return read_text_file(args.text_file)
    return args.text


def run(args, loader):
    text = _read_text(args)
    if not text.strip():
        raise ExportError("the prompt text is empty")
    if args.max_tokens is not None and args.max_tokens < 1:
        raise ExportError(f"--max-tokens must be at least 1, got {args.max_tokens}")
    layers = parse_layers(args.layers)
    output = check_output_path(args.output)

    import torch

    if args.device == "cuda" and not torch.cuda.is_available():
        raise ExportError("--device cuda requested but CUDA is not available")
    model, tokenizer = loader(args.model, args.dtype, args.device, args.trust_remote_code)
    input_ids = tokenizer(text, return_tensors="pt")["input_ids"]
    if args.max_tokens is not None:
        input_ids = input_ids[:, :args.max_tokens]
    if input_ids.shape[-1] == 0:
        raise ExportError("the prompt tokenizes to no tokens")
    input_ids = input_ids.to(args.device)

    attention = find_attention_modules(model)
    selected = resolve_layers(layers, len(attention))
    rotary = {}
    tensors = capture_qkv(model, input_ids, selected, rope=args.rope, pre_rope=rotary)

    scales = set()
    for index in selected:
        attn = attention[index][1]
        scales.add(score_scale(model, attn, _head_dim(model, attn)))
    if len(scales) != 1:
        raise ExportError(f"the selected layers use different score scales {sorted(scales)}; "
                          "export them separately")
    scale = scales.pop()
    config = getattr(model, "config", None)
    if getattr(config, "attn_logit_softcapping", None):
        print("export_qkv: warning: the model soft-caps attention logits; subevict's scores "
              "do not", file=sys.stderr)

    metadata = {
        "format": FORMAT,
        "score_scale": repr(scale),
        "source": args.model,
        "exporter": EXPORTER,
        "tokens": str(int(input_ids.shape[-1])),
        "prompt_sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
        "source_layers": ",".join(str(i) for i in selected),
        "rope": "rotate_half" if args.rope == "auto" else "none",
        "model_dtype": args.dtype,
    }
    model_type = getattr(config, "model_type", None)
    if isinstance(model_type, str) and model_type:
        metadata["model_type"] = model_type
    if rotary:
        metadata.update(rotary_metadata([rotary[i][0] for i in range(len(selected))], rotary[0][1]))
    elif args.rope == "auto":
        print("export_qkv: note: the rotary is not plain RoPE (scaled or partial in some layer); "
              "no pre-RoPE tensors written", file=sys.stderr)
    write_safetensors(output, tensors, metadata)
    q, k = tensors["layers.0.q"], tensors["layers.0.k"]
    print(f"export_qkv: wrote {args.output}: layers={len(selected)} q_heads={q.shape[0]} "
          f"kv_heads={k.shape[0]} tokens={q.shape[1]} head_dim={q.shape[2]} "
          f"score_scale={scale!r}", file=sys.stderr)
    return 0


def main(argv=None, loader=None):
    """Command-line entry point; returns the exit status. `loader(name, dtype, device,
    trust_remote_code) -> (model, tokenizer)` replaces the transformers loader (tests)."""
    args = build_parser().parse_args(argv)
    try:
        return run(args, loader or load_hf_model)
    except ExportError as error:
        print(f"export_qkv: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
