#!/usr/bin/env python3
"""The learned-policy study of docs/learned_policy.md, in one command:

    .venv/bin/python scripts/learned_policy_study.py [--out build/learned_policy_study] [--parts ...]

Split (fixed before any result was seen): training and every choice of the model on SmolLM2-135M's
export of the first 2048 tokens of Debian's GPL-3 text only; evaluation on GFDL-1.3, Apache-2.0
and MPL-2.0 (never used in training or selection), and on Gemma 3 270M's global layers. The main
model is fixed in advance: one shared net (12 features, one relu layer of 16 units: relu for the
policy's per-step cost, bench/results/learned_policy.md; tanh is a variant), 32 steps per
(layer, KV head, budget) at 5%, 10%, 20% and 50%, seed 0.

Parts (each cached in OUT; --parts picks them, default all):
  train      traces of the optimum on GPL-3 (every layer, KV head and budget) and the models: the
             main one, a tanh one, a linear one, one net per layer, one fit to every member's remaining
             lifetime under the optimum, one fit to the set of members the optimum evicts within 32
             steps (the leaving target), and four ablations (a feature group left out)
  openloop   retained mass / OPT of every model and of h2o, tova, snapkv, streamingllm on every third
             layer of the three held-out exports (the main model on all three, the others on GFDL-1.3), and each model's
             top-1 agreement with the optimum on GFDL-1.3's optimum traces
  closedloop perplexity in the model's forward with the main model, h2o, tova, snapkv, streamingllm
             and opt on GFDL-1.3 and Apache-2.0 at 5% and 10%, then both at 20% and 50%, MPL-2.0 at
             every budget, and the
             lifetime and leaving variants on GFDL-1.3 at 5% and 10%; the fraction of the gap
             between the best built-in policy and opt that the learned policy closes, with a
             bootstrap interval over tokens
  closedqkv  the main model's recipe trained on the closed loop's rows of GPL-3 (per budget the Q, K, V
             the closed loop's optimum solved each layer on: learn_policy.py closed-loop-export), in
             the closed loop on GFDL-1.3 at 5% and 10%
  gemma      Gemma 3's global layers: the SmolLM2 model (transfer) and a model trained on Gemma's
             GPL-3 export, open loop on Gemma's GFDL-1.3 export
  gemma_closedloop
             Gemma 3's closed loop on GFDL-1.3 (its global layers evicting) at every budget: Gemma's
             own model beside the built-ins and opt, and the SmolLM2 model (transfer)
  tasks      the main model in the task loop (docs/tasks.md): niah_single at 1024 tokens (depths 0.1,
             0.5, 0.9, one seed) beside h2o, tova, snapkv, streamingllm, keydiff, opt and opt-answer,
             streaming and prefill, at every budget (trains the main model alone if it is missing)
  gemma_tasks
             the same with Gemma's own model on Gemma 3 270M (global layers evicting), niah_single at
             2048 tokens, depth 0.5
Then OUT/study.md. Progress on stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

sys.dont_write_bytecode = True
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import learn_policy  # noqa: E402

import subevict  # noqa: E402

LICENSES = "/usr/share/common-licenses"
TRAIN_TEXT = "GPL-3"
HELD_OUT = ("GFDL-1.3", "Apache-2.0", "MPL-2.0")
BUDGETS = [0.05, 0.1, 0.2, 0.5]
BUILTINS = ["h2o", "tova", "snapkv", "streamingllm"]
TOKENS = 2048
STEPS = 32
ABLATIONS = {
    "no_attention": ("accumulated_attention", "current_attention", "window_attention", "attention_trend"),
    "no_position": ("age", "position", "sink"),
    "no_key_value": ("key_norm", "value_norm", "key_mean_cosine"),
    "no_context": ("layer", "kv_head"),
}
BOOTSTRAP = 2000
# The variants also run in the closed loop: fit to remaining lifetimes, to the set of members the
# optimum evicts within 32 steps (docs/learned_policy.md, "Near-ties"), and trained on the closed
# loop's rows (part closedqkv).
CLOSED_LOOP_VARIANTS = ("mlp16_lifetime", "mlp16_leaving32", "mlp16_closedqkv")
TASK_LENGTH = 1024
TASK_SAMPLES = 1
GEMMA_TASK_LENGTH = 2048
TASK_POLICIES = ["h2o", "tova", "snapkv", "streamingllm", "keydiff", "opt", "opt-answer"]
OPEN_LOOP_LAYERS = list(range(0, 30, 3))  # every third layer of SmolLM2's 30 (all 3 KV heads each)


def log(message):
    print(f"learned_policy_study: {message}", file=sys.stderr, flush=True)


def gguf(model):
    out = subprocess.run([os.path.join(ROOT, "scripts", "setup_model"), model], check=True, stdout=subprocess.PIPE,
                         text=True)
    return out.stdout.strip().splitlines()[-1]


def export(model, text, out_dir):
    """The Q/K/V export of `model` on the first TOKENS tokens of a license text (cached)."""
    path = os.path.join(out_dir, "exports", f"{model}-{text}-{TOKENS}.safetensors")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "export_gguf.py"), "--gguf", gguf(model),
                    "--text-file", os.path.join(LICENSES, text), "--tokens", str(TOKENS), "--if-changed", "-o", path],
                   check=True, stdout=subprocess.DEVNULL)
    return path


def read_json(path):
    with open(path) as f:
        return json.load(f)


def global_layers(w):
    return [layer for layer, window in enumerate(w.windows) if window == 0]


def part_train(out, only=None):
    """Trains the models missing in OUT/models (`only`: those names alone)."""
    models = os.path.join(out, "models")
    os.makedirs(models, exist_ok=True)
    variants = {"mlp16": dict(hidden=16, per_layer=False, features=None, activation="relu"),
                "mlp16_tanh": dict(hidden=16, per_layer=False, features=None, activation="tanh"),
                "linear": dict(hidden=0, per_layer=False, features=None, activation="relu"),
                "per_layer_mlp16": dict(hidden=16, per_layer=True, features=None, activation="relu"),
                "mlp16_lifetime": dict(hidden=16, per_layer=False, features=None, activation="relu", target="lifetime"),
                "mlp16_leaving32": dict(hidden=16, per_layer=False, features=None, activation="relu", target="leaving",
                                        leaving_within=32)}
    for name, dropped in ABLATIONS.items():
        variants[name] = dict(hidden=16, per_layer=False, activation="relu",
                              features=[f for f in subevict.learned.FEATURES if f not in dropped])
    todo = {n: v for n, v in variants.items()
            if not os.path.exists(os.path.join(models, f"{n}.json")) and (only is None or n in only)}
    if not todo:
        return
    path = export("smollm2", TRAIN_TEXT, out)
    w = subevict.read_workload(path)
    layers = list(range(w.shape["layers"]))
    data = learn_policy.optimum_traces(w, layers, BUDGETS, STEPS)
    for name, v in todo.items():
        start = time.monotonic()
        provenance = {"workload": os.path.basename(path), "workload_sha256": learn_policy.file_sha256(path),
                      "budgets": BUDGETS, "steps_per_head": STEPS, "seed": 0, "variant": name, **v}
        model = learn_policy.train_on(data, layers, v["hidden"], v["per_layer"], v["features"], 0, provenance,
                                      v["activation"], v.get("target", "evicted"), v.get("leaving_within", 32))
        model["provenance"]["train_seconds"] = time.monotonic() - start
        subevict.learned.write_model(model, os.path.join(models, f"{name}.json"))
        log(f"model {name}: top-1 {model['provenance']['training_top1']:.3f} on "
            f"{model['provenance']['training_steps']} training steps")


def part_openloop(out):
    models = os.path.join(out, "models")
    result_path = os.path.join(out, "openloop.json")
    result = read_json(result_path) if os.path.exists(result_path) else {}
    names = sorted(f[:-5] for f in os.listdir(models) if f.endswith(".json") and not f.startswith("gemma"))
    for text in HELD_OUT:
        w = None
        for name in names if text == HELD_OUT[0] else ["mlp16"]:
            key = f"{text}/{name}"
            if key in result:
                continue
            w = w or subevict.read_workload(export("smollm2", text, out))
            log(f"open loop: {key}")
            table = learn_policy.evaluate(w, os.path.join(models, f"{name}.json"),
                                          BUILTINS if name == "mlp16" else [], BUDGETS, OPEN_LOOP_LAYERS)
            result[key] = table
            learn_policy.write_json(result, result_path)
    top1 = result.setdefault("top1/" + HELD_OUT[0], {})
    if any(name not in top1 for name in names):
        w = subevict.read_workload(export("smollm2", HELD_OUT[0], out))
        data = learn_policy.optimum_traces(w, OPEN_LOOP_LAYERS, BUDGETS, STEPS)
        for name in names:
            top1[name] = subevict.learned.top1(subevict.learned.read_model(os.path.join(models, f"{name}.json")),
                                               [d[3] for d in data], [d[0] for d in data])
        learn_policy.write_json(result, result_path)


def closed_loop_path(out, text, budgets, model="mlp16", family="smollm2"):
    """Where closed_loop_runs caches its runs: SmolLM2's runs of the main model in
    closedloop-TEXT-BUDGETS.json, another model's in closedloop-MODEL-TEXT-BUDGETS.json, another
    family's in closedloop-FAMILY-MODEL-TEXT-BUDGETS.json (BUDGETS: percents joined by -)."""
    tag = "" if model == "mlp16" and family == "smollm2" else f"{model}-"
    tag = tag if family == "smollm2" else f"{family}-{tag}"
    return os.path.join(out, f"closedloop-{tag}{text}-{'-'.join(fmt_budget(b)[:-1] for b in budgets)}.json")


def closed_loop_runs(out, text, budgets, model="mlp16", policies=BUILTINS + ["opt"], family="smollm2"):
    """The closed loop of `model` (and `policies`) on `text` at `budgets` (cached in
    closed_loop_path), on the model family `family` (its evicting layers: every global one)."""
    path = closed_loop_path(out, text, budgets, model, family)
    if not os.path.exists(path):
        learn_policy.main(["closed-loop", "--model", os.path.join(out, "models", f"{model}.json"), "--gguf",
                           gguf(family), "--text-file", os.path.join(LICENSES, text), "--tokens", str(TOKENS),
                           "--policies", ",".join(policies), "--budgets", ",".join(str(b) for b in budgets), "-o", path])
    return read_json(path)


def gap_closed(doc, rng):
    """Per budget: the best built-in policy by perplexity, and the fraction of its gap to opt in
    log-perplexity that the learned policy closes, (nll_best - nll_learned) / (nll_best - nll_opt),
    with a percentile bootstrap interval over tokens (the same resampled tokens for all three)."""
    rows = []
    by_budget = {}
    for run in doc["runs"]:
        name = "learned" if run["policy"].startswith("learned") else run["policy"]
        by_budget.setdefault(run["budget"], {})[name] = run
    for budget, runs in sorted(by_budget.items()):
        builtins = {n: r for n, r in runs.items() if n in BUILTINS}
        best = min(builtins, key=lambda n: builtins[n]["perplexity"])
        lp = {n: -np.asarray(runs[n]["token_logprob"]) for n in (best, "learned", "opt")}
        n = len(lp["opt"])
        point = (lp[best].mean() - lp["learned"].mean()) / (lp[best].mean() - lp["opt"].mean())
        draws = []
        for _ in range(BOOTSTRAP):
            idx = rng.integers(0, n, n)
            b, l, o = lp[best][idx].mean(), lp["learned"][idx].mean(), lp["opt"][idx].mean()
            draws.append((b - l) / (b - o) if b != o else np.nan)
        lo, hi = np.nanpercentile(draws, [2.5, 97.5])
        rows.append({"budget": budget, "best": best, "ppl_best": runs[best]["perplexity"],
                     "ppl_learned": runs["learned"]["perplexity"], "ppl_opt": runs["opt"]["perplexity"],
                     "gap_closed": float(point), "interval": [float(lo), float(hi)],
                     "ppl": {name: r["perplexity"] for name, r in runs.items()}})
    return rows


def part_closedloop(out):
    """The target budgets (5% and 10%) on two texts first, then their 20% and 50%, then MPL-2.0's
    budgets, then the variants."""
    for text in HELD_OUT[:2]:
        closed_loop_runs(out, text, BUDGETS[:2])
    closed_loop_runs(out, HELD_OUT[0], BUDGETS[2:])
    closed_loop_runs(out, HELD_OUT[1], BUDGETS[2:])
    closed_loop_runs(out, HELD_OUT[2], BUDGETS[:2])
    closed_loop_runs(out, HELD_OUT[2], BUDGETS[2:])
    for variant in CLOSED_LOOP_VARIANTS:
        if os.path.exists(os.path.join(out, "models", f"{variant}.json")):
            closed_loop_runs(out, HELD_OUT[0], BUDGETS[:2], variant, [])


def closed_loop_docs(out, text):
    """The closed-loop runs of one text, every budget file of the main model merged (runs of all
    budgets, one full)."""
    docs = [read_json(os.path.join(out, f)) for f in sorted(os.listdir(out))
            if f.startswith(f"closedloop-{text}-") and f.endswith(".json")]
    if not docs:
        return None
    merged = dict(docs[0])
    merged["runs"] = [run for d in docs for run in d["runs"]]
    return merged


def per_layer_losses(rows, doc):
    """Where the learned policy loses: per budget, the layers where its closed-loop mass / OPT
    trails the best built-in policy's most."""
    lines = ["| budget | layers where learned trails the best built-in in mass / OPT (learned - best) | "
             "layers where it leads |", "|---|---|---|"]
    for r in rows:
        ratios = {}
        for run in doc["runs"]:
            name = "learned" if run["policy"].startswith("learned") else run["policy"]
            if run["budget"] == r["budget"] and name in ("learned", r["best"]):
                ratios[name] = {x["layer"]: x["ratio_to_opt"] for x in run.get("layers", [])
                                if x["ratio_to_opt"] is not None}
        if len(ratios) < 2:
            continue
        delta = sorted((ratios["learned"][l] - ratios[r["best"]][l], l) for l in ratios["learned"] if l in ratios[r["best"]])
        worst = ", ".join(f"{l} ({d:+.3f})" for d, l in delta[:5] if d < 0) or "none"
        best = ", ".join(f"{l} ({d:+.3f})" for d, l in reversed(delta[-5:]) if d > 0) or "none"
        lines.append(f"| {fmt_budget(r['budget'])} | {worst} | {best} |")
    return lines + [""]


def part_closedqkv(out):
    """The main model's recipe trained on the closed loop's rows instead of the open-loop export:
    per budget the Q, K, V on which the closed loop's optimum solved each layer of GPL-3
    (learn_policy.py closed-loop-export), each budget's traces from its own run; then in the closed
    loop on GFDL-1.3 at 5% and 10% as the other variants."""
    exports = os.path.join(out, "closed_loop_exports")
    paths = [os.path.join(exports, learn_policy.export_name(b)) for b in BUDGETS]
    if not all(os.path.exists(p) for p in paths):
        if learn_policy.main(["closed-loop-export", "--gguf", gguf("smollm2"), "--text-file",
                              os.path.join(LICENSES, TRAIN_TEXT), "--tokens", str(TOKENS), "--budgets",
                              ",".join(str(b) for b in BUDGETS), "-o", exports]):
            raise RuntimeError("learn_policy.py closed-loop-export failed (above)")
    model = os.path.join(out, "models", "mlp16_closedqkv.json")
    if not os.path.exists(model):
        os.makedirs(os.path.dirname(model), exist_ok=True)
        if learn_policy.main(["train", *[a for p in paths for a in ("--workload", p)], "--budgets",
                              ",".join(str(b) for b in BUDGETS), "--steps-per-head", str(STEPS), "--hidden", "16",
                              "--seed", "0", "-o", model]):
            raise RuntimeError("learn_policy.py train failed (above)")
    closed_loop_runs(out, HELD_OUT[0], BUDGETS[:2], "mlp16_closedqkv", [])


def part_gemma(out):
    path = os.path.join(out, "gemma.json")
    if os.path.exists(path):
        return
    models = os.path.join(out, "models")
    own = os.path.join(models, "gemma_mlp16.json")
    train_w = subevict.read_workload(export("gemma3", TRAIN_TEXT, out))
    layers = global_layers(train_w)
    if not os.path.exists(own):
        data = learn_policy.optimum_traces(train_w, layers, BUDGETS, 4 * STEPS)
        model = learn_policy.train_on(data, layers, 16, False, None, 0, {"workload": f"gemma3-{TRAIN_TEXT}",
                                                                          "layers": layers, "variant": "gemma_mlp16"})
        subevict.learned.write_model(model, own)
    w = subevict.read_workload(export("gemma3", HELD_OUT[0], out))
    result = {"layers": layers,
              "transfer": learn_policy.evaluate(w, os.path.join(models, "mlp16.json"), BUILTINS, BUDGETS, layers),
              "own": learn_policy.evaluate(w, own, [], BUDGETS, layers)}
    learn_policy.write_json(result, path)


def part_gemma_closedloop(out):
    """Gemma 3's closed loop on GFDL-1.3 (its global layers evicting): Gemma's own model beside the
    built-ins and opt, then the SmolLM2 model alone (transfer), at every budget."""
    if not os.path.exists(os.path.join(out, "models", "gemma_mlp16.json")):
        part_gemma(out)
    closed_loop_runs(out, HELD_OUT[0], BUDGETS, "gemma_mlp16", family="gemma3")
    closed_loop_runs(out, HELD_OUT[0], BUDGETS, "mlp16", [], family="gemma3")


def task_runs(out, family, model_name, length, depths, subdir):
    """The learned model `model_name` in the task loop (docs/tasks.md): niah_single on `family` at
    `length` tokens, `depths`, TASK_SAMPLES seeds each, beside the built-ins and the references, in
    the streaming and prefill protocols at every budget, in OUT/subdir (cached)."""
    if os.path.exists(os.path.join(out, subdir, "results.json")):
        return
    policies = [f"learned:model={os.path.join(out, 'models', model_name + '.json')}"] + TASK_POLICIES
    subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "closed_loop_tasks.py"), "--gguf", gguf(family),
                    "--tasks", "niah_single", "--lengths", str(length), "--depths", ",".join(str(d) for d in depths),
                    "--samples", str(TASK_SAMPLES), "--protocol", "streaming,prefill", "--policies", ",".join(policies),
                    "--budgets", ",".join(str(b) for b in BUDGETS), "-o", os.path.join(out, subdir)], check=True)


def part_tasks(out):
    """The main model on SmolLM2-135M-Instruct at TASK_LENGTH tokens, depths 0.1, 0.5 and 0.9."""
    if not os.path.exists(os.path.join(out, "models", "mlp16.json")):
        part_train(out, only={"mlp16"})
    task_runs(out, "smollm2", "mlp16", TASK_LENGTH, (0.1, 0.5, 0.9), "tasks")


def part_gemma_tasks(out):
    """Gemma's own model on Gemma 3 270M (its global layers evicting) at GEMMA_TASK_LENGTH tokens,
    depth 0.5."""
    if not os.path.exists(os.path.join(out, "models", "gemma_mlp16.json")):
        part_gemma(out)
    task_runs(out, "gemma3", "gemma_mlp16", GEMMA_TASK_LENGTH, (0.5,), "gemma_tasks")


def tasks_markdown(out, subdir, title):
    """Accuracy and mean answer log-probability per cache and budget, per protocol, from a tasks part."""
    path = os.path.join(out, subdir, "results.json")
    if not os.path.exists(path):
        return []
    doc = read_json(path)
    lines = []
    answered = {(r["sample"], r["protocol"]) for r in doc["runs"] if r["cache"] == "full" and r["correct"]}
    for protocol in ("streaming", "prefill"):
        cells = {}
        for run in doc["runs"]:  # the samples the full cache answers
            if run["protocol"] != protocol or run["cache"] == "full" or (run["sample"], protocol) not in answered:
                continue
            name = "learned" if run["cache"].startswith("learned") else run["cache"]
            cell = cells.setdefault(name, {}).setdefault(float(run["budget"]), [])
            cell.append((int(run["correct"]), run["answer_logprob"]))
        if not cells:
            continue
        lines += [f"## Tasks, {protocol}: {title}, accuracy (mean answer log-probability)",
                  "", "| cache | " + " | ".join(fmt_budget(b) for b in BUDGETS) + " |", "|---" * (len(BUDGETS) + 1) + "|"]
        for name, per in cells.items():
            row = []
            for b in BUDGETS:
                xs = per.get(b, [])
                row.append(f"{sum(x for x, _ in xs)}/{len(xs)} ({np.mean([y for _, y in xs]):.2f})" if xs else "-")
            lines.append(f"| {name} | " + " | ".join(row) + " |")
        lines.append("")
    return lines


def closed_loop_table(title, doc, rows):
    """Perplexity of every cache per budget, the best built-in and the gap the learned policy closes."""
    names = list(rows[0]["ppl"])
    lines = [f"{title} ({doc['tokens']} tokens; full cache {doc['full']['perplexity']:.3f})", "",
             "| budget | " + " | ".join(names) + " | best built-in | gap closed [95% interval] |",
             "|---" * (len(names) + 3) + "|"]
    for r in rows:
        lines.append(f"| {fmt_budget(r['budget'])} | " + " | ".join(f"{r['ppl'][n]:.3f}" for n in names) +
                     f" | {r['best']} | {r['gap_closed']:.3f} [{r['interval'][0]:.3f}, {r['interval'][1]:.3f}] |")
    return lines + [""]


def in_its_place(title, name, doc, other_runs, rng):
    """The gap closed by another model's learned runs (other_runs, at its budgets) in place of the
    learned runs of doc, the references and built-ins of doc kept."""
    budgets = {r["budget"] for r in other_runs["runs"]}
    other = dict(doc, runs=[r for r in doc["runs"] if not r["policy"].startswith("learned") and r["budget"] in budgets] +
                 other_runs["runs"])
    lines = [title, "", f"| budget | learned ({name}) | best built-in | gap closed [95% interval] |", "|---|---|---|---|"]
    for r in gap_closed(other, rng):
        lines.append(f"| {fmt_budget(r['budget'])} | {r['ppl_learned']:.3f} | {r['best']} {r['ppl_best']:.3f} | "
                     f"{r['gap_closed']:.3f} [{r['interval'][0]:.3f}, {r['interval'][1]:.3f}] |")
    return lines + [""]


def fmt_budget(b):
    return f"{round(100 * float(b))}%"


def markdown(out):
    lines = ["# Learned policy study", ""]
    openloop = read_json(os.path.join(out, "openloop.json")) if os.path.exists(os.path.join(out, "openloop.json")) else {}
    for text in HELD_OUT:
        table = openloop.get(f"{text}/mlp16")
        if not table:
            continue
        lines += [f"## Open loop, {text}: mean retained mass / OPT over layers {OPEN_LOOP_LAYERS[0]}, "
                  f"{OPEN_LOOP_LAYERS[1]}, ..., {OPEN_LOOP_LAYERS[-1]} x 3 KV heads", "",
                  "| policy | " + " | ".join(fmt_budget(b) for b in BUDGETS) + " |",
                  "|---" * (len(BUDGETS) + 1) + "|"]
        for name, per in table.items():
            lines.append(f"| {name} | " + " | ".join(f"{per[str(b)]:.4f}" for b in BUDGETS) + " |")
        lines.append("")
    variants = [k.split("/")[1] for k in openloop if k.startswith(HELD_OUT[0] + "/")]
    if variants:
        top1 = openloop.get("top1/" + HELD_OUT[0], {})
        lines += [f"## Variants and ablations, {HELD_OUT[0]}: learned mass / OPT; top-1 agreement with the optimum",
                  "", "| model | " + " | ".join(fmt_budget(b) for b in BUDGETS) + " | top-1 (held out) | top-1 (training) |",
                  "|---" * (len(BUDGETS) + 3) + "|"]
        for name in variants:
            per = openloop[f"{HELD_OUT[0]}/{name}"]["learned"]
            model = subevict.learned.read_model(os.path.join(out, "models", f"{name}.json"))
            lines.append(f"| {name} | " + " | ".join(f"{per[str(b)]:.4f}" for b in BUDGETS) +
                         f" | {top1.get(name, float('nan')):.3f} | {model['provenance']['training_top1']:.3f} |")
        lines.append("")
    rng = np.random.default_rng(0)
    for text in HELD_OUT:
        doc = closed_loop_docs(out, text)
        if doc is None:
            continue
        rows = gap_closed(doc, rng)
        lines += closed_loop_table(f"## Closed loop, {text}", doc, rows)
        lines += per_layer_losses(rows, doc)
        for variant in CLOSED_LOOP_VARIANTS:
            variant_path = closed_loop_path(out, text, BUDGETS[:2], variant)
            if os.path.exists(variant_path):
                lines += in_its_place(f"The model {variant} in its place, {text}:", variant, doc,
                                      read_json(variant_path), rng)
    gemma_path = os.path.join(out, "gemma.json")
    if os.path.exists(gemma_path):
        g = read_json(gemma_path)
        lines += [f"## Gemma 3 270M, global layers {g['layers']}, GFDL-1.3: mass / OPT", "",
                  "| policy | " + " | ".join(fmt_budget(b) for b in BUDGETS) + " |", "|---" * (len(BUDGETS) + 1) + "|"]
        for name, per in g["transfer"].items():
            label = "learned (SmolLM2's model)" if name == "learned" else name
            lines.append(f"| {label} | " + " | ".join(f"{per[str(b)]:.4f}" for b in BUDGETS) + " |")
        lines.append("| learned (Gemma's own model) | " +
                     " | ".join(f"{g['own']['learned'][str(b)]:.4f}" for b in BUDGETS) + " |")
        lines.append("")
    own_path = closed_loop_path(out, HELD_OUT[0], BUDGETS, "gemma_mlp16", "gemma3")
    if os.path.exists(own_path):
        doc = read_json(own_path)
        lines += closed_loop_table(f"## Gemma 3 270M's closed loop, {HELD_OUT[0]}, learned = Gemma's own model", doc,
                                   gap_closed(doc, rng))
        transfer_path = closed_loop_path(out, HELD_OUT[0], BUDGETS, "mlp16", "gemma3")
        if os.path.exists(transfer_path):
            lines += in_its_place(f"SmolLM2's model in its place (transfer), Gemma 3, {HELD_OUT[0]}:", "SmolLM2's",
                                  doc, read_json(transfer_path), rng)
    lines += tasks_markdown(out, "tasks", f"niah_single at {TASK_LENGTH} tokens")
    lines += tasks_markdown(out, "gemma_tasks", f"Gemma 3 270M, niah_single at {GEMMA_TASK_LENGTH} tokens, "
                            "learned = Gemma's own model")
    with open(os.path.join(out, "study.md"), "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=os.path.join(ROOT, "build", "learned_policy_study"))
    parser.add_argument("--parts", default="train,openloop,closedloop,closedqkv,gemma,gemma_closedloop,tasks,gemma_tasks")
    args = parser.parse_args()
    learn_policy.torch_threads()
    parts = {"train": part_train, "openloop": part_openloop, "closedloop": part_closedloop, "closedqkv": part_closedqkv,
             "gemma": part_gemma,
             "gemma_closedloop": part_gemma_closedloop, "tasks": part_tasks,
             "gemma_tasks": part_gemma_tasks}
    for part in args.parts.split(","):
        if part not in parts:
            parser.error(f"--parts: unknown part {part!r} (expected {', '.join(parts)})")
    os.makedirs(args.out, exist_ok=True)
    for part in args.parts.split(","):
        start = time.monotonic()
        parts[part](args.out)
        log(f"{part} took {time.monotonic() - start:.0f} s")
    markdown(args.out)
    log(f"wrote {args.out}/study.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
