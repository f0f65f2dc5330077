"""Tests of the closed loop (subevict.closed_loop, scripts/closed_loop.py) on the real model,
SmolLM2-135M-Instruct (scripts/setup_model), on the first TOKENS tokens of Debian's GPL-3 text.

Run with the project's venv after scripts/python_package (scripts/test does):
    .venv/bin/python -m pytest -q tests/closed_loop
Nothing is skipped: without the model, torch or the package every test fails and says why.

Each check is a function returning its failures, so that a test can show the same check failing on
a deliberately broken closed loop (a mask that lets query i see one key outside its cache).
"""

import copy
import os
import re
import subprocess
import sys

import numpy as np
import pytest
import torch

import subevict
from subevict import evicted_forward, models
from subevict.models import attention
from subevict.models.next_token import next_token_metrics

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TEXT = "/usr/share/common-licenses/GPL-3"
TOKENS = 128  # the issue asks the token-by-token decode for >= 128 tokens
BUDGET = 24
# More than two of attend's 256-row blocks of queries (256, 256, 8): the smallest length where a
# block's rows start neither at 0 nor at the last one; eviction in two layers (the others keep the
# full cache, through the same blocks), the first one not layer 0.
LONG_TOKENS = 520
LONG_BUDGET = 64
LONG_LAYERS = [3, 17]
# Per-token log-probabilities of two float32 forwards that sum in different orders (one position
# at a time against all positions at once): measured differences are ~1e-5; 1e-3 is the bound.
LOGPROB_TOL = 1e-3
# h2o accumulated scores closer than this (relative) are a near-tie: float32 Q/K computed one row
# at a time or as one matrix may order them either way.
NEAR_TIE_RTOL = 1e-5
# A record's masses against their recomputation here: double sums over n steps of the same
# attention rows, the optimum's from integer-scaled arc costs (the mass-order check's slack).
RECORD_RTOL = evicted_forward.MASS_ORDER_RTOL
# Key norms in float64 here against the policy's float32 np.linalg.norm: a relative 1e-6 covers
# float32 rounding of a 64-entry sum of squares.
NORM_RTOL = 1e-6


@pytest.fixture(scope="module")
def setup():
    result = subprocess.run([os.path.join(ROOT, "scripts", "setup_model")], capture_output=True,
                            text=True, timeout=900)
    assert result.returncode == 0, f"scripts/setup_model failed:\n{result.stderr}"
    path = result.stdout.strip().splitlines()[-1]
    model = models.load(path)
    with open(TEXT, encoding="utf-8") as stream:
        text = stream.read()
    return {"path": path, "model": model, "ids": models.tokenize(model, text, TOKENS)[0],
            "long_ids": models.tokenize(model, text, LONG_TOKENS)[0]}


def broken_keep(last_step):
    """The keep mask with one key too many per query: query i also sees the most recently evicted
    key (the latest t_j, ties to the lowest j), or, where nothing was evicted yet, the next token:
    a key outside G_i."""
    keep = models.keep_from_last_step(last_step).clone()
    t = torch.as_tensor(last_step, dtype=torch.int64)
    n = t.shape[-1]
    step = torch.arange(n).view(1, n, 1)
    token = torch.arange(n).view(1, 1, n)
    evicted = (token < step) & (t.unsqueeze(-2) + 1 < step)  # [kv_heads, i, j]
    latest = torch.where(evicted, (t.unsqueeze(-2) + 1) * (n + 1) - token, torch.tensor(-n))
    extra = torch.where(evicted.any(-1), latest.argmax(-1),
                        torch.clamp(torch.arange(n) + 1, max=n - 1))
    keep.scatter_(-1, extra.unsqueeze(-1), True)
    return keep


@pytest.fixture
def broken_mask(monkeypatch):
    monkeypatch.setattr(evicted_forward, "keep_from_last_step", broken_keep)


# ------------------------------------------------------------------------------------------------
# Check 1: a budget >= n is the full model, bit for bit.


def full_budget_failures(setup):
    n = TOKENS
    result = subevict.closed_loop(setup["model"], setup["ids"], "h2o,streamingllm,opt", [n],
                                  quiet=True)
    failures = []
    for run in result["runs"]:
        if not np.array_equal(run.metrics["token_logprob"], result["full"]["token_logprob"]):
            diff = np.abs(run.metrics["token_logprob"] - result["full"]["token_logprob"]).max()
            failures.append(f"{run.label}: log-probabilities differ from the full model by {diff}")
        if run.metrics["mean_kl"] != 0.0 or run.metrics["top1_agreement"] != 1.0:
            failures.append(f"{run.label}: KL {run.metrics['mean_kl']}, top-1 "
                            f"{run.metrics['top1_agreement']}")
    return failures


def test_budget_at_least_n_gives_the_full_model_exactly(setup):
    assert full_budget_failures(setup) == []


def test_full_budget_check_fails_on_a_broken_mask(setup, broken_mask):
    assert full_budget_failures(setup)


# ------------------------------------------------------------------------------------------------
# Check 2: an independent token-by-token decode with a KV cache that drops entries.


def decode(model, ids, policy, k, reference):
    """Token-by-token decoding: one position at a time through every layer, each (layer, KV head)
    holding a cache that drops one entry per step once it holds k (streamingllm: sinks 4, then the
    oldest; h2o: heavy = k // 2, recent = k - heavy, the smallest accumulated attention outside the
    recent window, ties to the lowest index). Returns (log-probabilities of each next token, the
    eviction step of every token per (layer, KV head) [layers, kv_heads, n] (n: never), number of
    near-ties). A near-tie follows `reference`'s schedule (the closed loop's last_step)."""
    n, g = int(ids.shape[0]), model.q_heads // model.kv_heads
    recent = k - k // 2
    cache = [[[] for _ in range(model.kv_heads)] for _ in range(model.layers)]
    keys = [[{} for _ in range(model.kv_heads)] for _ in range(model.layers)]
    acc = [[{} for _ in range(model.kv_heads)] for _ in range(model.layers)]
    evicted_at = np.full((model.layers, model.kv_heads, n), n, dtype=np.int64)
    logprobs, near_ties = [], 0
    with torch.no_grad():
        for i in range(n):
            hidden = model.embed(ids[i:i + 1])
            for layer in range(model.layers):
                q, kk, v = model.attention_inputs(layer, hidden, torch.tensor([i]))
                out = torch.empty(model.q_heads, 1, model.head_dim)
                for h in range(model.kv_heads):
                    members = cache[layer][h]
                    members.append(i)
                    keys[layer][h][i] = (kk[h, 0], v[h, 0])
                    K = torch.stack([keys[layer][h][j][0] for j in members])
                    V = torch.stack([keys[layer][h][j][1] for j in members])
                    rows = q[h * g:(h + 1) * g, 0]
                    weights = torch.softmax(rows @ K.T * model.score_scale, dim=-1)
                    out[h * g:(h + 1) * g, 0] = weights @ V
                    tracked = torch.softmax(rows.double() @ K.double().T * model.score_scale,
                                            dim=-1).sum(0)
                    scores = acc[layer][h]
                    for j, a in zip(members, tracked.tolist()):
                        scores[j] = scores.get(j, 0.0) + a
                    if len(members) <= k:
                        continue
                    if policy == "streamingllm":
                        victim = min(j for j in members if j >= 4)
                    else:
                        candidates = sorted((scores[j], j) for j in members if j <= i - recent)
                        victim = candidates[0][1]
                        if (len(candidates) > 1 and candidates[1][0] - candidates[0][0]
                                <= NEAR_TIE_RTOL * candidates[0][0]):
                            near_ties += 1
                            victim = next((j for _, j in candidates[:2]
                                           if reference[layer][h][j] + 1 == i), victim)
                    members.remove(victim)
                    evicted_at[layer, h, victim] = i
                hidden = model.attention_output(layer, hidden, out)
            if i + 1 < n:
                logp = torch.log_softmax(model.logits(hidden), dim=-1)[0]
                logprobs.append(float(logp[ids[i + 1]]))
    return np.array(logprobs), evicted_at, near_ties


# streamingllm's decode needs no reference (its decisions read no attention): one decode serves
# the check on the loop and on the broken loop.
_STREAMINGLLM_DECODE = {}


def decode_failures(setup, policy):
    model, ids = setup["model"], setup["ids"]
    result = subevict.closed_loop(model, ids, policy, [BUDGET], keep_schedules=True, quiet=True)
    [run] = result["runs"]
    schedule = [record.last_step for record in run.layers]
    if policy != "streamingllm":
        logprobs, evicted_at, near_ties = decode(model, ids, policy, BUDGET, schedule)
    else:
        if "decode" not in _STREAMINGLLM_DECODE:
            _STREAMINGLLM_DECODE["decode"] = decode(model, ids, policy, BUDGET, None)
        logprobs, evicted_at, near_ties = _STREAMINGLLM_DECODE["decode"]
    loop_evicted = np.stack(schedule) + 1
    failures = []
    mismatches = int((loop_evicted != evicted_at).sum())
    if mismatches:
        failures.append(f"{policy}: {mismatches} tokens evicted at other steps than in the loop")
    diff = float(np.abs(logprobs - run.metrics["token_logprob"]).max())
    if diff > LOGPROB_TOL:
        failures.append(f"{policy}: log-probabilities differ by up to {diff:.3g}")
    print(f"\n{policy}: max |log-prob diff| decode vs closed loop {diff:.3g}, near-ties {near_ties}",
          file=sys.stderr)
    evictions = int((evicted_at < TOKENS).sum())
    if near_ties > 0.05 * evictions:
        failures.append(f"{policy}: {near_ties} near-ties among {evictions} evictions")
    return failures


@pytest.mark.parametrize("policy", ["streamingllm", "h2o"])
def test_token_by_token_decode_equals_the_closed_loop(setup, policy):
    assert decode_failures(setup, policy) == []


def test_decode_check_fails_on_a_broken_mask(setup, broken_mask):
    assert decode_failures(setup, "streamingllm")


# ------------------------------------------------------------------------------------------------
# Check 3: the loop's decisions are simulate's on the closed-loop Q, K, V, exported and read back.


def test_decisions_in_the_loop_equal_simulate_on_the_exported_closed_loop_qkv(setup, tmp_path):
    policies = "h2o,l2norm,random,streamingllm,tova"
    result = subevict.closed_loop(setup["model"], setup["ids"], policies, [BUDGET],
                                  keep_schedules=True, keep_qkv=True, quiet=True)
    for run in result["runs"]:
        q, k, v = (np.stack([r.qkv[part] for r in run.layers]) for part in range(3))
        path = str(tmp_path / "loop.safetensors")
        subevict.write_workload(path, subevict.Workload(q, k, v,
                                                        score_scale=setup["model"].score_scale))
        workload = subevict.read_workload(path)
        cells = subevict.simulate(workload, run.label, budget=BUDGET,
                                  layers=list(range(setup["model"].layers)), optimum="none")
        for cell in cells:
            expected = cell["policies"][run.label]["last_step"]
            got = run.layers[cell["layer"]].last_step[cell["kv_head"]]
            assert np.array_equal(got, expected), (run.label, cell["layer"], cell["kv_head"])
        # l2norm's skipped layers are full caches in the loop too.
        if run.label == "l2norm":
            assert [r.compressed for r in run.layers[:3]] == [False, False, True]


# ------------------------------------------------------------------------------------------------
# Check 4: the optimum's cache keeps at least every policy's mass on each layer's closed-loop Q, K.


def mass_failures(run, opt_schedule):
    """Layers and KV heads of a policy run where the policy's schedule keeps more mass than
    `opt_schedule(record, h)` on that layer's closed-loop Q, K (gains recomputed here)."""
    failures = []
    for record in run.layers:
        if not record.compressed:
            continue
        workload = subevict.Workload(*(x[None] for x in record.qkv))
        for h in range(workload.kv_heads):
            gains = subevict.gain_matrix(workload, 0, h)
            policy = subevict.schedule_value(gains, record.last_step[h].tolist())
            best = subevict.schedule_value(gains, opt_schedule(record, h, gains).tolist())
            if policy > best * (1 + evicted_forward.MASS_ORDER_RTOL):
                failures.append((run.label, record.layer, h, policy, best))
    return failures


def test_opt_keeps_at_least_every_policys_mass_on_every_layer(setup):
    result = subevict.closed_loop(setup["model"], setup["ids"], "h2o,tova,snapkv,local,opt",
                                  [BUDGET], keep_schedules=True, keep_qkv=True, quiet=True)

    def optimum(record, h, gains):
        return subevict.offline_optimum(gains, BUDGET)["last_step"]

    for run in result["runs"]:
        assert mass_failures(run, optimum) == [], run.label
        assert run.summary(0.0)["mass_order_violations"] == 0, run.label
    assert record_failures(result["runs"], optimum, setup["model"].score_scale) == []


def record_failures(runs, opt_schedule, scale):
    """Where a run's LayerRecord numbers are not what they name, recomputed here from the layer's
    closed-loop Q, K: `mass` the value of the run's own schedule, `opt` the value of
    `opt_schedule(record, h, gains)` (opt's mass included: the schedule its cache used keeps OPT)."""
    failures = []
    for run in runs:
        for record in run.layers:
            workload = subevict.Workload(*(x[None] for x in record.qkv), score_scale=scale)
            g = workload.q_heads // workload.kv_heads  # gains sum the query heads, records average them
            for h in range(workload.kv_heads):
                gains = subevict.gain_matrix(workload, 0, h)
                best = subevict.schedule_value(gains, opt_schedule(record, h, gains).tolist()) / g
                own = subevict.schedule_value(gains, record.last_step[h].tolist()) / g
                for name, got, expected in (("opt", record.opt[h], best), ("mass", record.mass[h], own)):
                    if abs(got - expected) > RECORD_RTOL * expected:
                        failures.append((run.label, record.layer, h, name, got, expected))
    return failures


def test_record_check_fails_when_opt_is_a_policys_own_mass(setup, monkeypatch):
    """A loop that wrote each run's own mass as its OPT (so that every mass-order check holds by
    construction) is caught by the recomputed OPT."""
    real = evicted_forward.LayerRecord

    def self_bounded(layer, kind, head_compressed, mass, opt, topk, *rest):
        return real(layer, kind, head_compressed, mass, list(mass), topk, *rest)

    monkeypatch.setattr(evicted_forward, "LayerRecord", self_bounded)
    result = subevict.closed_loop(setup["model"], setup["ids"], "h2o", [BUDGET], layers=[4],
                                  keep_schedules=True, keep_qkv=True, quiet=True)
    assert result["runs"][0].summary(0.0)["mass_order_violations"] == 0  # what the check alone sees

    def optimum(record, h, gains):
        return subevict.offline_optimum(gains, BUDGET)["last_step"]

    assert record_failures(result["runs"], optimum, setup["model"].score_scale)


def test_mass_check_fails_when_the_optimum_is_replaced_by_a_policy(setup):
    result = subevict.closed_loop(setup["model"], setup["ids"], "h2o", [BUDGET],
                                  keep_schedules=True, keep_qkv=True, quiet=True)

    def local_schedule(record, h, gains):  # the last BUDGET tokens: not optimal
        n = gains.shape[0]
        return np.minimum(np.arange(n) + BUDGET - 1, n - 1)

    assert mass_failures(result["runs"][0], local_schedule)


# ------------------------------------------------------------------------------------------------
# Any policy: Python policies and recorded decisions run in the loop.


def test_recorded_decisions_of_h2o_reproduce_its_closed_loop_run(setup):
    first = subevict.closed_loop(setup["model"], setup["ids"], "h2o", [BUDGET],
                                 keep_schedules=True, quiet=True)["runs"][0]
    steps = np.stack([r.last_step for r in first.layers]).astype(np.int64) + 1
    replay = subevict.closed_loop(setup["model"], setup["ids"],
                                  [subevict.Decisions(steps, "h2o")], [BUDGET], quiet=True)
    run = replay["runs"][0]
    assert run.label == "recorded:h2o"
    assert np.array_equal(run.metrics["token_logprob"], first.metrics["token_logprob"])


def test_recorded_decisions_that_do_not_fit_are_refused_before_model_work(setup):
    steps = np.full((5, 3, TOKENS), TOKENS, dtype=np.int64)
    with pytest.raises(subevict.InputError, match="decisions for layer 29, got 5 layers"):
        subevict.closed_loop(setup["model"], setup["ids"], [subevict.Decisions(steps, "short")],
                             [BUDGET], quiet=True)
    with pytest.raises(subevict.InputError, match=f"a schedule of {TOKENS} tokens"):
        subevict.closed_loop(setup["model"], setup["ids"],
                             [subevict.Decisions(steps[:, :, :-1], "cut")], [BUDGET], quiet=True)


def test_python_score_policy_runs_and_evicts(setup):
    def low_key_norm(step, cache, q, K, V):  # keep the lowest key norms (l2norm's rule)
        return -np.linalg.norm(K, axis=1)

    result = subevict.closed_loop(setup["model"], setup["ids"],
                                  [subevict.ScorePolicy(low_key_norm, name="knorm_py")],
                                  [BUDGET], layers=[5, 6], keep_schedules=True, keep_qkv=True,
                                  quiet=True)
    [run] = result["runs"]
    assert [r.layer for r in run.layers] == [5, 6]
    assert all(r.compressed for r in run.layers)
    assert run.metrics["top1_agreement"] < 1.0  # eviction in two layers changes some predictions
    assert largest_norm_failures(run) == []


def largest_norm_failures(run):
    """Steps where the run's schedule did not evict a key of the largest norm among G_i (the rule
    of the score -||k_j||), replayed from its schedule on the layer's closed-loop keys: [(layer,
    KV head, step, evicted, norm, largest norm)]."""
    failures = []
    for record in run.layers:
        keys = record.qkv[1].astype(np.float64)
        for h in range(keys.shape[0]):
            norms = np.linalg.norm(keys[h], axis=1)
            t = record.last_step[h]
            for i in range(len(t)):
                members = [j for j in range(i + 1) if j == i or i <= t[j] + 1]  # G_i
                evicted = [j for j in members if t[j] == i - 1]  # in G_i, not in S_i
                if len(members) <= BUDGET:
                    if evicted:
                        failures.append((record.layer, h, i, evicted, "before the cache was full"))
                    continue
                largest = max(norms[j] for j in members)
                if len(evicted) != 1 or norms[evicted[0]] < largest * (1 - NORM_RTOL):
                    failures.append((record.layer, h, i, evicted, largest))
    return failures


def test_kept_keys_check_fails_on_a_policy_fed_the_wrong_keys(setup, monkeypatch):
    """The same policy handed the keys in reverse order (each score lands on another token) keeps
    other keys: the replay above names them."""
    real = subevict.ScorePolicy.score

    def shuffled(self, step, cache, q, K, V):
        return real(self, step, cache, q, K[::-1], V)

    monkeypatch.setattr(subevict.ScorePolicy, "score", shuffled)
    result = subevict.closed_loop(setup["model"], setup["ids"],
                                  [subevict.ScorePolicy(lambda step, cache, q, K, V:
                                                        -np.linalg.norm(K, axis=1), name="knorm_py")],
                                  [BUDGET], layers=[5], keep_schedules=True, keep_qkv=True, quiet=True)
    assert largest_norm_failures(result["runs"][0])


def test_tiny_budget_hurts_more_than_a_large_one(setup):
    result = subevict.closed_loop(setup["model"], setup["ids"], "local", [8, 64], quiet=True)
    small, large = result["runs"]
    assert small.metrics["mean_kl"] > large.metrics["mean_kl"] > 0.0
    assert small.metrics["perplexity"] > result["full"]["perplexity"]


# ------------------------------------------------------------------------------------------------
# Worker processes and one layer at a time: the same arithmetic as one process.


def test_worker_processes_give_the_runs_of_one_process(setup):
    args = (setup["model"], setup["ids"], "h2o,topk", [BUDGET])
    one = subevict.closed_loop(*args, quiet=True)
    two = subevict.closed_loop(*args, quiet=True, workers=2)
    assert [(r.label, r.budget_size) for r in one["runs"]] == [(r.label, r.budget_size) for r in two["runs"]]
    for a, b in zip(one["runs"], two["runs"]):
        assert a.metrics["nll"] == b.metrics["nll"], a.label
        assert np.array_equal(a.metrics["token_logprob"], b.metrics["token_logprob"]), a.label
        assert [(r.mass, r.opt, r.topk) for r in a.layers] == [(r.mass, r.opt, r.topk) for r in b.layers]
    # A Python policy object stays in this process (it may hold state its caller reads).
    calls = []
    policy = subevict.ScorePolicy(lambda step, cache, q, K, V: (calls.append(step), -cache.astype(float))[1],
                                  name="counting")
    subevict.closed_loop(setup["model"], setup["ids"], [policy, "local"], [BUDGET], layers=[3], quiet=True,
                         workers=2)
    assert calls, "the Python policy ran in a worker, where its state is lost"
    with pytest.raises(subevict.InputError, match="workers"):
        subevict.closed_loop(setup["model"], setup["ids"], "local", [BUDGET], workers=0)


def test_one_layer_at_a_time_equals_closed_loop_evicting_in_that_layer(setup):
    result = evicted_forward.one_layer_at_a_time(setup["model"], setup["ids"], "h2o,opt", BUDGET,
                                                 layers=[0, 17], quiet=True, workers=2)
    # (layer, cache) order; the references come first among the caches, as caches_of lists them.
    assert [(r.label, r.layers[0].layer) for r in result["runs"]] == [("opt", 0), ("h2o", 0), ("opt", 17),
                                                                      ("h2o", 17)]
    for run in result["runs"]:
        layer = run.layers[0].layer
        [alone] = subevict.closed_loop(setup["model"], setup["ids"], run.label, [BUDGET], layers=[layer],
                                       quiet=True)["runs"]
        assert run.metrics["nll"] == alone.metrics["nll"], (run.label, layer)
        assert run.layers[0].mass == alone.layers[0].mass


def test_layers_out_of_range_sliding_or_none_are_refused_by_name(setup):
    model, ids = setup["model"], setup["ids"]
    loops = (subevict.closed_loop, evicted_forward.one_layer_at_a_time)
    for loop in loops:
        with pytest.raises(subevict.InputError, match=r"^closed_loop: layers: indices in \[0, 30\), got 30$"):
            loop(model, ids, "h2o", BUDGET, layers=[30], quiet=True)
        with pytest.raises(subevict.InputError, match=r"^closed_loop: layers: expected at least one evicting "
                                                      r"layer \(None: every global layer\), got \[\]$"):
            loop(model, ids, "h2o", BUDGET, layers=[], quiet=True)
    # SmolLM2 has no sliding window: give its last layer one (a copy of the model; nothing runs).
    windowed = copy.copy(model)
    windowed.windows = [None] * (model.layers - 1) + [64]
    for loop in loops:
        with pytest.raises(subevict.InputError, match=r"^closed_loop: layers: layer 29 is a sliding-window layer "
                                                      r"\(64 keys\), and eviction runs on global layers only "
                                                      r"\(0,1,2,.*,27,28\)$"):
            loop(windowed, ids, "h2o", BUDGET, layers=[3, 29], quiet=True)
    # By default a windowed model evicts in its global layers only.
    assert evicted_forward.evicting_layers(windowed, None) == set(range(model.layers - 1))


# ------------------------------------------------------------------------------------------------
# Where a run starts: the full model's inputs of its first evicting layer are those layers' inputs.


def test_a_run_from_its_first_evicting_layer_equals_one_from_the_embeddings(setup):
    """closed_loop starts a run that evicts from layer l on at the full-cache run's input hidden
    states of layer l (the same arithmetic below l); run_cache without them goes through every
    layer from the embeddings. The two must agree bit for bit: a run started from another layer's
    states does not."""
    model, ids = setup["model"], setup["ids"]
    [cache] = evicted_forward.caches_of("h2o")
    layers = [13, 20]
    [run] = subevict.closed_loop(model, ids, "h2o", [BUDGET], layers=layers, quiet=True)["runs"]
    logp, _ = evicted_forward.run_cache(model, ids, cache, BUDGET, set(layers))
    expected = next_token_metrics(logp, logp, ids)["token_logprob"]
    assert np.array_equal(run.metrics["token_logprob"], expected)


# ------------------------------------------------------------------------------------------------
# Beyond one block of attend's rows: the loop's log-probabilities against a forward written here.


def reference_forward(model, ids, schedules):
    """Next-token log-probabilities (float64 [n - 1]) of the forward in which query i of layer l
    attends over G_i of schedules[l] (t_j per KV head; None: the full causal cache), with attention
    written here: per head one float64 softmax over every key, token j visible to query i exactly
    when j <= i <= e_j, e_j = t_j + 1 the step that evicts it (docs/eviction.md)."""
    n, g = int(ids.shape[0]), model.q_heads // model.kv_heads
    query = torch.arange(n).view(n, 1)
    token = torch.arange(n).view(1, n)
    with torch.no_grad():
        hidden = model.embed(ids)
        for layer in range(model.layers):
            q, k, v = model.attention_inputs(layer, hidden, torch.arange(n))
            out = torch.empty_like(q)
            for h in range(model.kv_heads):
                visible = token <= query
                if schedules[layer] is not None:
                    evicted_at = torch.as_tensor(schedules[layer][h], dtype=torch.int64).view(1, n) + 1
                    visible = visible & (query <= evicted_at)
                rows = slice(h * g, (h + 1) * g)
                scores = q[rows].double() @ k[h].double().T * model.score_scale
                weights = torch.softmax(scores.masked_fill(~visible, float("-inf")), dim=-1)
                out[rows] = (weights @ v[h].double()).float()
            hidden = model.attention_output(layer, hidden, out)
        logp = torch.log_softmax(model.logits(hidden).double(), dim=-1)
    return logp[:-1].gather(-1, ids[1:, None]).squeeze(-1).numpy()


def long_run_failures(setup):
    model = setup["model"]
    ids = setup["long_ids"]
    result = subevict.closed_loop(model, ids, "h2o", [LONG_BUDGET], layers=LONG_LAYERS,
                                  keep_schedules=True, quiet=True)
    [run] = result["runs"]
    schedules = [None] * model.layers
    for record in run.layers:
        schedules[record.layer] = record.last_step
    # Every layer goes through attend's blocks: the evicting ones with the schedule's mask, the
    # others with the full causal one.
    diff = float(np.abs(run.metrics["token_logprob"] - reference_forward(model, ids, schedules)).max())
    print(f"\nh2o at {LONG_TOKENS} tokens: max |log-prob diff| against the reference {diff:.3g}",
          file=sys.stderr)
    return [f"log-probabilities differ from the reference forward by {diff:.3g}"] if diff > LOGPROB_TOL else []


def test_several_attention_blocks_give_the_reference_forward(setup):
    assert LONG_TOKENS > 2 * attention.ATTEND_BLOCK_ROWS  # three blocks of query rows
    assert long_run_failures(setup) == []


def test_long_run_check_fails_on_a_broken_mask(setup, broken_mask):
    assert long_run_failures(setup)


# ------------------------------------------------------------------------------------------------
# The command: a report on a small run, and bad input.


def run_script(*args):
    return subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "closed_loop.py"), *args],
                          capture_output=True, text=True, timeout=900)


def test_command_writes_results_report_and_figures(setup, tmp_path):
    out = tmp_path / "report"
    result = run_script("--gguf", setup["path"], "--text-file", TEXT, "--tokens", "96",
                        "--policies", "h2o,opt,topk", "--budgets", "0.25,48", "-o", str(out))
    assert result.returncode == 0, result.stderr
    import json

    data = json.loads((out / "results.json").read_text())
    assert {r["policy"] for r in data["runs"]} == {"h2o", "opt", "topk"}
    assert sorted({r["budget_size"] for r in data["runs"]}) == [24, 48]
    assert data["settings"]["gguf_sha256"] == models.file_sha256(setup["path"])
    assert data["analysis"]["mass_order"]["outcome"] == "held"
    for name in ("report.md", "perplexity.svg", "mass_vs_perplexity.png"):
        assert (out / name).stat().st_size > 0
    assert "closed loop:" in result.stderr  # progress


BUDGET_EXPECTED = (r"^--budgets: expected a ratio in \(0, 1\) of the sequence length or an "
                   r"integer size in \[1, 2147483647\], got ")


@pytest.mark.parametrize("args, message", [
    (["--policies", "h2o,bogus"], r"bogus"),
    (["--budgets", "0"], BUDGET_EXPECTED + r"0$"),
    (["--budgets", "-0.5"], BUDGET_EXPECTED + r"-0\.5$"),
    (["--budgets", "0.1,inf"], BUDGET_EXPECTED + r"inf$"),
    (["--budgets", "nan"], BUDGET_EXPECTED + r"nan$"),
    (["--budgets", "2.5"], BUDGET_EXPECTED + r"2\.5$"),
    (["--budgets", "1e400"], BUDGET_EXPECTED + r"1e400$"),
    (["--budgets", "0.1,ten"], BUDGET_EXPECTED + r"ten$"),
    (["--budgets", ","], r"^--budgets: expected at least one budget, got ,$"),
    (["--tokens", "100000"], r"fewer than --tokens 100000"),
    (["--gguf", TEXT], r"is not a GGUF file"),
    (["--workers", "0"], r"--workers"),
])
def test_bad_input_exits_2_with_one_line(setup, tmp_path, args, message):
    base = {"--gguf": setup["path"], "--text-file": TEXT, "--tokens": "64", "--budgets": "0.5",
            "--policies": "local"}
    for key, value in zip(args[::2], args[1::2]):
        base[key] = value
    out = tmp_path / "out"
    result = run_script(*[x for kv in base.items() for x in kv], "-o", str(out))
    assert_refused(result, message)
    assert not out.exists()


def assert_refused(result, message):
    """Exit 2 and one line on stderr, "closed_loop: error: " and then `message` (a regex)."""
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("closed_loop: error: "), result.stderr
    assert re.search(message, lines[0][len("closed_loop: error: "):]), lines[0]


def unwritable_directory(tmp_path):
    """A directory where no file can be made: read-only to an ordinary user; root writes
    anywhere its mode allows, so there it is a directory of sysfs, which takes no new files."""
    if os.geteuid() != 0:
        folder = tmp_path / "read_only"
        folder.mkdir(mode=0o555)
        return str(folder)
    return "/sys/kernel"


@pytest.mark.parametrize("where, message", [
    ("file", r"^-o {out}: {out} is not a directory$"),
    ("file/sub", r"^-o {out}: {parent} is not a directory$"),
    ("unwritable/report", r"^-o {out}: cannot write a report there \(.+\)$"),
])
def test_an_output_that_cannot_be_written_is_refused_before_the_model_runs(setup, tmp_path, where,
                                                                           message):
    (tmp_path / "file").write_text("not a directory\n")
    out = where.replace("file", str(tmp_path / "file")).replace("unwritable",
                                                               unwritable_directory(tmp_path))
    parent = os.path.dirname(out)
    result = run_script("--gguf", setup["path"], "--text-file", TEXT, "--tokens", "64",
                        "--policies", "local", "--budgets", "0.5", "-o", out)
    # One line and nothing else: no model was loaded (that would print progress first).
    assert_refused(result, message.format(out=re.escape(out), parent=re.escape(parent)))
    assert (tmp_path / "file").read_text() == "not a directory\n"
    if where != "file":
        assert not os.path.exists(out)
