#!/usr/bin/env python3
"""How often subevict's expected_attention, cap, leverage and compactor evict the token that
kvpress's own scorers evict, at the first full step, with and without the pre-RoPE tensors.

For each budget k, layer and KV head of an exported workload (one with q_pre/k_pre and the rotary
metadata, scripts/export_gguf.py or export_qkv.py), the case is the first full step: a prefill of
the first k + 1 tokens compressed to k, G_k = tokens 0..k. kvpress 0.5.5's press classes (run from
its wheel by scripts/kvpress_wheel.py, never copied) score the KV head from the true pre-RoPE
queries and keys, the cache's keys rotated by Llama's rotary embedding on the recorded base, and
the values; the evicted token is the one outside kvpress's top k. subevict runs the same-named
policy with budget k on the workload cut to k + 1 tokens, once with its pre-RoPE tensors ("pre")
and once without them ("post", the post-RoPE approximation), and reports its step-k eviction.

kvpress is fed one KV head at a time (its module's num_attention_heads is the group size), so the
layer-wide z-scores of compactor/leverage are per head, as subevict computes them. Settings:
expected_attention with epsilon 0 on both sides (kvpress's default), every other key at both
defaults; leverage's Gaussian sketch is drawn with torch.manual_seed(seed).

Usage:
    prerope_agreement.py --workload FILE
                         [--budgets 64,256,512,1024] [--layers all|0,3] [--seed 0] [-o OUT.json]

Needs the subevict Python package, torch, numpy and safetensors; kvpress's wheel is fetched once
with pip into .cache/kvpress/ (or read from $SUBEVICT_KVPRESS_CACHE; see scripts/kvpress_wheel.py).
Progress goes to stderr; the summary table to stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile

sys.dont_write_bytecode = True

import kvpress_wheel  # noqa: E402  (scripts/, beside this file)

SCORERS = ("expected_attention", "cap", "leverage", "compactor")
# subevict's spec of each scorer, matching kvpress's defaults where subevict's differ.
SUBEVICT_SPECS = {"expected_attention": "expected_attention:epsilon=0", "cap": "cap",
                  "leverage": "leverage", "compactor": "compactor"}
ROTARY_KEYS = ("rotary_bases", "rotary_dims", "rotary_pairing")


class AgreementError(Exception):
    """Bad input: one line, exit 2."""


def kvpress_evictions(kv_modules, tensors, layer, kv, group, k, base, seed):
    """{scorer: the token kvpress evicts} for (layer, KV head kv) at the first full step of budget k:
    the press's score() on a prefill of k + 1 tokens (the pre-RoPE queries and keys, rotated by
    Llama's rotary embedding on `base`), the token outside its top k (ScorerPress.compress)."""
    torch = kv_modules.torch
    n = k + 1
    q_pre = tensors[f"layers.{layer}.q_pre"][kv * group:(kv + 1) * group, :n]
    k_pre = tensors[f"layers.{layer}.k_pre"][kv:kv + 1, :n]
    values = tensors[f"layers.{layer}.v"][kv:kv + 1, :n]
    ratio = 1.0 / n
    made = {"expected_attention": lambda: kv_modules.expected_attention_press.ExpectedAttentionPress(
                compression_ratio=ratio, epsilon=0.0),
            "cap": lambda: kv_modules.cap_press.CapPress(compression_ratio=ratio),
            "leverage": lambda: kv_modules.leverage_press.LeverageScorePress(compression_ratio=ratio),
            "compactor": lambda: kv_modules.compactor_press.CompactorPress(compression_ratio=ratio)}
    evicted = {}
    for scorer in SCORERS:
        torch.manual_seed(seed)
        scores = kvpress_wheel.score(made[scorer](), q_pre, k_pre, values, rope_theta=base)[0]
        kept = set(torch.from_numpy(scores).topk(k).indices.tolist())
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


def measure(workload, budgets, layers=None, seed=0, log=None):
    """{"cases": [...], "agreement": {variant: {scorer: fraction}}} over every (budget, layer, KV head)."""
    from safetensors import safe_open
    from safetensors.numpy import load_file

    log = log or (lambda message: None)
    try:
        kv_modules = kvpress_wheel.load()
    except kvpress_wheel.Unavailable as e:
        raise AgreementError(f"kvpress {kvpress_wheel.VERSION}: {e}") from None
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
                    theirs = kvpress_evictions(kv_modules, tensors, layer, kv, group, k, bases[layer], seed)
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
        result = measure(args.workload, budgets, layers, args.seed,
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
