#!/usr/bin/env python3
"""How often subevict's expected_attention, cap, leverage and compactor evict the token that
kvpress's own scorers evict, at the first full step, with and without the pre-RoPE tensors.

For each budget k, layer and KV head of an exported workload (one with q_pre/k_pre and the rotary
metadata, scripts/export_gguf.py or export_qkv.py), the case is the first full step: a prefill of
the first k + 1 tokens compressed to k, G_k = tokens 0..k. kvpress 0.5.5's press classes (run from
its wheel, never copied) score the KV head from the true pre-RoPE queries and keys, the cache's
post-RoPE keys and values, and Hugging Face's LlamaRotaryEmbedding on the recorded base; the
evicted token is the one outside kvpress's top k. subevict runs the same-named policy with budget
k on the workload cut to k + 1 tokens, once with its pre-RoPE tensors ("pre") and once without
them ("post", the post-RoPE approximation), and reports its step-k eviction.

kvpress is fed one KV head at a time (its module's num_attention_heads is the group size), so the
layer-wide z-scores of compactor/leverage are per head, as subevict computes them. Settings:
expected_attention with epsilon 0 on both sides (kvpress's default), every other key at both
defaults; leverage's Gaussian sketch is drawn with torch.manual_seed(seed).

Usage:
    prerope_agreement.py --workload FILE --wheel kvpress-0.5.5-py3-none-any.whl
                         [--budgets 64,256,512,1024] [--layers all|0,3] [--seed 0] [-o OUT.json]

Needs the subevict Python package, torch, numpy, safetensors and transformers (for the rotary
module and repeat_kv; the model classes kvpress imports but these scorers do not use are stubbed).
Progress goes to stderr; the summary table to stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import types

sys.dont_write_bytecode = True

SCORERS = ("expected_attention", "cap", "leverage", "compactor")
# subevict's spec of each scorer, matching kvpress's defaults where subevict's differ.
SUBEVICT_SPECS = {"expected_attention": "expected_attention:epsilon=0", "cap": "cap",
                  "leverage": "leverage", "compactor": "compactor"}
ROTARY_KEYS = ("rotary_bases", "rotary_dims", "rotary_pairing")


class AgreementError(Exception):
    """Bad input: one line, exit 2."""


def _stub_module(name, **attributes):
    module = sys.modules.get(name) or types.ModuleType(name)
    for key, value in attributes.items():
        if not hasattr(module, key):
            setattr(module, key, value)
    sys.modules[name] = module
    return module


def load_kvpress(wheel):
    """kvpress's press classes from its wheel (a zip on sys.path, its package __init__ files not
    run): {"expected_attention": ExpectedAttentionPress, "cap": CapPress, "leverage":
    LeverageScorePress, "compactor": CompactorPress}. Model classes missing from the installed
    transformers (Gemma3, Qwen3), which kvpress only names in isinstance checks and hooks, are
    stubbed with classes no module is an instance of."""
    import importlib

    import transformers

    if not os.path.isfile(wheel):
        raise AgreementError(f"--wheel {wheel}: no such file (pip download kvpress==0.5.5 --no-deps)")
    for name in ("Gemma3ForConditionalGeneration", "Qwen3ForCausalLM", "QuantizedCache", "Cache"):
        try:
            getattr(transformers, name)
        except (AttributeError, ImportError):
            setattr(transformers, name, type(name, (), {}))
    for family, cls in (("gemma3", "Gemma3Attention"), ("qwen3", "Qwen3Attention"),
                        ("phi3", "Phi3Attention")):
        name = f"transformers.models.{family}.modeling_{family}"
        try:
            importlib.import_module(name)
        except ImportError:
            _stub_module(name, **{cls: type(cls, (), {})})
    root = os.path.join(wheel, "kvpress")
    _stub_module("kvpress", __path__=[root])
    _stub_module("kvpress.presses", __path__=[os.path.join(root, "presses")])
    if wheel not in sys.path:
        sys.path.insert(0, wheel)
    loaded = {}
    for scorer, (module, cls) in {"expected_attention": ("expected_attention_press", "ExpectedAttentionPress"),
                                  "cap": ("cap_press", "CapPress"),
                                  "leverage": ("leverage_press", "LeverageScorePress"),
                                  "compactor": ("compactor_press", "CompactorPress")}.items():
        loaded[scorer] = getattr(importlib.import_module(f"kvpress.presses.{module}"), cls)
    return loaded


class HeadModule:
    """What kvpress's scorers read of an attention module, for one KV head and its g query heads:
    head_dim, config.num_attention_heads, q_proj/k_proj (here slices of a `hidden` that holds the
    pre-RoPE queries then keys, so get_prerope_query/key_states return them), rotary_emb."""

    def __init__(self, group, head_dim, rotary_emb):
        self.head_dim = head_dim
        self.config = types.SimpleNamespace(num_attention_heads=group)
        self.rotary_emb = rotary_emb
        width = group * head_dim
        self.q_proj = lambda hidden: hidden[..., :width]
        self.k_proj = lambda hidden: hidden[..., width:]


def rotary_embedding(base, head_dim):
    """transformers' LlamaRotaryEmbedding for RoPE base `base` over head_dim dims (plain RoPE)."""
    from transformers import LlamaConfig
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

    config = LlamaConfig(hidden_size=head_dim, num_attention_heads=1, head_dim=head_dim,
                         rope_theta=base, max_position_embeddings=1 << 16)
    return LlamaRotaryEmbedding(config=config)


def kvpress_evictions(presses, tensors, layer, kv, group, k, base, seed):
    """{scorer: the token kvpress evicts} for (layer, KV head kv) at the first full step of budget k."""
    import torch

    n = k + 1
    q_pre = torch.from_numpy(tensors[f"layers.{layer}.q_pre"][kv * group:(kv + 1) * group, :n])
    k_pre = torch.from_numpy(tensors[f"layers.{layer}.k_pre"][kv:kv + 1, :n])
    keys = torch.from_numpy(tensors[f"layers.{layer}.k"][kv:kv + 1, :n]).unsqueeze(0)
    values = torch.from_numpy(tensors[f"layers.{layer}.v"][kv:kv + 1, :n]).unsqueeze(0)
    d = keys.shape[-1]
    hidden = torch.cat([q_pre.transpose(0, 1).reshape(n, -1), k_pre.transpose(0, 1).reshape(n, -1)],
                       dim=-1).unsqueeze(0)
    rotary = rotary_embedding(base, d)
    module = HeadModule(group, d, rotary)
    cos, sin = rotary(keys, torch.arange(n).unsqueeze(0))
    kwargs = {"position_embeddings": (cos, sin)}
    ratio = 1.0 / n
    made = {"expected_attention": lambda: presses["expected_attention"](compression_ratio=ratio, epsilon=0.0),
            "cap": lambda: presses["cap"](compression_ratio=ratio),
            "leverage": lambda: presses["leverage"](compression_ratio=ratio),
            "compactor": lambda: presses["compactor"](compression_ratio=ratio)}
    evicted = {}
    with torch.no_grad():
        for scorer in presses:
            torch.manual_seed(seed)
            scores = made[scorer]().score(module, hidden, keys, values, None, kwargs)[0, 0]
            kept = set(scores.topk(k).indices.tolist())  # ScorerPress.compress keeps the top k
            evicted[scorer] = next(t for t in range(n) if t not in kept)
    return evicted


def write_prefix(tensors, metadata, n, path, pre):
    """The first n tokens of the export as a workload file, with or without its pre-RoPE tensors."""
    from safetensors.numpy import save_file

    parts = ("q", "k", "v", "q_pre", "k_pre") if pre else ("q", "k", "v")
    cut = {name: x[:, :n].copy() for name, x in tensors.items() if name.rsplit(".", 1)[1] in parts}
    kept = {key: value for key, value in metadata.items() if pre or key not in ROTARY_KEYS}
    save_file(cut, path, metadata=kept)


def subevict_evictions(path, layers, k, specs):
    """{(layer, kv): {scorer: the token subevict evicts at step k}} on the workload at `path`."""
    import subevict

    workload = subevict.read_workload(path)
    labels = dict(zip(SCORERS, specs))
    runs = subevict.simulate(workload, ",".join(specs), budget=[k], layers=layers, optimum="none")
    return {(run["layer"], run["kv_head"]): {scorer: int(run["policies"][labels[scorer]]["evicted"][k])
                                             for scorer in SCORERS} for run in runs}


def measure(workload, wheel, budgets, layers=None, seed=0, log=None):
    """{"cases": [...], "agreement": {variant: {scorer: fraction}}} over every (budget, layer, KV head)."""
    from safetensors import safe_open
    from safetensors.numpy import load_file

    log = log or (lambda message: None)
    presses = load_kvpress(wheel)
    tensors = load_file(workload)
    with safe_open(workload, framework="np") as stream:
        metadata = stream.metadata() or {}
    if "layers.0.q_pre" not in tensors or any(key not in metadata for key in ROTARY_KEYS):
        raise AgreementError(f"{workload}: no pre-RoPE tensors and rotary metadata (export it again "
                             "with scripts/export_gguf.py or scripts/export_qkv.py)")
    count = sum(1 for name in tensors if name.endswith(".q"))
    layers = list(range(count)) if layers is None else layers
    bases = [float(b) for b in metadata["rotary_bases"].split(",")]
    q_heads, tokens, _ = tensors["layers.0.q"].shape
    kv_heads = tensors["layers.0.k"].shape[0]
    group = q_heads // kv_heads
    cases = []
    with tempfile.TemporaryDirectory(prefix="prerope_agreement.") as tmp:
        for k in budgets:
            if not 8 + 4 < k < tokens:
                raise AgreementError(f"budget {k}: expected 12 < k < {tokens} (the export's tokens)")
            ours = {}
            for variant, pre in (("post", False), ("pre", True)):
                path = os.path.join(tmp, f"{variant}-{k}.safetensors")
                write_prefix(tensors, metadata, k + 1, path, pre)
                ours[variant] = subevict_evictions(path, layers, k, [SUBEVICT_SPECS[s] for s in SCORERS])
            for layer in layers:
                for kv in range(kv_heads):
                    theirs = kvpress_evictions(presses, tensors, layer, kv, group, k, bases[layer], seed)
                    cases.append({"budget": k, "layer": layer, "kv_head": kv, "kvpress": theirs,
                                  "post": ours["post"][(layer, kv)], "pre": ours["pre"][(layer, kv)]})
            log(f"budget {k}: {len(layers) * kv_heads} cases")
    agreement = {variant: {scorer: sum(c[variant][scorer] == c["kvpress"][scorer] for c in cases) / len(cases)
                           for scorer in SCORERS} for variant in ("post", "pre")}
    return {"workload": os.path.basename(workload), "budgets": budgets, "layers": layers,
            "cases": cases, "agreement": agreement}


def build_parser():
    parser = argparse.ArgumentParser(prog="prerope_agreement.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--workload", required=True, help="an export with q_pre/k_pre (.safetensors)")
    parser.add_argument("--wheel", required=True, help="kvpress-0.5.5-py3-none-any.whl")
    parser.add_argument("--budgets", default="64,256,512,1024", help="comma-separated budgets k")
    parser.add_argument("--layers", default="all", help="'all' or comma-separated layers")
    parser.add_argument("--seed", type=int, default=0, help="torch seed of leverage's sketch")
    parser.add_argument("-o", "--output", help="also write every case as JSON")
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    try:
        try:
            budgets = [int(b) for b in args.budgets.split(",")]
            layers = None if args.layers == "all" else [int(x) for x in args.layers.split(",")]
        except ValueError:
            raise AgreementError(f"--budgets {args.budgets!r} / --layers {args.layers!r}: expected "
                                 "comma-separated integers") from None
        result = measure(args.workload, args.wheel, budgets, layers, args.seed,
                         log=lambda m: print(f"prerope_agreement: {m}", file=sys.stderr, flush=True))
    except AgreementError as error:
        print(f"prerope_agreement: error: {error}", file=sys.stderr)
        return 2
    cases = len(result["cases"])
    print(f"agreement with kvpress over {cases} cases (budgets {args.budgets}):")
    print(f"{'scorer':20} {'post-RoPE':>10} {'pre-RoPE':>10}")
    for scorer in SCORERS:
        post, pre = (result["agreement"][v][scorer] for v in ("post", "pre"))
        print(f"{scorer:20} {100 * post:9.1f}% {100 * pre:9.1f}%")
    if args.output:
        with open(args.output, "w", encoding="utf-8") as stream:
            json.dump(result, stream, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
