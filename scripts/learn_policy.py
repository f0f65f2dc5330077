#!/usr/bin/env python3
"""Trains the learned eviction policy on the exact optimum's decisions and evaluates it
(docs/learned_policy.md).

    learn_policy.py train --workload W.safetensors -o model.json [--budgets 0.05,0.1,0.2,0.5]
        [--layers all] [--steps-per-head 48] [--hidden 16] [--activation relu]
        [--target evicted|lifetime|leaving] [--leaving-within 32] [--per-layer] [--features a,b,...]
        [--dagger-rounds 0 --dagger-horizon 512 --dagger-budgets ...]
    learn_policy.py evaluate --model model.json --workload W.safetensors [--policies h2o,...]
        [--budgets ...] [--layers all] -o results.json
    learn_policy.py near-ties --workload W.safetensors [--budgets 0.05] [--layers 3,12,25]
        [--steps-per-head 2] [--horizon 256] [--within 1,8,32,128] [--policy h2o] -o near_ties.json
    learn_policy.py closed-loop --model model.json --gguf MODEL.gguf --text-file TEXT --tokens N
        [--policies h2o,...] [--budgets ...] -o results.json
    learn_policy.py closed-loop-export --gguf MODEL.gguf --text-file TEXT --tokens N [--budgets ...] -o DIR
    learn_policy.py train --workload DIR/opt-0.05.safetensors --workload DIR/opt-0.1.safetensors
        --budgets 0.05,0.1 -o model.json

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
closed-loop-export: per budget, the Q, K, V on which the closed loop's optimum (`opt`, every layer
evicting) solved each layer, as a workload (DIR/opt-BUDGET.safetensors): the rows that upstream
eviction has moved, which the open-loop export never shows; train takes one such workload per
budget (--workload repeated, in --budgets' order).
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


def on_policy_traces(w, model_path, layers, budgets, steps_per_head, horizon, quiet=False, lifetimes=False):
    """DAgger's data: feature traces along the learned policy's own run (model_path) for every
    (layer, KV head, budget), each recorded step labelled with the member of the policy's G_i that
    the exact optimum of the next `horizon` steps, started from that cache, evicts
    (_subevict.optimal_victims: the optimum's decision from the states the policy's own choices lead
    to, which traces along the optimum's schedule never show). Items as optimum_traces'; a trace's
    last_step is the policy's, so its lifetimes are not the optimum's. With `lifetimes` each trace
    also carries "row_lifetime" (per row: the member's remaining lifetime under one optimum of that
    window, 0 for the victim; window_lifetimes), which the leaving target reads instead."""
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
                extra = {}
                if lifetimes:
                    row_lifetime = np.full(len(tokens), -1, dtype=np.int64)
                    for s, step in enumerate(trace["steps"]):
                        members = tokens[offsets[s]:offsets[s + 1]]
                        order = np.argsort(members, kind="stable")
                        row_lifetime[offsets[s] + order] = window_lifetimes(*window_gains(gains, step, members, horizon))
                        if row_lifetime[offsets[s] + rows[s]] != 0:
                            raise RuntimeError(f"the window optimum's victim differs at layer {layer} step {step}")
                    extra["row_lifetime"] = row_lifetime
                out.append((layer, h, budget, dict(trace, evicted_row=np.asarray(rows, dtype=np.int32), **extra)))
            progress.advance()
    return out


def closed_loop_workloads(model, ids, budgets, workers=1, quiet=False):
    """Per budget (budget, Workload): the Q, K, V of every layer in the closed loop's `opt` run at
    that budget (subevict.closed_loop, every layer evicting), the rows on which that layer's optimum
    was solved. Refuses a model with a sliding-window layer (its layers would not all evict)."""
    if any(window is not None for window in model.windows):
        raise subevict.InputError("learn_policy: closed-loop-export: expected a model whose every layer is global "
                                  "(every layer evicts); this one has sliding-window layers")
    out = subevict.closed_loop(model, ids, "opt", budgets, keep_qkv=True, quiet=quiet, workers=workers)
    result = []
    for run in out["runs"]:
        q, k, v = (np.ascontiguousarray(np.stack([record.qkv[part] for record in run.layers])) for part in range(3))
        result.append((run.budget, subevict.Workload(q, k, v, score_scale=model.score_scale)))
    return result


def export_name(budget):
    """closed-loop-export's file name of a budget."""
    return f"opt-{float(budget):g}.safetensors"


def dagger(data, w, layers, budgets, steps_per_head, horizon, rounds, train, quiet=False, lifetimes=False):
    """`rounds` rounds of DAgger from the optimum's traces `data`: train(data) gives a model
    document; each round records on_policy_traces along the current model (with the windows'
    lifetimes when `lifetimes`: the leaving target), appends them to the data and trains again on
    the whole. Returns the last model."""
    import tempfile

    model = train(data)
    for round_ in range(rounds):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "model.json")
            learned.write_model(model, path)
            data = data + on_policy_traces(w, path, layers, budgets, steps_per_head, horizon, quiet, lifetimes)
        model = train(data)
        if not quiet:
            print(f"learn_policy: DAgger round {round_ + 1}/{rounds}: {model['provenance']['training_steps']} steps",
                  file=sys.stderr)
    return model


def window_gains(gains, step, members, horizon):
    """optimal_victims's window at step i = `step`: the members of G_i (sorted; virtual tokens
    0..m-1, present at its start) then the next `horizon` steps, each bringing its token. Returns
    (window gains, m): its offline optimum at budget m - 1 evicts at virtual step m - 1 (step i)."""
    members = np.sort(np.asarray(members, dtype=np.int64))
    m = len(members)
    future = min(int(horizon), gains.shape[0] - 1 - int(step))
    real = int(step) + 1 + np.arange(future)
    window = np.zeros((m + future, m + future))
    window[m:, :m] = gains[np.ix_(real, members)]
    window[m:, m:] = np.tril(gains[np.ix_(real, real)])
    return window, m


def window_lifetimes(window, m):
    """Each member's remaining lifetime under one optimum of the window (window_gains): the steps it
    stays after step i, 0 for the member evicted at step i (optimal_victims's victim)."""
    return np.asarray(_subevict.offline_optimum(window, m - 1, certify=False)["last_step"][:m]) - (m - 2)


def victim_regrets(gains, step, members, horizon):
    """What each choice of victim at step i = `step` costs. The window is optimal_victims's: G_i =
    `members` (distinct tokens <= step) at its start, then the next `horizon` steps. For each member
    v, V(v) is the window optimum after evicting v at step i: the window's offline optimum with v's
    gains set to 0 (a member worth nothing is evicted first without loss, and evicting v leaves the
    others' choices free). Returns (regrets max_u V(u) - V(v) in the order of sorted(members), the
    window's remaining lifetime of each member under one optimum (steps it stays after step i; 0:
    leaves at i), and the members' summed gains over the window (the scale of the regrets))."""
    window, m = window_gains(gains, step, members, horizon)
    values = np.empty(m)
    for v in range(m):
        without = window.copy()
        without[:, v] = 0.0
        values[v] = _subevict.offline_optimum(without, m - 1, certify=False)["total"]
    return values.max() - values, window_lifetimes(window, m), float(window[m:, :m].sum())


def near_ties(w, layers, budget, steps_per_head, horizon, within, policy=None, quiet=False):
    """For recorded steps along the optimum's schedule (or `policy`'s run) on every (layer, KV
    head): how many members of G_i cost almost nothing to evict (regret <= 1e-3 of the members'
    window mass), and the largest regret among the members one window optimum evicts within each
    d of `within` steps. One row per step."""
    n = w.shape["tokens"]
    k = subevict.budget_size(float(budget), n, "learn_policy")
    rows = []
    progress = Progress("near ties", len(layers) * w.shape["kv_heads"], "head", quiet=quiet)
    for layer in layers:
        for h in range(w.shape["kv_heads"]):
            gains = subevict.gain_matrix(w, layer, h)
            source = (dict(policy=policy) if policy else
                      dict(schedule=_subevict.offline_optimum(gains, k, certify=False)["last_step"]))
            trace = subevict.feature_trace(w, layer, h, k, every=recording_interval(n, k, steps_per_head),
                                           **source, **FEATURE_OPTIONS)
            for s, step in enumerate(trace["steps"][:steps_per_head]):
                members = trace["tokens"][trace["offsets"][s]:trace["offsets"][s + 1]]
                regrets, lifetimes, mass = victim_regrets(gains, step, members, horizon)
                scale = max(mass, np.finfo(float).tiny)
                rows.append({"layer": layer, "kv_head": h, "step": int(step), "members": len(members),
                             "zero_regret": int((regrets <= 1e-12 * scale).sum()),
                             "near_ties": int((regrets <= 1e-3 * scale).sum()),
                             "leaving": {str(d): {"members": int((lifetimes < d).sum()),
                                                  "max_regret": float(regrets[lifetimes < d].max() / scale)}
                                         for d in within}})
            progress.advance()
    return rows


def train_on(data, layers, hidden, per_layer, features, seed, provenance, activation="relu", target="evicted",
             leaving_within=32):
    """The model document trained on optimum traces `data` (optimum_traces' items): one shared net,
    or one per layer of `layers`."""
    groups = {None: data} if not per_layer else {layer: [d for d in data if d[0] == layer] for layer in layers}
    nets = []
    for layer, items in groups.items():
        doc = learned.train([d[3] for d in items], feature_options=FEATURE_OPTIONS, hidden=hidden, features=features,
                            seed=seed, layers=None if layer is None else [layer], activation=activation,
                            target=target, leaving_within=leaving_within)
        nets += doc["nets"]
    model = learned.model_document(nets, FEATURE_OPTIONS, **provenance)
    agreement = learned.top1(model, [d[3] for d in data], [d[0] for d in data])
    model["provenance"]["training_top1"] = agreement
    if target == "leaving":
        model["provenance"]["training_top1_leaving"] = learned.top1(model, [d[3] for d in data], [d[0] for d in data],
                                                                    within=leaving_within)
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
    t.add_argument("--workload", required=True, action="append",
                   help="the workload of every budget, or, repeated, one per budget in --budgets' order")
    t.add_argument("--budgets", default="0.05,0.1,0.2,0.5")
    t.add_argument("--layers", default="all")
    t.add_argument("--steps-per-head", type=int, default=48)
    t.add_argument("--hidden", type=int, default=16, help="width of the hidden layer (0: linear)")
    t.add_argument("--activation", choices=["relu", "tanh"], default="relu", help="the hidden layer's activation")
    t.add_argument("--target", choices=["evicted", "lifetime", "leaving"], default="evicted",
                   help="fit the optimum's evicted member (listwise), every member's remaining lifetime, or "
                        "the set of members the optimum evicts within --leaving-within steps (listwise)")
    t.add_argument("--leaving-within", type=int, default=32,
                   help="the steps of the leaving target's set (1: the evicted target)")
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
    q = sub.add_parser("near-ties", help="how many members of G_i are near-optimal victims")
    q.add_argument("--workload", required=True)
    q.add_argument("--budgets", default="0.05", help="one budget")
    q.add_argument("--layers", default="3,12,25")
    q.add_argument("--steps-per-head", type=int, default=2)
    q.add_argument("--horizon", type=int, default=256)
    q.add_argument("--within", default="1,8,32,128", help="the leaving sets' steps, comma-separated")
    q.add_argument("--policy", default="", help="record along this policy's run (default: the optimum's)")
    q.add_argument("-o", "--output", required=True)
    c = sub.add_parser("closed-loop", help="perplexity with each cache in the model's forward")
    c.add_argument("--model", required=True)
    c.add_argument("--gguf", required=True)
    c.add_argument("--text-file", required=True)
    c.add_argument("--tokens", type=int, required=True)
    c.add_argument("--policies", default="h2o,tova,snapkv,streamingllm,opt")
    c.add_argument("--budgets", default="0.05,0.1,0.2,0.5")
    c.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1))
    c.add_argument("-o", "--output", required=True)
    x = sub.add_parser("closed-loop-export", help="the closed-loop optimum's Q, K, V per budget, as workloads")
    x.add_argument("--gguf", required=True)
    x.add_argument("--text-file", required=True)
    x.add_argument("--tokens", type=int, required=True)
    x.add_argument("--budgets", default="0.05,0.1,0.2,0.5")
    x.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1))
    x.add_argument("-o", "--output", required=True, help="the directory of the workloads")
    args = parser.parse_args(argv)
    torch_threads()
    start = time.monotonic()
    try:
        budgets = subevict.parse_budgets(args.budgets, "learn_policy", "--budgets")
        if args.command == "train":
            if len(args.workload) not in (1, len(budgets)):
                raise subevict.InputError(f"learn_policy: --workload: expected one workload, or one per budget "
                                          f"({len(budgets)}), got {len(args.workload)}")
            if len(args.workload) > 1 and args.dagger_rounds:
                raise subevict.InputError("learn_policy: --dagger-rounds: expected one --workload (the policy's runs "
                                          "are on one workload)")
            workloads = [subevict.read_workload(path) for path in args.workload]
            w = workloads[0]
            for path, other in zip(args.workload[1:], workloads[1:]):
                if other.shape != w.shape:
                    raise subevict.InputError(f"learn_policy: --workload: {path} has shape {other.shape}, expected "
                                              f"{args.workload[0]}'s {w.shape}")
            named = [os.path.basename(path) for path in args.workload]
            hashes = [file_sha256(path) for path in args.workload]
            features = [f for f in args.features.split(",") if f] or None
            for f in features or []:
                if f not in learned.FEATURES:
                    raise subevict.InputError(f"learn_policy: --features: expected names of {learned.FEATURES}, got {f}")
            provenance = {"workload": named[0] if len(named) == 1 else named,
                          "workload_sha256": hashes[0] if len(hashes) == 1 else hashes,
                          "budgets": budgets, "steps_per_head": args.steps_per_head, "hidden": args.hidden,
                          "activation": args.activation, "target": args.target, "per_layer": args.per_layer,
                          **({"leaving_within": args.leaving_within} if args.target == "leaving" else {}),
                          "seed": args.seed}
            layers = parse_layers(args.layers, w.shape["layers"])
            if args.dagger_rounds < 0 or args.dagger_horizon < 1:
                raise subevict.InputError("learn_policy: --dagger-rounds, --dagger-horizon: expected >= 0 and >= 1")
            if args.leaving_within < 1:
                raise subevict.InputError(f"learn_policy: --leaving-within: expected an integer >= 1, got "
                                          f"{args.leaving_within}")
            if args.dagger_rounds and args.target == "leaving" and args.leaving_within > args.dagger_horizon:
                raise subevict.InputError(f"learn_policy: --leaving-within: expected at most --dagger-horizon "
                                          f"({args.dagger_horizon}: the windows' lifetimes end there), got "
                                          f"{args.leaving_within}")
            if args.dagger_rounds and args.target == "lifetime":
                raise subevict.InputError("learn_policy: --dagger-rounds: expected --target evicted or leaving "
                                          "(on-policy traces carry the window optimum's decisions, not the whole "
                                          "run's lifetimes)")
            dagger_budgets = (subevict.parse_budgets(args.dagger_budgets, "learn_policy", "--dagger-budgets")
                              if args.dagger_budgets else budgets)
            if args.dagger_rounds:
                provenance.update(dagger_rounds=args.dagger_rounds, dagger_horizon=args.dagger_horizon,
                                  dagger_budgets=dagger_budgets)

            def fit(data):
                return train_on(data, layers, args.hidden, args.per_layer, features, args.seed, provenance,
                                args.activation, args.target, args.leaving_within)

            if len(workloads) == 1:
                data = optimum_traces(w, layers, budgets, args.steps_per_head)
            else:  # one workload per budget
                data = [item for other, budget in zip(workloads, budgets)
                        for item in optimum_traces(other, layers, [budget], args.steps_per_head)]
            model = dagger(data, w, layers, dagger_budgets,
                           args.steps_per_head, args.dagger_horizon, args.dagger_rounds, fit,
                           lifetimes=args.target == "leaving")
            learned.write_model(model, args.output)
            print(f"learn_policy: trained on {model['provenance']['training_steps']} steps, top-1 agreement with "
                  f"the optimum {model['provenance']['training_top1']:.3f}; wrote {args.output}", file=sys.stderr)
        elif args.command == "near-ties":
            try:
                within = [int(d) for d in args.within.split(",") if d]
            except ValueError:
                within = []
            if len(budgets) != 1 or args.steps_per_head < 1 or args.horizon < 1 or not within or min(within) < 1:
                raise subevict.InputError("learn_policy: near-ties: expected one budget, --steps-per-head >= 1, "
                                          "--horizon >= 1 and --within integers >= 1")
            w = subevict.read_workload(args.workload)
            rows = near_ties(w, parse_layers(args.layers, w.shape["layers"]), budgets[0], args.steps_per_head,
                             args.horizon, within, args.policy or None)
            write_json({"workload": os.path.basename(args.workload), "budget": budgets[0], "horizon": args.horizon,
                        "states": args.policy or "optimum", "steps": rows}, args.output)
        elif args.command == "evaluate":
            w = subevict.read_workload(args.workload)
            policies = [p for p in args.policies.split(",") if p]
            result = {"workload": os.path.basename(args.workload), "model": args.model, "budgets": budgets,
                      "mass_over_opt": evaluate(w, args.model, policies, budgets,
                                                parse_layers(args.layers, w.shape["layers"]))}
            write_json(result, args.output)
        elif args.command == "closed-loop-export":
            from subevict import models
            from subevict.closed_loop_report import output_problem
            problem = output_problem(args.output)  # before any model work
            if problem:
                raise subevict.InputError(f"learn_policy: -o {args.output}: {problem}")
            model = models.load(args.gguf)
            ids = models.tokenize(model, open(args.text_file).read(), args.tokens)[0]
            workloads = closed_loop_workloads(model, ids, budgets, args.workers)
            os.makedirs(args.output, exist_ok=True)
            for budget, workload in workloads:
                path = os.path.join(args.output, export_name(budget))
                subevict.write_workload(path, workload)  # atomic: complete or absent
                print(f"learn_policy: wrote {path}", file=sys.stderr)
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
