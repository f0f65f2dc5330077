"""The closed loop: eviction inside a real model's forward, layer by layer (docs/closed_loop.md).

For each cache (a policy at a budget, or a reference cache) the model runs once over the n tokens:
layer l's Q, K, V for all n positions come from the hidden states that layers < l produced with
their evicted caches; subevict's simulator runs the policy on that layer's Q, K, V (the process of
docs/eviction.md: G_i = S_{i-1} + {i}, GQA aggregation, budgets and specs as `simulate`), which
gives every step's cache per KV head; query i of layer l then attends over its step's cache only,
and the rest of the layer follows. Position i's layer-l state depends only on positions <= i of
layer l - 1 and on the cache at step i, so this is token-by-token decoding with eviction under
teacher forcing.

Reference caches, computed per layer on that layer's closed-loop Q, K, V:
  opt   the exact offline optimum of retained attention mass (subevict's min-cost flow), irreversible;
  topk  the reversible per-step oracle: at step i each KV head keeps the k past keys with the most
        attention from query i, summed over its query heads (evicted keys may return).
In mass, on each layer and KV head: opt <= topk, every policy <= opt where it compressed the head,
and opt's own mass (its schedule replayed through the simulator) = OPT (checked,
`mass_order_violations`).

Needs torch and the GGUF model code (subevict.models).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np

from . import _subevict
from .models import attend, causal_keep, keep_from_last_step, keep_from_sets
from .models.next_token import next_token_metrics
from .policies import Decisions
from .progress import Progress

REFERENCES = ("opt", "topk")

# Relative slack of the mass order policy <= opt <= topk: the library's (mass_order_violations) on
# double gains: the three masses are double sums over n steps of the same attention rows.
MASS_ORDER_RTOL = _subevict.mass_order_slack(False)

@dataclass
class Cache:
    """One cache of a run: a policy (`item` as simulate takes it) or a reference ("opt", "topk")."""

    label: str
    kind: str  # "policy" or a name of REFERENCES
    item: Any = None


def caches_of(policies, horizon=16):
    """The caches a list names: policy list strings (references "opt" and "topk" may stand among
    the specs), Python policy objects and subevict.Decisions. InputError for an unknown policy or
    key, or a label given twice."""
    if isinstance(policies, str) or not isinstance(policies, (list, tuple)):
        policies = [policies]
    caches = []
    for p in policies:
        if isinstance(p, str):
            items = p.split(",")
            specs = ",".join(x for x in items if x.strip() not in REFERENCES)
            for name in (x.strip() for x in items if x.strip() in REFERENCES):
                caches.append(Cache(name, name))
            if specs:
                caches += [Cache(label, "policy", label)
                           for label in _subevict.policy_specs(specs, "closed_loop", horizon)]
        elif isinstance(p, Decisions):
            caches.append(Cache(p.name, "policy", p))
        else:
            label = getattr(p, "name", None) or type(p).__name__
            caches.append(Cache(str(label), "policy", p))
    check_labels([c.label for c in caches], "closed_loop")
    return caches


def check_labels(labels, source):
    """InputError (prefixed with `source`) unless `labels`, a run's cache labels, name at least
    one cache and each one once."""
    for label in labels:
        if labels.count(label) > 1:
            raise _subevict.InputError(f"{source}: policies: each cache once, got {label!r} twice")
    if not labels:
        raise _subevict.InputError(f"{source}: policies: at least one policy or reference")


def check_decisions(caches, tokens, evict_layers):
    """InputError, before any model work, for recorded decisions that do not fit the run: a
    schedule of another length than `tokens`, or a per-layer one without every evicting layer."""
    for cache in caches:
        array = cache.item.array if isinstance(cache.item, Decisions) else None
        if array is None:
            continue
        if array.shape[-1] != tokens:
            raise _subevict.InputError(f"closed_loop: {cache.label}: a schedule of {tokens} tokens, "
                                       f"got shape {tuple(array.shape)}")
        if array.ndim in (3, 4) and evict_layers and array.shape[0] <= max(evict_layers):
            raise _subevict.InputError(f"closed_loop: {cache.label}: decisions for layer "
                                       f"{max(evict_layers)}, got {array.shape[0]} layers")


def _layer_item(item, layer):
    """The simulate item of one model layer: a per-layer Decisions is sliced to that layer."""
    if isinstance(item, Decisions) and item.array.ndim in (3, 4):
        return Decisions(np.ascontiguousarray(item.array[layer:layer + 1]),
                         item.name[len("recorded:"):], item.to_process)
    return item


@dataclass
class LayerRecord:
    """One layer of one run: per KV head the run's retained mass, OPT and the oracle's mass on that
    layer's closed-loop Q, K (simulate's units: sums over steps of means over the query heads), and
    whether the run's cache was compressed to k on that head (a policy may keep a head whole:
    l2norm's skipped layers; no cache is compressed at k >= n)."""

    layer: int
    kind: str  # the cache's kind: "policy", "opt" or "topk"
    head_compressed: list
    mass: list  # opt: its schedule's mass as the simulator measures it, not the optimum's value
    opt: list
    topk: list
    last_step: Optional[np.ndarray] = None  # [kv_heads, n] for irreversible caches (keep_schedules)
    qkv: Optional[tuple] = None  # (q, k, v) float32 numpy arrays (keep_qkv)

    @property
    def compressed(self):
        """Every KV head of the layer compressed (the layers that mass / OPT averages over)."""
        return all(self.head_compressed)

    def ratio_to_opt(self):
        return sum(self.mass) / sum(self.opt)

    def order_violations(self):
        """KV heads where the mass order fails, checked by the library's one order check
        (_subevict.mass_order_violations, as `subevict simulate`): opt <= topk on every head; for a
        policy, mass <= opt on each head it compresses (a head kept whole holds more than OPT at k);
        for opt, mass = opt (the schedule its cache used keeps the mass the optimum claims)."""
        count = 0
        for m, o, t, compressed in zip(self.mass, self.opt, self.topk, self.head_compressed):
            counted = self.kind == "opt" or (self.kind == "policy" and compressed)
            count += bool(_subevict.mass_order_violations(
                policy=m if counted else None, optimum=o, oracle=t,
                policy_is_optimum=self.kind == "opt"))
        return count


def _one_thread():
    _subevict._set_threads(1)


_head_threads = True  # False in a worker process: the workers, not the heads, share the cores


def _per_head(function, heads, parallel):
    """[function(h) for h in heads], on a thread per head when `parallel` (the library releases the
    GIL while it solves; each thread's library calls run on one OpenMP thread, so that the heads,
    not Eigen's products inside one head, share the cores; one thread per head rather than per
    core, so that 3 heads on 2 cores end together)."""
    if not parallel or len(heads) < 2 or not _head_threads:
        return [function(h) for h in heads]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=len(heads),
                            initializer=_one_thread) as pool:
        return list(pool.map(function, heads))


def layer_cache(cache, q, k, v, scale, layer, budget, seed, horizon):
    """(keep mask [kv_heads, n, n], LayerRecord) of `cache` on one layer's closed-loop q, k, v
    (float32 torch tensors). The KV heads run in parallel unless the cache is a Python policy (one
    object, stateful, shared by the heads)."""
    import torch

    workload = _subevict.Workload(q.numpy()[None], k.numpy()[None], v.numpy()[None],
                                  score_scale=scale)
    items = [] if cache.kind != "policy" else [_layer_item(cache.item, layer)]
    parallel = cache.kind != "policy" or isinstance(cache.item, (str, Decisions))
    heads = list(range(k.shape[0]))

    def evaluate(h):
        [cell] = _subevict._simulate(workload, items, [float(budget)], [0], [h], "flow", 1e-4,
                                     int(seed), int(horizon), False, False, int(layer),
                                     cache.kind == "topk", policy_mass_from_gains=True)
        return cell

    def schedule_mass(h):  # the schedule a head's keep mask uses, replayed: its mass by the simulator
        steps = last_step[h].astype(np.int64) + 1
        [replay] = _subevict._simulate(workload, [Decisions(steps, "opt")], [float(budget)], [0], [h],
                                       "none", 1e-4, int(seed), int(horizon), False, False, int(layer))
        return replay["policies"]["recorded:opt"]["total_retained_mass"]

    cells = _per_head(evaluate, heads, parallel)
    opt = [cell["optimum"]["total"] for cell in cells]
    topk = [cell["oracle_total"] for cell in cells]
    n = q.shape[1]
    below_n = [budget < n] * len(heads)  # a reference cache is compressed wherever k < n
    if cache.kind == "policy":
        traces = [next(iter(cell["policies"].values())) for cell in cells]
        last_step = np.stack([t["last_step"] for t in traces])
        mass = [t["total_retained_mass"] for t in traces]
        compressed = [bool(t["compressed"]) for t in traces]
    elif cache.kind == "opt":
        last_step = np.stack([cell["optimum"]["last_step"] for cell in cells])
        mass, compressed = _per_head(schedule_mass, heads, parallel), below_n
    else:
        keep = keep_from_sets([cell["oracle"]["chosen"] for cell in cells], len(heads), n)
        return keep, LayerRecord(layer, cache.kind, below_n, list(topk), opt, topk)
    keep = keep_from_last_step(torch.from_numpy(last_step.astype(np.int64)))
    return keep, LayerRecord(layer, cache.kind, compressed, mass, opt, topk, last_step)


def run_cache(model, ids, cache, budget, evict_layers, seed=0, horizon=16, keep_schedules=False,
              keep_qkv=False, progress=None, full_inputs=None):
    """One closed-loop forward of `ids` (int64 [n]) with `cache` at budget size `budget` in the
    layers `evict_layers` (the others keep the full cache). Returns (log-probabilities [n, vocab]
    float32, [LayerRecord of each evicting layer]).

    full_inputs: the full-cache run's input hidden states of every layer: an empty list that a run
    evicting nowhere fills, or a filled one from which a run starts at its first evicting layer
    (the layers below are the full model's, the same arithmetic on the same inputs)."""
    import torch

    n = int(ids.shape[0])
    positions = torch.arange(n)
    records = []
    start = min(evict_layers, default=model.layers) if full_inputs else 0
    with torch.no_grad():
        hidden = full_inputs[start] if start > 0 else model.embed(ids)
        for layer in range(start, model.layers):
            if full_inputs is not None and not evict_layers:
                full_inputs.append(hidden)
            q, k, v = model.attention_inputs(layer, hidden, positions)
            keep = causal_keep(n, model.kv_heads, model.windows[layer])
            if layer in evict_layers:
                keep, record = layer_cache(cache, q, k, v, model.score_scale, layer, budget, seed,
                                           horizon)
                if not keep_schedules:
                    record.last_step = None
                if keep_qkv:
                    record.qkv = (q.numpy().copy(), k.numpy().copy(), v.numpy().copy())
                records.append(record)
            hidden = model.attention_output(layer, hidden, attend(q, k, v, model.score_scale, keep))
            if progress is not None:
                progress.advance(f"{cache.label} k={budget} layer {layer}")
        logp = torch.log_softmax(model.logits(hidden), dim=-1)
    return logp, records


@dataclass
class Run:
    """One (cache, budget) closed-loop run."""

    label: str
    kind: str
    budget: Any
    budget_size: int
    metrics: dict
    layers: list = field(default_factory=list)
    seconds: float = 0.0

    def summary(self, full_nll):
        compressed = [r for r in self.layers if r.compressed]
        ratios = [r.ratio_to_opt() for r in compressed]
        return {
            "policy": self.label, "kind": self.kind, "budget": self.budget,
            "budget_size": self.budget_size,
            "perplexity": self.metrics["perplexity"],
            "delta_log_perplexity": self.metrics["nll"] - full_nll,
            "mean_kl": self.metrics["mean_kl"], "top1_agreement": self.metrics["top1_agreement"],
            "compressed_layers": [r.layer for r in compressed],
            "mean_ratio_to_opt": float(np.mean(ratios)) if ratios else None,
            "mass_order_violations": sum(r.order_violations() for r in self.layers),
            "layers": [{"layer": r.layer, "compressed": r.compressed,
                        "head_compressed": r.head_compressed,
                        "ratio_to_opt": r.ratio_to_opt(), "mass": r.mass, "opt": r.opt,
                        "topk": r.topk} for r in self.layers],
            "seconds": self.seconds,
        }


def _evaluate(model, ids, full_logp, job, seed, horizon, keep_schedules, keep_qkv, full_inputs,
              progress=None):
    """One job (cache, budget, budget size, evicting layers) as a Run."""
    import time

    cache, budget, k, evict_layers = job
    start = time.monotonic()
    logp, records = run_cache(model, ids, cache, k, evict_layers, seed, horizon, keep_schedules,
                              keep_qkv, progress, full_inputs)
    return Run(cache.label, cache.kind, budget, k, next_token_metrics(full_logp, logp, ids), records,
               time.monotonic() - start)


class _WorkerTicks:
    """A worker's progress: one tick per layer on the parent's queue."""

    def __init__(self, queue):
        self.queue = queue

    def advance(self, what=""):
        self.queue.put(what)


_WORKER = {}  # what forked workers inherit: the model, the full cache's run and the settings


def _worker_start():
    """A forked worker: one thread for torch, the library and the KV heads (the workers share the
    cores)."""
    import torch

    global _head_threads
    torch.set_num_threads(1)
    _subevict._set_threads(1)
    _head_threads = False


def _worker_run(job):
    w = _WORKER
    return _evaluate(w["model"], w["ids"], w["full_logp"], job, *w["settings"], w["full_inputs"],
                     _WorkerTicks(w["ticks"]))


def _workers_can_run(jobs):
    """Jobs can go to worker processes when every cache is a built-in, a reference or recorded
    decisions (a Python policy object stays in this process: it may hold state the caller reads)."""
    return all(job[0].kind != "policy" or isinstance(job[0].item, (str, Decisions)) for job in jobs)


def _run_jobs(model, ids, full_logp, full_inputs, jobs, settings, workers, progress):
    """Every job as a Run, in the order of `jobs`: in this process, or on `workers` forked processes
    (one thread each; they share the model's memory) when there are several jobs, the platform
    forks and _workers_can_run."""
    import multiprocessing

    if (workers <= 1 or len(jobs) < 2 or not _workers_can_run(jobs)
            or "fork" not in multiprocessing.get_all_start_methods()):
        return [_evaluate(model, ids, full_logp, job, *settings, full_inputs, progress)
                for job in jobs]
    import queue as queue_module
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

    context = multiprocessing.get_context("fork")
    ticks = context.Queue()
    _WORKER.update(model=model, ids=ids, full_logp=full_logp, full_inputs=full_inputs,
                   settings=settings, ticks=ticks)
    try:
        with ProcessPoolExecutor(max_workers=min(workers, len(jobs)), mp_context=context,
                                 initializer=_worker_start) as pool:
            futures = [pool.submit(_worker_run, job) for job in jobs]
            pending = set(futures)
            while pending:
                _, pending = wait(pending, timeout=1.0, return_when=FIRST_COMPLETED)
                while True:
                    try:
                        what = ticks.get_nowait()
                    except queue_module.Empty:
                        break
                    if progress is not None:
                        progress.advance(what)
            return [future.result() for future in futures]
    finally:
        _WORKER.clear()
        ticks.close()


def closed_loop(model, ids, policies="h2o,tova,opt,topk", budgets=(0.2,), layers=None, seed=0,
                horizon=16, keep_schedules=False, keep_qkv=False, quiet=False, workers=1):
    """Runs every (cache, budget) of `policies` x `budgets` through `model` on token ids `ids` and
    compares it with the full-cache model.

    model: a subevict.models model (or a GGUF path); ids: int64 token ids [n] (or [1, n]);
    policies: as caches_of (built-ins with parameters, "opt", "topk", Python policies,
    subevict.Decisions); budgets: ratios in (0, 1) or integer sizes, as simulate; layers: the layers
    that evict (default every global layer; at least one: [] is refused, a budget >= n gives the
    full model; the others keep the full cache; a sliding-window
    layer keeps its window and is refused here: `subevict simulate` evicts within the windows of
    an exported workload); workers: processes that run the (cache, budget) pairs side
    by side, forked, one thread each (1: this process; Python policy objects always run here).
    Returns {"tokens", "full": {"perplexity", "nll", "token_logprob"}, "runs": [Run]}
    (Run.summary(full nll) is the JSON form). Progress (one unit per layer of a run) goes to
    stderr unless quiet."""
    model, ids, caches = _inputs(model, ids, policies, horizon, workers)
    n = int(ids.shape[0])
    budget_list = [budgets] if isinstance(budgets, (int, float)) else list(budgets)
    if not budget_list:
        raise _subevict.InputError("closed_loop: budgets: at least one budget")
    sizes = [_subevict.budget_size(float(b), n, "closed_loop") for b in budget_list]
    evict_layers = evicting_layers(model, layers)
    check_decisions(caches, n, evict_layers)
    first = min(evict_layers, default=model.layers)
    progress = Progress("closed loop", model.layers + len(caches) * len(sizes) * (model.layers - first),
                        "layer", quiet=quiet)
    full_logp, full_inputs = full_cache_run(model, ids, progress)
    full = next_token_metrics(full_logp, full_logp, ids)
    jobs = [(cache, budget, k, evict_layers) for budget, k in zip(budget_list, sizes) for cache in caches]
    runs = _run_jobs(model, ids, full_logp, full_inputs, jobs,
                     (seed, horizon, keep_schedules, keep_qkv), int(workers), progress)
    return {"tokens": n, "full": {"perplexity": full["perplexity"], "nll": full["nll"],
                                  "token_logprob": full["token_logprob"]}, "runs": runs}


def _inputs(model, ids, policies, horizon, workers):
    """(model, ids, caches) of a closed-loop call, checked: the model (loaded when given as a GGUF
    path), the ids as int64 [n] with n >= 2, the caches of `policies` (caches_of), workers >= 1."""
    import torch

    from . import models as models_module

    if isinstance(model, (str, bytes)) or hasattr(model, "__fspath__"):
        model = models_module.load(model)
    ids = torch.as_tensor(np.asarray(ids), dtype=torch.int64).reshape(-1)
    if int(ids.shape[0]) < 2:
        raise _subevict.InputError(f"closed_loop: ids: at least 2 tokens, got {int(ids.shape[0])}")
    if int(workers) < 1:
        raise _subevict.InputError(f"closed_loop: workers: an integer >= 1, got {workers}")
    return model, ids, caches_of(policies, horizon)


def evicting_layers(model, layers):
    """The set of layers that evict: `layers` (None: every global layer), checked: at least one,
    indices in range, no sliding-window layer (InputError naming it)."""
    global_layers = [layer for layer in range(model.layers) if model.windows[layer] is None]
    evict_layers = set(global_layers) if layers is None else set(layers)
    if not evict_layers:
        raise _subevict.InputError("closed_loop: layers: expected at least one evicting layer (None: "
                                   "every global layer), got "
                                   + ("[]" if layers is not None else "None on a model without global layers"))
    for layer in evict_layers:
        if not 0 <= layer < model.layers:
            raise _subevict.InputError(f"closed_loop: layers: indices in [0, {model.layers}), got "
                                       f"{layer}")
        if model.windows[layer] is not None:
            raise _subevict.InputError(
                f"closed_loop: layers: layer {layer} is a sliding-window layer ("
                f"{model.windows[layer]} keys), and eviction runs on global layers only "
                f"({','.join(map(str, global_layers))})")
    return evict_layers


def full_cache_run(model, ids, progress=None):
    """(log-probabilities, every layer's input hidden states) of the full-cache forward: what every
    evicting run starts from and compares with."""
    n = int(ids.shape[0])
    full_inputs = []
    full_logp, _ = run_cache(model, ids, Cache("full cache", "full"), n, set(), progress=progress,
                             full_inputs=full_inputs)
    return full_logp, full_inputs


def one_layer_at_a_time(model, ids, policies, budget, layers=None, seed=0, horizon=16, quiet=False,
                        workers=1):
    """Eviction in one layer alone, for each layer of `layers` (default every global layer) and
    each cache of `policies` at `budget` (a ratio or a size); every other layer keeps its full
    cache, and each run starts from the full model's hidden states at its layer. Returns
    {"tokens", "full": {"perplexity", "nll"}, "runs": [Run]} in (layer, cache) order; each Run has
    one LayerRecord. Progress as closed_loop; workers as closed_loop."""
    model, ids, caches = _inputs(model, ids, policies, horizon, workers)
    n = int(ids.shape[0])
    k = _subevict.budget_size(float(budget), n, "closed_loop")
    chosen = sorted(evicting_layers(model, layers))
    check_decisions(caches, n, set(chosen))
    progress = Progress("one layer at a time", model.layers + len(caches) * sum(
        model.layers - layer for layer in chosen), "layer", quiet=quiet)
    full_logp, full_inputs = full_cache_run(model, ids, progress)
    full = next_token_metrics(full_logp, full_logp, ids)
    jobs = [(cache, budget, k, {layer}) for layer in chosen for cache in caches]
    runs = _run_jobs(model, ids, full_logp, full_inputs, jobs,
                     (seed, horizon, False, False), int(workers), progress)
    return {"tokens": n, "full": {"perplexity": full["perplexity"], "nll": full["nll"]},
            "runs": runs}


def results_json(result, settings):
    """The JSON form of a closed_loop result (closed_loop_report.write takes it): settings
    (provenance as the caller gives it), the full cache's perplexity, every run's summary, and the
    analysis (Spearman of mass against perplexity, best policy against opt, the mass order)."""
    from .closed_loop_report import analysis

    full_nll = result["full"]["nll"]
    runs = [run.summary(full_nll) for run in result["runs"]]
    return {"settings": dict(settings, tokens=result["tokens"]),
            "full": {"perplexity": result["full"]["perplexity"], "nll": full_nll},
            "runs": runs, "analysis": analysis(runs)}
