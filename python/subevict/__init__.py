"""subevict: the theory of KV-cache eviction, executable, from Python.

The compiled library (subevict._subevict) does the work; this module gives it a Pythonic face.
Every function takes and returns NumPy arrays; bad input raises subevict.InputError (a
ValueError) with the library's message, and a policy that breaks the eviction contract raises
subevict.PolicyContractError naming the step. See docs/python.md.

    import subevict
    w = subevict.generate("llama2-7b", tokens=512, seed=7)
    runs = subevict.simulate(w, ["h2o", "tova"], budget=0.2, kv_heads=[0])
    print(runs[0]["policies"]["h2o"]["mean_retained_mass"], runs[0]["optimum"]["total"] / w.tokens)
"""

from __future__ import annotations

import json
import numbers
import os
from typing import Any, Iterable, Optional, Sequence, Union

from . import _subevict
from ._subevict import (
    InputError,
    PolicyContractError,
    SetFunction,
    Workload,
    allocate,
    attention,
    budget_curve,
    budget_size,
    check_ids,
    exact_optimum,
    facility_location,
    gain_matrix,
    generate,
    greedy,
    inspect,
    modular,
    offline_optimum,
    parse_budgets,
    policy_names,
    policy_parameters,
    policy_specs,
    presets,
    read_workload,
    schedule_value,
    shared_optimum,
    step_oracle,
    tracked_attention,
    weighted_coverage,
    write_workload,
)
from .evicted_forward import closed_loop
from .policies import Decisions, Policy, ScorePolicy

__all__ = [
    "Decisions", "InputError", "PolicyContractError", "Policy", "ScorePolicy", "SetFunction", "Workload", "allocate", "attention",
    "budget_curve", "budget_size", "check_ids", "closed_loop", "exact_optimum", "facility_location", "feature_trace", "gain_matrix", "generate", "greedy", "inspect",
    "modular", "offline_optimum", "parse_budgets", "policy_names", "policy_parameters", "policy_specs", "presets", "read_workload",
    "schedule_value", "share", "shared_optimum", "simulate", "step_oracle", "tracked_attention", "verify", "weighted_coverage",
    "write_workload",
]

__version__ = "0.1.0"


def _int_list(value: Union[int, Iterable[int], None], name: str) -> Optional[list]:
    """None, an int, or an iterable of ints, as a list of ints (InputError otherwise)."""
    if value is None:
        return None
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return [int(value)]
    if isinstance(value, (str, bytes)):
        raise InputError(f"{name}: expected an int or a list of ints, got {value!r}")
    try:
        items = list(value)
    except TypeError:
        raise InputError(f"{name}: expected an int or a list of ints, got {type(value).__name__}") from None
    for item in items:
        if not isinstance(item, numbers.Integral) or isinstance(item, bool):
            raise InputError(f"{name}: expected ints, got {item!r}")
    return [int(item) for item in items]


def _budget_list(budget: Union[float, Sequence[float]]) -> list:
    if isinstance(budget, numbers.Real) and not isinstance(budget, bool):
        return [float(budget)]
    if isinstance(budget, (str, bytes)):
        raise InputError(f"simulate: budget: expected a number or a list of numbers, got {budget!r}")
    items = list(budget)
    for item in items:
        if not isinstance(item, numbers.Real) or isinstance(item, bool):
            raise InputError(f"simulate: budget: expected numbers, got {item!r}")
    return [float(item) for item in items]


def simulate(workload: Workload, policies: Union[str, Any, Sequence[Any]] = "h2o,local,streamingllm,l2norm,tova,random",
             budget: Union[float, Sequence[float]] = 0.2, layers: Union[int, Iterable[int]] = 0,
             kv_heads: Union[int, Iterable[int], None] = None, optimum: str = "flow", gap: float = 1e-4,
             seed: int = 0, horizon: int = 16, record_cache: bool = False, overlap: bool = False,
             model_layer: Optional[int] = None, optimum_rows: Union[int, Iterable[int], None] = None) -> list:
    """Runs eviction policies on (layer, KV head) groups of `workload` against the offline optimum.

    The same process, policies, optimum and units as `subevict simulate` (masses are means over the
    query heads of a KV head, so a step contributes at most 1).

    policies: a policy list string as on the command line ("h2o:heavy=0.25,tova"), a Python policy
        object (subevict.Policy or subevict.ScorePolicy, or anything with evict() or score()), a
        recorded schedule (subevict.Decisions), or a list mixing them; an empty list computes only
        the optimum (optimum != "none").
    budget: a ratio in (0, 1) of the sequence length or an integer size, or a list of them.
    layers, kv_heads: an int or a list (kv_heads default: every KV head).
    optimum: "flow" (offline optimum and per-step oracle), "certified" (a feasible schedule and a
        certified upper bound per budget, stopping at the relative gap `gap`: OPT in
        [optimum["total"], optimum["upper_bound"]]), "oracle" (oracle only) or "none". Every budget
        of a head is solved in one call, as `subevict simulate` does.
    record_cache: also return every step's cache S_i (memory O(n k) per policy).
    overlap: with optimum="flow", also each policy's step-by-step overlap with the optimum's cache
        (as `subevict simulate --schedules`): trace["overlap_with_optimum"] = {"jaccard",
        "policy_only_mass", "optimum_only_mass" (float64 [n]: |G_i(P) & G_i(OPT)| / |G_i(P) | G_i(OPT)|
        and the attention of the tokens only one of them holds), and their step means "mean_..."}.
    model_layer: with exactly one selected layer, the model layer it is (a workload holding one layer
        of a larger model): the index that per-layer policy rules (l2norm's skip_first) and the seeds
        of randomized policies read; default the selected layer's own index.
    optimum_rows: query rows R (steps in [0, n), any order, duplicates merged; default every row):
        the optimum and the oracle are those of the gains restricted to R's rows (W'_ij = W_ij for i
        in R, else 0): optimum["total"] is the most mass an irreversible cache keeps on R's rows when
        it knows R in advance (the "question-aware" optimum), optimum["step_mass"] and
        oracle["per_step"] are 0 off R. The policies are unchanged: a policy's R-mass is
        trace["retained_mass"][R].sum() (R deduplicated), which optimum["total"] bounds.

    Returns one dict per (layer, KV head, budget), layers outer, budgets inner:
        {"layer", "kv_head", "budget" (as given), "budget_size" (k), "group_size" (g), "tokens" (n),
         "policies": {label: {"total_retained_mass", "mean_retained_mass", "mean_output_error",
                              "oracle_policy", "compressed", "budget_size", "last_step" (int32 [n]),
                              "retained_mass", "total_variation", "output_error" (float64 [n]),
                              "evicted" (int32 [n], -1: none), "head_retained_mass",
                              "head_output_error" (float64 [n, g]), "cache" (record_cache),
                              "precompute_seconds", "step_seconds"}},
         "optimum": None or {"status", "total", "upper_bound", "step_mass", "last_step", "arcs",
                             "nodes", "seconds", "message"},
         "oracle": None or {"total", "per_step"}, "oracle_total" (when computed)}
    """
    if not isinstance(workload, Workload):
        raise InputError(f"simulate: workload: expected a subevict.Workload, got {type(workload).__name__}")
    if isinstance(policies, str) or not isinstance(policies, (list, tuple)):
        policies = [policies]
    layer_list = _int_list(layers, "simulate: layers")
    head_list = _int_list(kv_heads, "simulate: kv_heads")
    rows = _int_list(optimum_rows, "simulate: optimum_rows")
    return _subevict._simulate(workload, list(policies), _budget_list(budget), layer_list, head_list, optimum,
                               float(gap), int(seed), int(horizon), bool(record_cache), bool(overlap),
                               None if model_layer is None else int(model_layer), optimum_rows=rows)


def feature_trace(workload: Workload, layer: int, kv_head: int, budget: Union[float, int], *, policy: Optional[str] = None,
                  schedule: Optional[Sequence[int]] = None, prefill: int = 0, every: int = 1, window: int = 32,
                  sinks: int = 4, trend_rate: float = 0.125, model_layer: Optional[int] = None) -> dict:
    """The online features of the members of G_i at the full steps of one run on (layer, KV head)
    (docs/learned_policy.md): the learned policy's training data along the optimum's schedule, and
    what a policy saw when it decided.

    policy: a policy spec ("h2o", "learned:model=FILE"), or schedule: a schedule t_j (a trace's or the
        optimum's "last_step", int [n]) replayed at this budget; exactly one of them.
    budget: a ratio in (0, 1) of the sequence length or an integer size.
    every: record the full steps i with i % every == 0.
    window, sinks, trend_rate: the feature options (docs/eviction.md, "Online features").
    model_layer: the layer index the policy and the layer feature read (default: `layer`).

    Returns {"features" (float64 [rows, len(subevict.learned.FEATURES)]), "steps" (int32 [S]),
    "offsets" (int32 [S + 1]: step s owns rows offsets[s]..offsets[s+1]-1), "tokens" (int32 [rows]:
    each row's member), "evicted_row" (int32 [S]: the row, from offsets[s], that was evicted),
    "evicted" (int32 [n]: the run's evicted token per step, -1 none), "last_step" (int32 [n]),
    "budget" (the k used)}.
    """
    if not isinstance(workload, Workload):
        raise InputError(f"feature_trace: workload: expected a subevict.Workload, got {type(workload).__name__}")
    if (policy is None) == (schedule is None):
        raise InputError("feature_trace: policy: expected exactly one of policy and schedule")
    k = budget_size(float(budget), workload.shape["tokens"], "feature_trace")
    steps = None if schedule is None else [int(t) for t in schedule]
    return _subevict._feature_trace(workload, int(layer), int(kv_head), policy or "", steps, k, int(prefill), int(every),
                                    int(window), int(sinks), float(trend_rate),
                                    None if model_layer is None else int(model_layer))


def share(workload: Workload, budget: float = 0.2, layers: Union[int, Iterable[int], None] = None,
          scope: str = "layer", rules: Union[str, Sequence[str]] = (), policies: Union[str, Sequence[str]] = "h2o",
          curves: Union[str, os.PathLike, None] = None, shared_seconds: float = 600.0, threads: int = 1,
          seed: int = 0, quiet: bool = True) -> dict:
    """The share study, as `subevict simulate --share SCOPE` runs it (the library's share_study):
    adaptive budget rules, each with every scoring policy, against three optima of one total
    budget on every KV head of `layers` (default: all): uniform per-head OPT, the optimal static
    allocation and the optimum of one cache shared over time (docs/allocation.md).

    budget: the mean per KV head, a ratio in (0, 1) of the sequence length or an integer size.
    scope: "layer" (each layer's KV heads share H k slots) or "model" (every selected KV head
        shares L H k slots).
    rules: uniform, adakv[:alpha_safeguard=A], pyramidkv[:window_size=W,beta=B] (model only),
        duo[:head_compression_ratio=R,sink_size=S,recent_size=N,calibration=C]; default: all the
        scope allows. policies: the scorers (policies that rank), as simulate's --policies.
    curves: a budget_curve.csv (simulate --budget-curve) to read the static optimum's curves from
        instead of computing them.
    shared_seconds: the column generation's time limit where the explicit network does not fit.

    Masses are sums over the query heads of a KV head (the optima's objective). Returns
        {"scope", "budget_size" (k), "tokens", "curve_length", "static_capped", "shared_note",
         "heads": [{"layer", "kv_head", "uniform_opt", "static_budget", "static_opt"}],
         "units": [{"name", "heads" (indices into heads), "shared_opt", "shared_bound",
                    "shared_mean_slots" (per head of the unit)}],
         "runs": [{"rule", "scorer", "note", "retained" (per head), "mean_slots" (per head),
                   "peak" (per unit)}]}.
    InputError (source "share") for bad input, before any work."""
    layer_list = _int_list(layers, "share: layers")
    if layer_list is None:
        layer_list = list(range(workload.layers))
    if not isinstance(budget, numbers.Real) or isinstance(budget, bool):
        raise InputError(f"share: budget: expected a number, got {budget!r}")
    rule_text = rules if isinstance(rules, str) else ",".join(rules)
    policy_text = policies if isinstance(policies, str) else ",".join(policies)
    return _subevict._share(workload, layer_list, float(budget), rule_text, policy_text, str(scope),
                            "" if curves is None else os.fspath(curves), float(shared_seconds), int(threads),
                            int(seed), bool(quiet))


def verify(workload: Union[Workload, str, os.PathLike, None] = None, *, checks: Sequence[str] = (),
           policies: Union[str, Sequence[str]] = (), layers: Union[int, Iterable[int], None] = None,
           preset: str = "llama2-7b", tokens: int = 1024, seed: int = 7, effort: float = 1.0,
           budget_ratio: float = 0.2, output: Union[str, os.PathLike, None] = None) -> dict:
    """Runs the registry of checks, as `subevict verify`, and returns results.json as a dict.

    workload: a Workload, a path (read as `verify --workload PATH`), or None for the built-in LLM-like
        workload of `preset`, `tokens` and `seed` (layer 0 unless `layers`).
    checks: ids to run (check_ids(); default all). policies: the policies
        h2o.greedy_vs_offline_optimum compares (spec lists as `verify --policy`).
    output: also write the report directory (report.md, results.json, plots) there.
    The dict holds "settings", "checks" (one entry per check: id, kind, outcome, key_number,
    measurements, ...) and "summary" (with the summary line the command prints).
    """
    source = None
    if isinstance(workload, (str, os.PathLike)):
        source = os.fspath(workload)
        workload = read_workload(source)
    elif workload is not None and not isinstance(workload, Workload):
        raise InputError(f"verify: workload: expected a Workload, a path or None, got {type(workload).__name__}")
    if isinstance(policies, str):
        policies = [policies]
    if isinstance(checks, str):
        checks = [checks]
    text = _subevict._verify(workload, preset, int(tokens), _int_list(layers, "verify: layers"), list(checks),
                             list(policies), int(seed), float(effort), float(budget_ratio),
                             None if output is None else os.fspath(output), source)
    return json.loads(text)
