"""The learned eviction policy (docs/learned_policy.md): its model file, its scores in NumPy (the
reference the C++ policy `learned:model=FILE` is checked against) and its training from the exact
optimum's decisions.

A model maps the online features of the members of G_i (subevict.feature_trace; docs/eviction.md,
"Online features") to one keep score per member; the policy evicts the member with the lowest score
(ties: the lowest token). Training fits the per-step softmax over G_i of the negated scores to the
member the optimum evicts (a listwise ranking loss), with torch's L-BFGS on the whole data, from a
seeded initialization: deterministic on one thread.
"""

from __future__ import annotations

import json
import os
import warnings
from typing import Iterable, Mapping, Optional, Sequence

import numpy as np

from . import _subevict

FEATURES = tuple(_subevict.online_feature_names)
FEATURES_VERSION = int(_subevict.online_features_version)
FORMAT = str(_subevict.learned_model_format)
VERSION = int(_subevict.learned_model_version)

# How each feature enters a net by default: (transform, members_scaled, offset). Attention features
# are scaled by |G_i| (their mean over G_i is then the group size g whatever the budget) and logged;
# counts are logged; the rest enter as they are.
DEFAULT_INPUTS = {
    "accumulated_attention": ("log", True, 1e-3),
    "current_attention": ("log", True, 1e-3),
    "window_attention": ("log", True, 1e-3),
    "age": ("log", False, 1.0),
    "position": ("log", False, 1.0),
    "sink": ("identity", False, 0.0),
    "key_norm": ("identity", False, 0.0),
    "value_norm": ("identity", False, 0.0),
    "key_mean_cosine": ("identity", False, 0.0),
    "attention_trend": ("identity", True, 0.0),
    "layer": ("identity", False, 0.0),
    "kv_head": ("identity", False, 0.0),
}


def step_sizes(offsets: np.ndarray) -> np.ndarray:
    """|G_i| of each row: the size of the recorded step it belongs to."""
    offsets = np.asarray(offsets, dtype=np.int64)
    return np.repeat(np.diff(offsets), np.diff(offsets))


def raw_inputs(features: np.ndarray, members: np.ndarray, inputs: Sequence[Mapping]) -> np.ndarray:
    """The inputs before standardization, one column per input: T(f * (|G_i| or 1) + offset), a log
    of a value <= 0 taken at the offset (as the C++ model does)."""
    columns = []
    for spec in inputs:
        f = features[:, FEATURES.index(spec["feature"])].astype(np.float64)
        v = f * (members if spec["members_scaled"] else 1.0) + spec["offset"]
        if spec["transform"] == "log":
            v = np.log(np.where(v > 0.0, v, spec["offset"]))
        columns.append(v)
    return np.stack(columns, axis=1)


def net_scores(net: Mapping, features: np.ndarray, members: np.ndarray) -> np.ndarray:
    """The keep scores of the rows of `features` (float64 [rows, features]) under one net of a model
    document; `members` is each row's |G_i|."""
    x = raw_inputs(features, members, net["inputs"])
    mean = np.array([spec["mean"] for spec in net["inputs"]])
    scale = np.array([spec["scale"] for spec in net["inputs"]])
    x = (x - mean) * (1.0 / scale)  # as the C++ policy: a multiply by the reciprocal
    for layer in net["dense"]:
        x = x @ np.asarray(layer["weights"], dtype=np.float64).T + np.asarray(layer["bias"], dtype=np.float64)
        if layer["activation"] == "relu":
            x = np.maximum(x, 0.0)
        elif layer["activation"] == "tanh":
            x = np.tanh(x)
    return x[:, 0]


def net_for(model: Mapping, layer: int) -> Mapping:
    """The net serving model layer `layer`: the one listing it, else the default (layers null)."""
    fallback = None
    for net in model["nets"]:
        if net["layers"] is None:
            fallback = net
        elif layer in net["layers"]:
            return net
    if fallback is None:
        raise _subevict.InputError(f"learned model: nets: expected a net for model layer {layer}, got none")
    return fallback


def decision_rows(model: Mapping, trace: Mapping, layer: int) -> np.ndarray:
    """The row (index into the trace's rows) of the member the model evicts at each recorded step
    of a feature trace (lowest score, ties: the lowest token), as the C++ policy decides."""
    net = net_for(model, layer)
    offsets = np.asarray(trace["offsets"])
    scores = net_scores(net, np.asarray(trace["features"]), step_sizes(offsets))
    tokens = np.asarray(trace["tokens"])
    out = np.empty(len(offsets) - 1, dtype=np.int64)
    for s in range(len(out)):
        a, b = offsets[s], offsets[s + 1]
        out[s] = a + np.lexsort((tokens[a:b], scores[a:b]))[0]
    return out


def decisions(model: Mapping, trace: Mapping, layer: int) -> np.ndarray:
    """The token the model evicts at each recorded step of a feature trace (decision_rows' members)."""
    return np.asarray(trace["tokens"])[decision_rows(model, trace, layer)].astype(np.int64)


def write_model(model: Mapping, path: os.PathLike) -> None:
    """Writes a model document as the C++ policy reads it (complete or not at all: a temporary file
    renamed into place)."""
    tmp = f"{os.fspath(path)}.tmp"
    with open(tmp, "w") as f:
        json.dump(model, f, indent=1)
        f.write("\n")
    os.replace(tmp, path)


def read_model(path: os.PathLike) -> dict:
    with open(path) as f:
        return json.load(f)


def row_lifetimes(trace: Mapping) -> np.ndarray:
    """Each row's remaining lifetime (the steps its member stays after the row's step; 0: evicted
    at that step): the trace's "row_lifetime" where it has one (on-policy traces labelled by a
    window optimum), else from its schedule's last_step (traces along the optimum)."""
    if "row_lifetime" in trace:
        return np.asarray(trace["row_lifetime"], dtype=np.int64)
    offsets = np.asarray(trace["offsets"], dtype=np.int64)
    step_of_row = np.repeat(np.asarray(trace["steps"], dtype=np.int64), np.diff(offsets))
    return np.asarray(trace["last_step"], dtype=np.int64)[np.asarray(trace["tokens"], dtype=np.int64)] - step_of_row + 1


def _dataset(traces: Sequence[Mapping], inputs: Sequence[Mapping], candidates: int, rng: np.random.Generator):
    """Stacks feature traces: raw inputs, the step of each row, each step's target row and each row's
    remaining lifetime under the replayed schedule (the steps it stays after this one: its token's
    last_step minus the step, plus 1; 0 for the member evicted at this step). With
    candidates > 0 a step keeps its target and at most `candidates` - 1 other members drawn
    uniformly (the loss then runs over that sample)."""
    xs, seg, targets, lifetimes = [], [], [], []
    rows = steps = 0
    for t in traces:
        offsets = np.asarray(t["offsets"], dtype=np.int64)
        evicted = np.asarray(t["evicted_row"], dtype=np.int64)
        life = row_lifetimes(t)
        raw = raw_inputs(np.asarray(t["features"]), step_sizes(offsets), inputs)
        for s in range(len(offsets) - 1):
            if evicted[s] < 0:
                continue
            a, b = int(offsets[s]), int(offsets[s + 1])
            others = np.delete(np.arange(a, b), evicted[s])
            if candidates > 0 and len(others) > candidates - 1:
                others = np.sort(rng.choice(others, candidates - 1, replace=False))
            chosen = np.concatenate([[a + evicted[s]], others])
            xs.append(raw[chosen])
            lifetimes.append(life[chosen])  # 0: leaves at this step
            seg.append(np.full(len(chosen), steps))
            targets.append(rows)
            rows += len(chosen)
            steps += 1
    return (np.concatenate(xs), np.concatenate(seg), np.asarray(targets, dtype=np.int64),
            np.concatenate(lifetimes).astype(np.float64))


def train(traces: Sequence[Mapping], *, feature_options: Mapping, hidden: int = 16,
          features: Optional[Iterable[str]] = None,
          l2: float = 1e-4, iterations: int = 200, candidates: int = 64, seed: int = 0,
          layers: Optional[Sequence[int]] = None, activation: str = "relu", target: str = "evicted",
          leaving_within: int = 32) -> dict:
    """Fits one net to feature traces recorded along the optimum's schedules (subevict.feature_trace
    with the optimum's `last_step`): the per-step softmax of the negated scores over G_i against the
    member the optimum evicted. `hidden` = 0 fits a linear score, else one hidden layer of that width
    with `activation` ("relu", the default: the C++ policy's cheapest, or "tanh"). `target`
    "lifetime" fits instead every sampled member's log(1 + remaining lifetime) under the optimum
    (least squares; the member expected to leave soonest then scores lowest). `target` "leaving" fits
    the per-step softmax against the set of members the optimum evicts within the next
    `leaving_within` steps (remaining lifetime < leaving_within; the loss is -log of the softmax mass
    on that set): the optimum's one victim is one of many members whose eviction costs almost
    nothing (docs/learned_policy.md, "Near-ties"), and this target asks only that the lowest score
    fall among them. leaving_within = 1 is the "evicted" target.
    `features` restricts the inputs (default: every feature), e.g. for ablations; `candidates`
    bounds the members per step in the loss (the target and a seeded uniform sample of the others;
    0: all). Returns a model
    document with this one net serving `layers` (None: every layer). Deterministic for a seed."""
    import torch

    if activation not in ("relu", "tanh"):
        raise ValueError(f"train: activation: expected relu or tanh, got {activation!r}")
    if target not in ("evicted", "lifetime", "leaving"):
        raise ValueError(f"train: target: expected evicted, lifetime or leaving, got {target!r}")
    if not isinstance(leaving_within, (int, np.integer)) or leaving_within < 1:
        raise ValueError(f"train: leaving_within: expected an integer >= 1, got {leaving_within!r}")
    hidden_fn = torch.relu if activation == "relu" else torch.tanh
    names = list(FEATURES if features is None else features)
    inputs = [dict(feature=n, transform=DEFAULT_INPUTS[n][0], members_scaled=DEFAULT_INPUTS[n][1],
                   offset=DEFAULT_INPUTS[n][2], mean=0.0, scale=1.0) for n in names]
    raw, seg, targets, lifetimes = _dataset(traces, inputs, candidates, np.random.default_rng(seed))
    log_life = np.log1p(lifetimes)
    life_t = torch.from_numpy((log_life - log_life.mean()) / max(float(log_life.std()), 1e-12))
    mean = raw.mean(axis=0)
    scale = raw.std(axis=0)
    scale = np.where(scale > 1e-12, scale, 1.0)
    for spec, m, s in zip(inputs, mean, scale):
        spec["mean"], spec["scale"] = float(m), float(s)
    x = torch.from_numpy((raw - mean) / scale)
    seg_t = torch.from_numpy(seg)
    target_t = torch.from_numpy(targets)
    # Rows in the target set: the evicted member (lifetime 0) always, and with the "leaving"
    # target every member the schedule evicts within leaving_within steps.
    within = 1 if target != "leaving" else leaving_within
    positive_t = torch.from_numpy((lifetimes < within).astype(np.float64))
    steps = int(seg.max()) + 1 if len(seg) else 0
    generator = torch.Generator().manual_seed(seed)
    dims = [len(names)] + ([hidden] if hidden > 0 else []) + [1]
    params = []
    for a, b in zip(dims[:-1], dims[1:]):
        w = (torch.rand(b, a, generator=generator, dtype=torch.float64) * 2 - 1) / np.sqrt(a)
        params += [w.requires_grad_(), torch.zeros(b, dtype=torch.float64, requires_grad=True)]

    def forward(inp):
        h = inp
        for i in range(0, len(params), 2):
            h = h @ params[i].T + params[i + 1]
            if i + 2 < len(params):
                h = hidden_fn(h)
        return h[:, 0]

    def loss_fn():
        if target == "lifetime":
            return ((forward(x) - life_t) ** 2).mean() + l2 * sum((p ** 2).sum() for p in params[::2])
        logits = -forward(x)
        with warnings.catch_warnings():  # scatter_reduce is "beta" in torch 1.13; its amax is all it is used for
            warnings.simplefilter("ignore", UserWarning)
            top = torch.full((steps,), -np.inf, dtype=torch.float64).scatter_reduce(0, seg_t, logits.detach(), "amax")
        weights = torch.exp(logits - top[seg_t])
        denom = torch.zeros(steps, dtype=torch.float64).index_add(0, seg_t, weights)
        if target == "leaving":
            on_set = torch.zeros(steps, dtype=torch.float64).index_add(0, seg_t, weights * positive_t)
            nll = (torch.log(denom) - torch.log(on_set)).mean()
        else:
            nll = (torch.log(denom[seg_t[target_t]]) + top[seg_t[target_t]] - logits[target_t]).mean()
        return nll + l2 * sum((p ** 2).sum() for p in params[::2])

    optimizer = torch.optim.LBFGS(params, lr=1.0, max_iter=iterations, history_size=20,
                                  tolerance_grad=1e-9, tolerance_change=1e-12, line_search_fn="strong_wolfe")

    def closure():
        optimizer.zero_grad()
        loss = loss_fn()
        loss.backward()
        return loss

    optimizer.step(closure)
    dense = []
    for i in range(0, len(params), 2):
        last = i + 2 >= len(params)
        dense.append(dict(activation="identity" if last else activation,
                          weights=params[i].detach().numpy().tolist(), bias=params[i + 1].detach().numpy().tolist()))
    return model_document([dict(layers=None if layers is None else list(layers), inputs=inputs, dense=dense)],
                          feature_options)


def model_document(nets: Sequence[Mapping], feature_options: Mapping, **provenance) -> dict:
    """A model file's document: the format, versions, feature names and options, and the nets."""
    doc = dict(format=FORMAT, version=VERSION, features_version=FEATURES_VERSION, features=list(FEATURES),
               feature_options=dict(window=int(feature_options["window"]), sinks=int(feature_options["sinks"]),
                                    trend_rate=float(feature_options["trend_rate"])),
               nets=list(nets))
    if provenance:
        doc["provenance"] = provenance
    return doc


def top1(model: Mapping, traces: Sequence[Mapping], layers: Sequence[int], within: int = 1) -> float:
    """The share of recorded steps at which the model evicts the member the trace's policy evicted
    (for traces along the optimum: how often it makes the optimum's choice). within > 1: at which
    it evicts a member whose remaining lifetime (row_lifetimes) is below `within`."""
    hits = total = 0
    for t, layer in zip(traces, layers):
        chosen = decision_rows(model, t, layer)
        offsets = np.asarray(t["offsets"])
        rows = np.asarray(t["evicted_row"])
        ok = rows >= 0
        if within == 1:
            hits += int((chosen[ok] == offsets[:-1][ok] + rows[ok]).sum())
        else:
            hits += int((row_lifetimes(t)[chosen[ok]] < within).sum())
        total += int(ok.sum())
    return hits / max(total, 1)
