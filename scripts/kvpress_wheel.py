"""kvpress's own scoring code, run on explicit Q, K and V: the reference that subevict's policies with
kvpress's names are compared with (tests/kvpress/, scripts/prerope_agreement.py).

kvpress 0.5.5's wheel is fetched once with pip (`pip download kvpress==0.5.5 --no-deps`) into
`.cache/kvpress/` at the repository root (ignored by git; $SUBEVICT_KVPRESS_CACHE overrides it) and
its press modules are imported from the unpacked wheel under whatever torch is installed (Debian's
1.13 in `.venv/`). kvpress's package `__init__` (its pipeline, which needs a recent transformers) is
never run: `kvpress` and `kvpress.presses` are bare packages over the wheel's folders, and
`transformers` is a stub for the duration of the import only. The presses import from transformers
only model classes (isinstance checks against real models, absent here) and two tensor helpers,
`repeat_kv` and `rotate_half`, which the stub defines as transformers does.

`load()` returns the kvpress package's modules; `score(press, q, k, v)` calls a press's `score()`
the way kvpress's forward hook does, on a stand-in attention layer whose projections hand back the
given Q and K unchanged. Its rotary embedding is the identity (cos 1, sin 0) by default, so that the
"pre-RoPE" Q and K kvpress projects are the given ones; with `rope_theta` the given Q and K are
pre-RoPE, the layer's rotary embedding is Llama's default (rotate-half pairs, inverse frequencies
theta^(-2i/d)) and the cache kvpress scores holds the rotated keys.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import types
import zipfile
from pathlib import Path

VERSION = "0.5.5"
ROOT = Path(__file__).resolve().parents[1]


class Unavailable(RuntimeError):
    """kvpress's wheel could not be fetched or imported (the message says why)."""


def cache_dir() -> Path:
    return Path(os.environ.get("SUBEVICT_KVPRESS_CACHE", ROOT / ".cache" / "kvpress"))


def _wheel_source() -> Path:
    """The unpacked wheel's folder (holding kvpress/), fetched with pip when absent."""
    cache = cache_dir()
    unpacked = cache / f"kvpress-{VERSION}"
    if (unpacked / "kvpress" / "presses" / "scorer_press.py").is_file():
        return unpacked
    cache.mkdir(parents=True, exist_ok=True)
    wheels = sorted(cache.glob(f"kvpress-{VERSION}-*.whl"))
    if not wheels:
        try:
            subprocess.run(
                [sys.executable, "-m", "pip", "download", f"kvpress=={VERSION}", "--no-deps", "--quiet",
                 "--retries", "1", "--timeout", "20", "-d", str(cache)],
                check=True, capture_output=True, text=True, timeout=120)
        except (OSError, subprocess.SubprocessError) as e:
            detail = getattr(e, "stderr", "") or str(e)
            raise Unavailable(f"pip download kvpress=={VERSION} failed: {detail.strip().splitlines()[-1:]}") from e
        wheels = sorted(cache.glob(f"kvpress-{VERSION}-*.whl"))
        if not wheels:
            raise Unavailable(f"pip download kvpress=={VERSION} left no wheel in {cache}")
    partial = cache / f"kvpress-{VERSION}.partial"
    with zipfile.ZipFile(wheels[0]) as z:
        z.extractall(partial)
    partial.rename(unpacked)
    return unpacked


def _transformers_stub(torch) -> dict[str, types.ModuleType]:
    """Modules standing in for transformers while kvpress's presses are imported."""

    def repeat_kv(x, n_rep: int):
        # (B, H_kv, S, d) -> (B, H_kv * n_rep, S, d), each KV head repeated for its group (contiguous)
        b, h, s, d = x.shape
        return x if n_rep == 1 else x[:, :, None].expand(b, h, n_rep, s, d).reshape(b, h * n_rep, s, d)

    def rotate_half(x):
        half = x.shape[-1] // 2
        return torch.cat((-x[..., half:], x[..., :half]), dim=-1)

    class _Stub(types.ModuleType):
        def __getattr__(self, name):  # any class kvpress names: a class no real object is an instance of
            if name.startswith("__"):
                raise AttributeError(name)
            cls = type(name, (), {})
            setattr(self, name, cls)
            return cls

    names = ["transformers", "transformers.cache_utils", "transformers.modeling_utils", "transformers.models",
             "transformers.models.llama", "transformers.models.llama.modeling_llama"]
    for family in ("gemma3", "phi3", "qwen2", "qwen3", "mistral"):
        names += [f"transformers.models.{family}", f"transformers.models.{family}.modeling_{family}"]
    modules = {name: _Stub(name) for name in names}
    for name, module in modules.items():
        module.__path__ = []  # a package: submodules resolve through sys.modules
    modules["transformers.models.llama.modeling_llama"].repeat_kv = repeat_kv
    modules["transformers.models.llama.modeling_llama"].rotate_half = rotate_half
    return modules


_loaded: types.SimpleNamespace | None = None
_failure: Unavailable | None = None  # the first failure, raised again without another download

#: The press modules the comparison needs (kvpress/presses/<name>.py).
PRESS_MODULES = ["knorm_press", "keydiff_press", "observed_attention_press", "snapkv_press",
                 "expected_attention_press", "lagkv_press", "cur_press", "cap_press", "leverage_press",
                 "non_causal_attention_press", "compactor_press", "streaming_llm_press", "pyramidkv_press",
                 "criticalkv_press"]


def load() -> types.SimpleNamespace:
    """kvpress's press modules by file name (e.g. `load().snapkv_press.SnapKVPress`) and `torch`.
    Raises Unavailable with the reason when torch, the wheel or an import is missing."""
    global _loaded, _failure
    if _loaded is not None:
        return _loaded
    if _failure is not None:
        raise _failure
    try:
        _loaded = _load()
    except Unavailable as e:
        _failure = e
        raise
    return _loaded


def _load() -> types.SimpleNamespace:
    try:
        import torch
    except ImportError as e:
        raise Unavailable(f"torch is not installed ({e})") from e
    source = _wheel_source()
    stub = _transformers_stub(torch)
    saved = {name: sys.modules.get(name) for name in stub}
    sys.modules.update(stub)
    for package in ("kvpress", "kvpress.presses"):
        if package not in sys.modules:
            module = types.ModuleType(package)
            module.__path__ = [str(source.joinpath(*package.split(".")))]
            sys.modules[package] = module
    try:
        modules = {name: importlib.import_module(f"kvpress.presses.{name}") for name in PRESS_MODULES}
    except Exception as e:  # noqa: BLE001 - any import failure means: kvpress cannot run here
        raise Unavailable(f"importing kvpress {VERSION}'s presses failed: {type(e).__name__}: {e}") from e
    finally:
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module
    return types.SimpleNamespace(torch=torch, **modules)


def rotary(torch, positions, head_dim: int, rope_theta=None, dtype=None):
    """(cos, sin) [len(positions), head_dim] of Llama's default rotary embedding at `positions` (a
    tensor), or the identity (ones, zeros) when rope_theta is None."""
    dtype = dtype or torch.float32
    shape = (positions.shape[-1], head_dim)
    if rope_theta is None:
        return torch.ones(shape, dtype=dtype), torch.zeros(shape, dtype=dtype)
    inv_freq = 1.0 / (rope_theta ** (torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim))
    freqs = positions.reshape(-1, 1).to(torch.float64) * inv_freq[None]
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos().to(dtype), emb.sin().to(dtype)


def _layer(torch, q_heads: int, kv_heads: int, head_dim: int, layer_idx: int, o_proj=None, rope_theta=None):
    """A stand-in attention layer: hidden states are [Q heads | K heads] concatenated per token, q_proj and
    k_proj select them; rotary_emb is `rotary` with rope_theta."""
    nn = torch.nn
    width = (q_heads + kv_heads) * head_dim

    def select(first: int, count: int):
        proj = nn.Linear(width, count, bias=False).to(torch.float64)
        with torch.no_grad():
            proj.weight.zero_()
            proj.weight[:, first:first + count] = torch.eye(count, dtype=torch.float64)
        return proj

    class Rotary(nn.Module):
        def forward(self, x, position_ids):  # (cos, sin) [batch, positions, head_dim], as transformers'
            cos, sin = rotary(torch, position_ids[0], head_dim, rope_theta, x.dtype)
            return cos[None].expand(position_ids.shape[0], -1, -1), sin[None].expand(position_ids.shape[0], -1, -1)

    layer = nn.Module()
    layer.config = types.SimpleNamespace(num_attention_heads=q_heads, num_key_value_heads=kv_heads,
                                         head_dim=head_dim, hidden_size=q_heads * head_dim, num_hidden_layers=1)
    layer.head_dim = head_dim
    layer.layer_idx = layer_idx
    layer.num_key_value_groups = q_heads // kv_heads
    layer.q_proj = select(0, q_heads * head_dim)
    layer.k_proj = select(q_heads * head_dim, kv_heads * head_dim)
    layer.rotary_emb = Rotary()
    if o_proj is not None:
        layer.o_proj = o_proj
    return layer


def _inputs(q, k, v, attentions, dtype, rope_theta):
    """The stand-in layer, hidden states, cache keys and values, attentions and kwargs of press.score()
    and press.compress() (score() documents the arguments)."""
    torch = load().torch
    dtype = dtype or torch.float32
    q, k, v = (torch.as_tensor(x).to(dtype) for x in (q, k, v))
    q_heads, n, d = q.shape
    kv_heads = k.shape[0]
    layer = _layer(torch, q_heads, kv_heads, d, 0, rope_theta=rope_theta).to(dtype)
    hidden = torch.cat([q.permute(1, 0, 2).reshape(n, -1), k.permute(1, 0, 2).reshape(n, -1)], dim=1)[None]
    cos, sin = rotary(torch, torch.arange(n), d, rope_theta, dtype)
    half = d // 2
    k = k * cos + torch.cat((-k[..., half:], k[..., :half]), dim=-1) * sin  # the cache: rotated keys
    kwargs = {"position_embeddings": (cos[None], sin[None]), "cache_position": torch.arange(n)}
    att = None if attentions is None else torch.as_tensor(attentions).to(dtype)[None]
    return layer, hidden, k[None], v[None], att, kwargs


def score(press, q, k, v, attentions=None, dtype=None, rope_theta=None):
    """press.score() on one layer: q [q_heads, n, d], k and v [kv_heads, n, d] (NumPy or torch), the
    prefill of all n tokens; returns the scores [kv_heads, n] as a float64 NumPy array. `attentions`
    (q_heads x n x n, the causal attention) is handed to presses that read it. dtype: the tensors'
    torch dtype (default float32, the workload's). rope_theta: None, Q and K as given (identity rotary);
    else Q and K are pre-RoPE and rotated by Llama's rotary embedding at positions 0..n-1 (the cache
    holds the rotated keys)."""
    torch = load().torch
    with torch.no_grad():
        out = press.score(*_inputs(q, k, v, attentions, dtype, rope_theta))
    return out[0].to(torch.float64).numpy()


def compress(press, q, k, v, attentions=None, dtype=None, rope_theta=None):
    """press.compress() on one layer (arguments as score()): the cache's keys and values after it,
    [kv_heads, kept, d] each, in the order kvpress leaves them, as float64 NumPy arrays."""
    torch = load().torch
    with torch.no_grad():
        keys, values = press.compress(*_inputs(q, k, v, attentions, dtype, rope_theta))
    return keys[0].to(torch.float64).numpy(), values[0].to(torch.float64).numpy()
