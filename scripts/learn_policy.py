#!/usr/bin/env python3
"""Trains the learned eviction policy on the exact optimum's decisions and evaluates it
(docs/learned_policy.md).

    learn_policy.py train --workload W.safetensors -o model.json [--budgets 0.05,0.1,0.2,0.5]
        [--layers all] [--steps-per-head 48] [--hidden 16] [--activation relu] [--target evicted]
        [--per-layer] [--features a,b,...] [--dagger-rounds 0 --dagger-horizon 512 --dagger-budgets ...]
    learn_policy.py evaluate --model model.json --workload W.safetensors [--policies h2o,...]
        [--budgets ...] [--layers all] -o results.json
    learn_policy.py closed-loop --model model.json --gguf MODEL.gguf --text-file TEXT --tokens N
        [--policies h2o,...] [--budgets ...] -o results.json

train: for every (layer, KV head) and budget the exact offline optimum (subevict.simulate, optimum
flow) gives its schedule; the online features along that schedule (subevict.feature_trace, about
--steps-per-head full steps per head and budget, evenly spaced) and the member the optimum evicts
at each are the data; subevict.learned.train fits the ranking net (seeded, deterministic) and the
model file is written with its provenance. With --dagger-rounds R, R rounds of DAgger follow: the
learned policy runs, the member the optimum of the next --dagger-horizon steps evicts from each of
its recorded caches is added to the data, and the net is trained again on all of it. evaluate:
open-loop retained mass / OPT of the learned policy and the built-ins on a workload the model
never saw. closed-loop: perplexity with each cache
in the model's forward (subevict.closed_loop), with every token's log-probability for the bootstrap.
Run with the project's .venv/bin/python (torch for training and the closed loop).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

import subevict
from subevict import _subevict, learned
from subevict.models.gguf_file import file_sha256
from subevict.progress import Progress

FEATURE_OPTIONS = {"window": 32, "sinks": 4, "trend_rate": 0.125}


def parse_layers(text, count):
    if text == "all":
        return list(range(count))
    return [int(x) for x in text.split(",") if x.strip()]


def recording_interval(n, k, steps_per_head):
    """feature_trace's `every` that records about steps_per_head of the n - k full steps at budget k."""
    return max(1, (n - k) // max(steps_per_head, 1))


def optimum_traces(w, layers, budgets, steps_per_head, quiet=False):
    """Feature traces along the optimum's schedule for every (layer, KV head, budget): a list of
    (layer, kv_head, budget, trace)."""
    n = w.shape["tokens"]
    out = []
    progress = Progress("optimum traces", len(layers) * w.shape["kv_heads"], "head", quiet=quiet)
    for layer in layers:
        cells = subevict.simulate(w, [], budgets, layers=layer, optimum="flow")
        for cell in cells:
            k = cell["budget_size"]
            every = recording_interval(n, k, steps_per_head)
            trace = subevict.feature_trace(w, layer, cell["kv_head"], k, schedule=cell["optimum"]["last_step"],
                                           every=every, **FEATURE_OPTIONS)
            if not np.array_equal(trace["last_step"], cell["optimum"]["last_step"]):
                raise RuntimeError(f"the optimum's replay differs at layer {layer} KV head {cell['kv_head']}")
            out.append((layer, cell["kv_head"], cell["budget"], trace))
            if cell["budget"] == budgets[-1]:
                progress.advance()
    return out


def on_policy_traces(w, model_path, layers, budgets, steps_per_head, horizon, quiet=False):
    """DAgger's data: feature traces along the learned policy's own run (model_path) for every
    (layer, KV head, budget), each recorded step labelled with the member of the policy's G_i that
    the exact optimum of the next `horizon` steps, started from that cache, evicts
    (_subevict.optimal_victims: the optimum's decision from the states the policy's own choices lead
    to, which traces along the optimum's schedule never show). Items as optimum_traces'; a trace's
    last_step is the policy's, so its lifetimes are not the optimum's (the evicted target only)."""
    n = w.shape["tokens"]
    out = []
    progress = Progress("on-policy traces", len(layers) * w.shape["kv_heads"], "head", quiet=quiet)
    for layer in layers:
        for h in range(w.shape["kv_heads"]):
            gains = subevict.gain_matrix(w, layer, h)
            for budget in budgets:
                k = subevict.budget_size(float(budget), n, "learn_policy")
                every = recording_interval(n, k, steps_per_head)
                trace = subevict.feature_trace(w, layer, h, k, policy=f"learned:model={model_path}", every=every,
                                               **FEATURE_OPTIONS)
                offsets, tokens = trace["offsets"], trace["tokens"]
                victims = _subevict.optimal_victims(gains, trace["steps"].tolist(), offsets.tolist(), tokens.tolist(),
                                                    int(horizon))
                rows = [int(np.flatnonzero(tokens[offsets[s]:offsets[s + 1]] == v)[0]) for s, v in enumerate(victims)]
                out.append((layer, h, budget, dict(trace, evicted_row=np.asarray(rows, dtype=np.int32))))
            progress.advance()
    return out


def dagger(data, w, layers, budgets, steps_per_head, horizon, rounds, train, quiet=False):
    """`rounds` rounds of DAgger from the optimum's traces `data`: train(data) gives a model
    document; each round records on_policy_traces along the current model, appends them to the
    data and trains again on the whole. Returns the last model."""
    import tempfile

    model = train(data)
    for round_ in range(rounds):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "model.json")
            learned.write_model(model, path)
            data = data + on_policy_traces(w, path, layers, budgets, steps_per_head, horizon, quiet)
        model = train(data)
        if not quiet:
            print(f"learn_policy: DAgger round {round_ + 1}/{rounds}: {model['provenance']['training_steps']} steps",
                  file=sys.stderr)
    return model


def train_on(data, layers, hidden, per_layer, features, seed, provenance, activation="relu", target="evicted"):
    """The model document trained on optimum traces `data` (optimum_traces' items): one shared net,
    or one per layer of `layers`."""
    groups = {None: data} if not per_layer else {layer: [d for d in data if d[0] == layer] for layer in layers}
    nets = []
    for layer, items in groups.items():
        doc = learned.train([d[3] for d in items], feature_options=FEATURE_OPTIONS, hidden=hidden, features=features,
                            seed=seed, layers=None if layer is None else [layer], activation=activation,
                            target=target)
        nets += doc["nets"]
    model = learned.model_document(nets, FEATURE_OPTIONS, **provenance)
    agreement = learned.top1(model, [d[3] for d in data], [d[0] for d in data])
    model["provenance"]["training_top1"] = agreement
    model["provenance"]["training_steps"] = int(sum(len(d[3]["steps"]) for d in data))
    return model


def evaluate(w, model_path, policies, budgets, layers, quiet=False):
    """Open-loop mass / OPT per policy and budget, means over the (layer, KV head) groups."""
    specs = policies + [f"learned:model={model_path}"]
    table = {}
    progress = Progress("evaluate", len(layers), "layer", quiet=quiet)
    for layer in layers:
        for cell in subevict.simulate(w, specs, budgets, layers=layer, optimum="flow"):
            opt = cell["optimum"]["total"]
            for label, trace in cell["policies"].items():
                name = "learned" if label.startswith("learned") else label
                table.setdefault(name, {}).setdefault(str(cell["budget"]), []).append(trace["total_retained_mass"] / opt)
        progress.advance()
    return {name: {b: float(np.mean(v)) for b, v in per_budget.items()} for name, per_budget in table.items()}


def main(argv=None):
    parser = argparse.ArgumentParser(prog="learn_policy.py", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    t = sub.add_parser("train", help="train a model on a workload's optimum")
    t.add_argument("--workload", required=True)
    t.add_argument("--budgets", default="0.05,0.1,0.2,0.5")
    t.add_argument("--layers", default="all")
    t.add_argument("--steps-per-head", type=int, default=48)
    t.add_argument("--hidden", type=int, default=16, help="width of the hidden layer (0: linear)")
    t.add_argument("--activation", choices=["relu", "tanh"], default="relu", help="the hidden layer's activation")
    t.add_argument("--target", choices=["evicted", "lifetime"], default="evicted",
                   help="fit the optimum's evicted member (listwise) or every member's remaining lifetime")
    t.add_argument("--per-layer", action="store_true", help="one net per layer instead of one shared net")
    t.add_argument("--features", default="", help="the features used (default all), comma-separated")
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--dagger-rounds", type=int, default=0,
                   help="rounds of DAgger: add the optimum's decisions from the learned policy's own states")
    t.add_argument("--dagger-horizon", type=int, default=512,
                   help="steps the optimum of a DAgger label looks ahead from the policy's cache")
    t.add_argument("--dagger-budgets", default="", help="the budgets of the DAgger rounds (default --budgets)")
    t.add_argument("-o", "--output", required=True)
    e = sub.add_parser("evaluate", help="open-loop mass / OPT on a workload")
    e.add_argument("--model", required=True)
    e.add_argument("--workload", required=True)
    e.add_argument("--policies", default="h2o,tova,snapkv,streamingllm")
    e.add_argument("--budgets", default="0.05,0.1,0.2,0.5")
    e.add_argument("--layers", default="all")
    e.add_argument("-o", "--output", required=True)
    c = sub.add_parser("closed-loop", help="perplexity with each cache in the model's forward")
    c.add_argument("--model", required=True)
    c.add_argument("--gguf", required=True)
    c.add_argument("--text-file", required=True)
    c.add_argument("--tokens", type=int, required=True)
    c.add_argument("--policies", default="h2o,tova,snapkv,streamingllm,opt")
    c.add_argument("--budgets", default="0.05,0.1,0.2,0.5")
    c.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1))
    c.add_argument("-o", "--output", required=True)
    args = parser.parse_args(argv)
    torch_threads()
    start = time.monotonic()
    try:
        budgets = subevict.parse_budgets(args.budgets, "learn_policy", "--budgets")
        if args.command == "train":
            w = subevict.read_workload(args.workload)
            features = [f for f in args.features.split(",") if f] or None
            for f in features or []:
                if f not in learned.FEATURES:
                    raise subevict.InputError(f"learn_policy: --features: expected names of {learned.FEATURES}, got {f}")
            provenance = {"workload": os.path.basename(args.workload), "workload_sha256": file_sha256(args.workload),
                          "budgets": budgets, "steps_per_head": args.steps_per_head, "hidden": args.hidden,
                          "activation": args.activation, "target": args.target, "per_layer": args.per_layer,
                          "seed": args.seed}
            layers = parse_layers(args.layers, w.shape["layers"])
            if args.dagger_rounds < 0 or args.dagger_horizon < 1:
                raise subevict.InputError("learn_policy: --dagger-rounds, --dagger-horizon: expected >= 0 and >= 1")
            if args.dagger_rounds and args.target != "evicted":
                raise subevict.InputError("learn_policy: --dagger-rounds: expected --target evicted (on-policy "
                                          "traces carry the optimum's decisions, not its lifetimes)")
            dagger_budgets = (subevict.parse_budgets(args.dagger_budgets, "learn_policy", "--dagger-budgets")
                              if args.dagger_budgets else budgets)
            if args.dagger_rounds:
                provenance.update(dagger_rounds=args.dagger_rounds, dagger_horizon=args.dagger_horizon,
                                  dagger_budgets=dagger_budgets)

            def fit(data):
                return train_on(data, layers, args.hidden, args.per_layer, features, args.seed, provenance,
                                args.activation, args.target)

            model = dagger(optimum_traces(w, layers, budgets, args.steps_per_head), w, layers, dagger_budgets,
                           args.steps_per_head, args.dagger_horizon, args.dagger_rounds, fit)
            learned.write_model(model, args.output)
            print(f"learn_policy: trained on {model['provenance']['training_steps']} steps, top-1 agreement with "
                  f"the optimum {model['provenance']['training_top1']:.3f}; wrote {args.output}", file=sys.stderr)
        elif args.command == "evaluate":
            w = subevict.read_workload(args.workload)
            policies = [p for p in args.policies.split(",") if p]
            result = {"workload": os.path.basename(args.workload), "model": args.model, "budgets": budgets,
                      "mass_over_opt": evaluate(w, args.model, policies, budgets,
                                                parse_layers(args.layers, w.shape["layers"]))}
            write_json(result, args.output)
        else:
            from subevict import models
            model = models.load(args.gguf)
            ids = models.tokenize(model, open(args.text_file).read(), args.tokens)[0]
            policies = [p for p in args.policies.split(",") if p] + [f"learned:model={args.model}"]
            out = subevict.closed_loop(model, ids, policies, budgets, workers=args.workers)
            runs = []
            for run in out["runs"]:
                s = run.summary(out["full"]["nll"])
                s["token_logprob"] = run.metrics["token_logprob"].tolist()
                s["layers"] = [{"layer": r["layer"], "ratio_to_opt": r["ratio_to_opt"]} for r in s["layers"]]
                runs.append(s)
            write_json({"text": os.path.basename(args.text_file), "tokens": args.tokens, "model": args.model,
                        "full": {"perplexity": out["full"]["perplexity"], "nll": out["full"]["nll"],
                                 "token_logprob": out["full"]["token_logprob"].tolist()},
                        "runs": runs}, args.output)
    except (subevict.InputError, OSError) as error:
        print(f"learn_policy: error: {str(error).removeprefix('learn_policy: ')}", file=sys.stderr)
        return 2
    print(f"learn_policy: {args.command} took {time.monotonic() - start:.1f} s", file=sys.stderr)
    return 0


def torch_threads():
    try:
        import torch
        torch.set_num_threads(1)
    except ImportError:
        pass


def write_json(doc, path):
    tmp = f"{path}.tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    os.replace(tmp, path)


if __name__ == "__main__":
    sys.exit(main())
