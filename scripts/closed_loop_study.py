#!/usr/bin/env python3
"""The closed-loop study of docs/closed_loop.md, in one command:

    .venv/bin/python scripts/closed_loop_study.py [--model smollm2|gemma3] [--tokens 2048] [--out DIR]

1. SmolLM2-135M or Gemma 3 270M (scripts/setup_model; Gemma 3 evicts in its global layers, its
   sliding-window layers keep their 512 keys) on the first N tokens of Debian's GPL-3 text and of a held-out
   text (GFDL-1.3): policies h2o, tova, snapkv, streamingllm, l2norm, local, random and the
   references opt and topk at budgets 5%, 10%, 20%, 50%; one report directory per text
   (scripts/closed_loop.py's results.json, report.md, figures).
2. Which layers' losses matter: eviction in one layer at a time (h2o and opt at 10% on GPL-3), the
   Delta log-perplexity of each layer alone, in OUT/layers.json and OUT/layers.md.
3. OUT/study.md: the tables docs/closed_loop.md quotes.
Progress on stderr. Needs the project's .venv with the subevict package (scripts/python_package).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

sys.dont_write_bytecode = True
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TEXTS = {"gpl3": "/usr/share/common-licenses/GPL-3", "gfdl": "/usr/share/common-licenses/GFDL-1.3"}
POLICIES = "h2o,tova,snapkv,streamingllm,l2norm,local,random,opt,topk"
BUDGETS = "0.05,0.1,0.2,0.5"
LAYER_POLICIES = "h2o,opt"
LAYER_BUDGET = 0.1


def log(message):
    print(f"closed_loop_study: {message}", file=sys.stderr, flush=True)


def gguf_path(model):
    result = subprocess.run([os.path.join(ROOT, "scripts", "setup_model"), model], check=True,
                            stdout=subprocess.PIPE, text=True)
    return result.stdout.strip().splitlines()[-1]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", choices=("smollm2", "gemma3"), default="smollm2")
    parser.add_argument("--tokens", type=int, default=2048)
    parser.add_argument("--out", help="default build/closed_loop_study (smollm2), "
                                      "build/closed_loop_study_gemma3 (gemma3)")
    parser.add_argument("--texts", default=",".join(TEXTS),
                        help=f"which texts to run (comma list of {', '.join(TEXTS)}); the summary "
                             "reads every text whose report exists")
    parser.add_argument("--workers", type=int, default=2,
                        help="processes per part (scripts/closed_loop.py --workers)")
    parser.add_argument("--skip-layers", action="store_true", help="no one-layer-at-a-time part")
    args = parser.parse_args()
    for name in args.texts.split(","):
        if name not in TEXTS:
            parser.error(f"--texts: unknown text {name!r} (expected {', '.join(TEXTS)})")
    if args.out is None:
        suffix = "" if args.model == "smollm2" else "_" + args.model
        args.out = os.path.join(ROOT, "build", "closed_loop_study" + suffix)
    os.makedirs(args.out, exist_ok=True)
    gguf = gguf_path(args.model)
    seconds = {}
    study_start = time.monotonic()
    for name in args.texts.split(","):
        text = TEXTS[name]
        out = os.path.join(args.out, name)
        if os.path.exists(os.path.join(out, "results.json")):
            log(f"{out} is complete; reused")
            continue
        log(f"{name}: {POLICIES} at {BUDGETS} on {args.tokens} tokens")
        start = time.monotonic()
        subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "closed_loop.py"), "--gguf",
                        gguf, "--text-file", text, "--tokens", str(args.tokens), "--policies",
                        POLICIES, "--budgets", BUDGETS, "--workers", str(args.workers), "-o", out],
                       check=True)
        seconds[name] = time.monotonic() - start
    if not args.skip_layers:
        layer_study(gguf, args, seconds)
    if seconds:
        seconds["study"] = time.monotonic() - study_start
    write_summary(args.out, seconds)


def layer_study(gguf, args, seconds):
    """Delta log-perplexity with eviction in one layer alone, per layer (GPL-3)."""
    path = os.path.join(args.out, "layers.json")
    if os.path.exists(path):
        log(f"{path} is complete; reused")
        return
    from subevict import evicted_forward, models

    model = models.load(gguf)
    with open(TEXTS["gpl3"], encoding="utf-8") as stream:
        ids = models.tokenize(model, stream.read(), args.tokens)[0]
    start = time.monotonic()
    result = evicted_forward.one_layer_at_a_time(model, ids, LAYER_POLICIES, LAYER_BUDGET,
                                                 workers=args.workers)
    full_nll = result["full"]["nll"]
    rows = [{"layer": run.layers[0].layer, "policy": run.label,
             "delta_log_perplexity": run.metrics["nll"] - full_nll,
             "mean_kl": run.metrics["mean_kl"], "ratio_to_opt": run.layers[0].ratio_to_opt()}
            for run in result["runs"]]
    seconds["layers"] = time.monotonic() - start
    tmp = path + ".tmp"
    with open(tmp, "w") as stream:
        json.dump({"policies": LAYER_POLICIES, "budget": LAYER_BUDGET, "tokens": args.tokens,
                   "rows": rows}, stream, indent=1)
    os.replace(tmp, path)


def write_summary(out, seconds):
    lines = ["# Closed-loop study tables", ""]
    for name in TEXTS:
        if not os.path.exists(os.path.join(out, name, "results.json")):
            lines += [f"## {name}: not run", ""]
            continue
        with open(os.path.join(out, name, "results.json")) as stream:
            data = json.load(stream)
        lines += [f"## {name}: {data['settings']['model']}, {data['settings']['tokens']} tokens, "
                  f"full perplexity {data['full']['perplexity']:.4f}", ""]
        runs = data["runs"]
        budgets = sorted({r["budget_size"] for r in runs})
        labels = list(dict.fromkeys(r["policy"] for r in runs))
        cell = {(r["policy"], r["budget_size"]): r for r in runs}
        for metric, title in (("perplexity", "perplexity"),
                              ("mean_ratio_to_opt", "mean retained mass / OPT over compressed layers"),
                              ("mean_kl", "mean KL(full || evicted)"),
                              ("top1_agreement", "top-1 agreement with the full cache")):
            lines += [f"{title}:", "", "| cache | " + " | ".join(f"k = {k}" for k in budgets) + " |",
                      "|---|" + "---|" * len(budgets)]
            for label in labels:
                values = [cell[(label, k)][metric] for k in budgets]
                lines.append(f"| {label} | " + " | ".join(
                    "n/a" if v is None else f"{v:.4f}" for v in values) + " |")
            lines.append("")
        a = data["analysis"]
        rho = a["spearman_mass_vs_delta_log_perplexity"]
        lines.append(f"Spearman rho (mass / OPT vs Δ log-ppl), all points: "
                     f"{rho['rho']:.3f} (p = {rho['p_value']:.2g}, {rho['points']} points)"
                     if rho else "Spearman: n/a")
        for k, b in a["per_budget"].items():
            r = b["spearman_mass_vs_delta_log_perplexity"]
            lines.append(f"- k = {k}: rho {r['rho']:.3f} ({r['points']} points); best policy "
                         f"{b['best_policy']} ppl {b['best_policy_perplexity']:.4f}, opt "
                         f"{b['opt_perplexity']:.4f}, best − opt log-ppl "
                         f"{b['best_policy_minus_opt_log_perplexity']:.4f}, opt beats every "
                         f"policy: {b['opt_beats_every_policy_in_perplexity']}" if r else
                         f"- k = {k}: n/a")
        lines += ["", f"Mass order: {a['mass_order']['outcome']} "
                  f"({a['mass_order']['violations']} violations)", ""]
        if name in seconds:
            lines += [f"Wall time: {seconds[name]:.0f} s", ""]
    path = os.path.join(out, "layers.json")
    if os.path.exists(path):
        with open(path) as stream:
            data = json.load(stream)
        lines += [f"## One layer at a time ({data['policies']} at {data['budget']:.0%}, GPL-3)", "",
                  "| layer | " + " | ".join(f"{p} Δ log-ppl | {p} mass / OPT"
                                          for p in data["policies"].split(",")) + " |",
                  "|---|" + "---|---|" * len(data["policies"].split(","))]
        by_layer = {}
        for row in data["rows"]:
            by_layer.setdefault(row["layer"], {})[row["policy"]] = row
        for layer, row in sorted(by_layer.items()):
            lines.append(f"| {layer} | " + " | ".join(
                f"{row[p]['delta_log_perplexity']:.4f} | {row[p]['ratio_to_opt']:.4f}"
                for p in data["policies"].split(",")) + " |")
        lines.append("")
        if "layers" in seconds:
            lines += [f"Wall time: {seconds['layers']:.0f} s", ""]
    if "study" in seconds:
        lines += [f"Whole study, this invocation: {seconds['study']:.0f} s "
                  f"({seconds['study'] / 60:.1f} min) on {os.cpu_count()} cores", ""]
    with open(os.path.join(out, "study.md"), "w") as stream:
        stream.write("\n".join(lines))
    log(f"wrote {os.path.join(out, 'study.md')}")


if __name__ == "__main__":
    main()
