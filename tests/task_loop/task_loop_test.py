"""Tests of the task loop (subevict.task_loop, scripts/closed_loop_tasks.py) on the real model,
SmolLM2-135M-Instruct (scripts/setup_model), on a niah_single sample of about TOKENS tokens.

Run with the project's venv after scripts/python_package (scripts/test does):
    .venv/bin/python -m pytest -q tests/task_loop
Each check is a function returning its failures, so that a test can show it failing on a
deliberately broken loop (a mask that lets a query see one key outside its cache)."""

import copy
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

from subevict import _subevict, models, task_caches, task_loop, tasks
from subevict.task_forward import full_pass

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOKENS = 200
BUDGET = 24
# Log-probabilities of two float32 forwards that sum in different orders (one position at a time
# against all positions at once): measured differences ~1e-5; 1e-3 is the bound (as
# tests/closed_loop).
LOGPROB_TOL = 1e-3
# Masses: double sums of the same attention rows, the optimum's from integer-scaled arc costs.
MASS_RTOL = 1e-9
# float32 query and key products computed in another order move the prefill scores by ~1e-7
# relative; two scores closer than this are a near-tie that may go either way.
NEAR_TIE_RTOL = 1e-5


@pytest.fixture(scope="module")
def setup():
    result = subprocess.run([os.path.join(ROOT, "scripts", "setup_model")], capture_output=True, text=True,
                            timeout=900)
    assert result.returncode == 0, f"scripts/setup_model failed:\n{result.stderr}"
    path = result.stdout.strip().splitlines()[-1]
    model = models.load(path)
    tokenizer = tasks.tokenizer_of(path)
    sample = tasks.generate("niah_single", tokenizer, TOKENS, 0.5, 0)
    ids = torch.tensor(list(sample.ids) + list(sample.answer_ids))
    full_logp, full = full_pass(model, ids, slice(len(sample.ids) - 1, len(sample.ids)))
    full.last_prompt_logp = full_logp
    return {"path": path, "model": model, "tokenizer": tokenizer, "sample": sample, "full": full,
            "layers": set(range(model.layers))}


def run(setup, protocol, label, budget=BUDGET, trace=None, max_new_tokens=None):
    return task_loop.run_one(setup["model"], setup["sample"], protocol, label, budget, budget, setup["full"],
                             setup["layers"], setup["tokenizer"], 0, trace, max_new_tokens=max_new_tokens)


def broken_keep(last_step, out=None):
    """The keep mask with one key too many: every query from the first eviction on also sees the
    key evicted first (a key outside G_i); last_step of one KV head or several, as
    models.keep_from_last_step takes it."""
    keep = models.keep_from_last_step(last_step, out=out)
    t = torch.as_tensor(last_step, dtype=torch.int64)
    n = t.shape[-1]
    for row, mask in zip(t.reshape(-1, n), keep.view(-1, n, n)):
        evicted = torch.nonzero(row < n - 1).view(-1)
        if len(evicted):
            j = int(evicted[torch.argmin(row[evicted])])
            mask[int(row[j]) + 2:, j] = True
    return keep


@pytest.fixture
def broken_mask(monkeypatch):
    monkeypatch.setattr(task_caches, "keep_from_last_step", broken_keep)


# ------------------------------------------------------------------------------------------------
# An independent token-by-token decode: one position at a time through every layer, each (layer,
# KV head) holding its cache as a list of positions and its keys and values per position.


class Streamingllm:
    """sinks 4, then the most recent: evict the oldest non-sink once the cache holds more than k."""

    def __init__(self, k):
        self.k = k

    def after_step(self, members, scores, i, layer, h):
        if len(members) > self.k:
            members.remove(min(j for j in members if j >= 4))


class H2o:
    """heavy = k // 2, recent = k - heavy; the smallest accumulated attention (summed over the
    group, over the cache) among the tokens outside the recent window. Returns near-ties."""

    def __init__(self, k):
        self.k, self.recent, self.near_ties, self.evictions = k, k - k // 2, 0, 0

    def after_step(self, members, scores, i, layer, h):
        if len(members) > self.k:
            self.evictions += 1
            candidates = sorted((scores[j], j) for j in members if j <= i - self.recent)
            if len(candidates) > 1 and candidates[1][0] - candidates[0][0] <= NEAR_TIE_RTOL * candidates[0][0]:
                self.near_ties += 1
            members.remove(candidates[0][1])


class FixedPrefill:
    """The prefill protocols: full attention before c; after step c - 1 the cache of (layer, KV
    head) is the set sets[layer][h], then every new position is added."""

    def __init__(self, c, sets):
        self.c, self.sets = c, sets

    def after_step(self, members, scores, i, layer, h):
        if i == self.c - 1:
            members[:] = [int(j) for j in self.sets[layer][h]]


class Decoder:
    """Token-by-token decoding with a cache rule: after_step(members, scores, i, layer, h) drops
    from the (layer, KV head)'s cache what the rule drops after step i."""

    def __init__(self, model, rule):
        self.model, self.rule = model, rule
        self.g = model.q_heads // model.kv_heads
        layers, heads = model.layers, model.kv_heads
        self.members = [[[] for _ in range(heads)] for _ in range(layers)]
        self.kv = [[{} for _ in range(heads)] for _ in range(layers)]
        self.scores = [[{} for _ in range(heads)] for _ in range(layers)]
        self.position = 0

    def feed(self, token):
        """Feeds one token at the next position; returns its next-token log-probabilities."""
        m, g, i = self.model, self.g, self.position
        with torch.no_grad():
            hidden = m.embed(torch.tensor([token]))
            for layer in range(m.layers):
                q, k, v = m.attention_inputs(layer, hidden, torch.tensor([i]))
                out = torch.empty(m.q_heads, 1, m.head_dim)
                for h in range(m.kv_heads):
                    members = self.members[layer][h]
                    members.append(i)
                    self.kv[layer][h][i] = (k[h, 0], v[h, 0])
                    keys = torch.stack([self.kv[layer][h][j][0] for j in members])
                    values = torch.stack([self.kv[layer][h][j][1] for j in members])
                    rows = q[h * g:(h + 1) * g, 0]
                    out[h * g:(h + 1) * g, 0] = torch.softmax(rows @ keys.T * m.score_scale, dim=-1) @ values
                    tracked = torch.softmax(rows.double() @ keys.double().T * m.score_scale, dim=-1).sum(0)
                    scores = self.scores[layer][h]
                    for j, a in zip(list(members), tracked.tolist()):
                        scores[j] = scores.get(j, 0.0) + a
                    self.rule.after_step(members, scores, i, layer, h)
                hidden = m.attention_output(layer, hidden, out)
            self.position += 1
            return torch.log_softmax(m.logits(hidden), dim=-1)[0]


def reference(model, sample, rule, tokens=None):
    """(answer log-probability teacher-forced, the greedy answer) of an independent decode; the
    answer has `tokens` tokens (default the gold answer's)."""
    decoder = Decoder(model, rule)
    for token in sample.ids[:-1]:
        decoder.feed(token)
    branch = copy.deepcopy((decoder.members, decoder.scores, decoder.position))
    logp, answer_logprob = decoder.feed(sample.ids[-1]), 0.0
    for t, token in enumerate(sample.answer_ids):
        answer_logprob += float(logp[token])
        if t + 1 < len(sample.answer_ids):
            logp = decoder.feed(token)
    decoder.members, decoder.scores, decoder.position = branch
    generated, token = [], sample.ids[-1]
    for _ in range(tokens or len(sample.answer_ids)):
        token = int(decoder.feed(token).argmax())
        generated.append(token)
    return answer_logprob, generated


def decode_failures(setup, protocol, label, rule_of, max_new_tokens=None):
    trace = {}
    loop = run(setup, protocol, label, trace=trace, max_new_tokens=max_new_tokens)
    rule = rule_of(trace)
    logprob, generated = reference(setup["model"], setup["sample"], rule, max_new_tokens)
    failures = []
    if generated != loop.generated:
        failures.append(f"{protocol} {label}: generated {loop.generated}, the decode {generated}")
    if abs(logprob - loop.answer_logprob) > LOGPROB_TOL:
        failures.append(f"{protocol} {label}: answer log-probability {loop.answer_logprob}, the decode {logprob}")
    if getattr(rule, "near_ties", 0) > 0.05 * getattr(rule, "evictions", 0):  # as tests/closed_loop
        failures.append(f"{label}: {rule.near_ties} near-ties in {rule.evictions} evictions (not decisive)")
    if loop.first_wrong >= len(setup["sample"].answer_ids) - 1 and max_new_tokens is None:
        failures.append(f"{protocol} {label}: the answer was right, so nothing was decoded token by token")
    print(f"\n{protocol} {label}: first wrong token {loop.first_wrong}, generated {loop.text!r}, "
          f"log-probability {loop.answer_logprob:.4f} (decode {logprob:.4f})", file=sys.stderr)
    return failures


@pytest.mark.parametrize("label,rule", [("streamingllm", Streamingllm), ("h2o", H2o)])
def test_streaming_generation_equals_an_independent_token_by_token_decode(setup, label, rule):
    assert decode_failures(setup, "streaming", label, lambda trace: rule(BUDGET)) == []


# Past the gold answer (RULER's token limit): the loop's generated tokens, every one, equal those of
# the independent decode of as many tokens; the decode never stops early here (stop is None).
@pytest.mark.parametrize("protocol,label", [("streaming", "h2o"), ("prefill", "h2o"), ("streaming", "full")])
def test_generation_past_the_answer_equals_an_independent_decode(setup, protocol, label):
    tokens = len(setup["sample"].answer_ids) + 6
    if protocol == "streaming":
        rule_of = (lambda trace: H2o(BUDGET)) if label == "h2o" else (lambda trace: H2o(10 ** 6))
    else:
        rule_of = lambda trace: FixedPrefill(task_loop.compressed_end(setup["sample"], protocol), trace["cache"].sets)
    assert decode_failures(setup, protocol, label, rule_of, max_new_tokens=tokens) == []
    assert len(run(setup, protocol, label, max_new_tokens=tokens).generated) == tokens


def test_a_longer_decode_keeps_the_answers_tokens_metrics_and_log_probability(setup):
    answer = len(setup["sample"].answer_ids)
    for protocol, label in [("streaming", "snapkv"), ("prefill", "snapkv"), ("streaming", "opt-answer")]:
        short, long = run(setup, protocol, label), run(setup, protocol, label, max_new_tokens=answer + 5)
        assert long.generated[:answer] == short.generated, (protocol, label)
        assert (long.exact_match, long.answer_logprob, long.first_wrong) == (
            short.exact_match, short.answer_logprob, short.first_wrong), (protocol, label)
        assert len(long.generated) == answer + 5


def test_a_longer_decode_stops_after_the_stop_token_once_the_answers_length_is_reached(setup):
    answer = len(setup["sample"].answer_ids)
    for protocol in ("streaming", "prefill"):
        whole = run(setup, protocol, "h2o", max_new_tokens=answer + 6).generated
        for stop in (whole[0], whole[answer - 1], whole[answer]):  # the answer's first, its last, one past it
            end = next((j for j in range(answer - 1, len(whole)) if whole[j] == stop), len(whole) - 1)
            stopped = task_loop.run_one(setup["model"], setup["sample"], protocol, "h2o", BUDGET, BUDGET,
                                        setup["full"], setup["layers"], setup["tokenizer"], 0,
                                        max_new_tokens=answer + 6, stop=stop).generated
            assert stopped == whole[:end + 1], (protocol, stop)


def test_a_schedule_past_its_rows_keeps_its_last_cache_and_every_later_position():
    last_step = np.array([[2, 4, 1, 4, 4]])  # n = 5: tokens 1, 3, 4 survive the last step
    assert task_caches._keys_from_schedule(last_step, 3)[0].tolist() == [0, 1, 3]
    assert task_caches._keys_from_schedule(last_step, 5)[0].tolist() == [1, 3, 4, 5]
    assert task_caches._keys_from_schedule(last_step, 7)[0].tolist() == [1, 3, 4, 5, 6, 7]


def test_streaming_decode_check_fails_on_a_broken_mask(setup, broken_mask):
    assert decode_failures(setup, "streaming", "streamingllm", lambda trace: Streamingllm(BUDGET))


@pytest.fixture(scope="module")
def streaming_tape(setup):
    """The tape of a streaming h2o run (each layer's q, k, v of every row)."""
    trace = {}
    run(setup, "streaming", "h2o", trace=trace)
    return trace["tape"]


def resumed_keys(tape, cache, start, steps=3):
    """The keys each of `steps` decode steps from position `start` attends over in one layer, with
    `cache` (a StreamingPolicy) resumed there on a streaming run's tape."""
    layer = 5
    if cache.fork_at is not None:
        cache.keep(layer, tape.q[layer], tape.k[layer], tape.v[layer])
    cache.resume(layer, tape, start)
    return [[heads.tolist() for heads in cache.keys(layer, i, tape.q[layer][:, i:i + 1], tape.k[layer][:, :i + 1],
                                                   tape.v[layer][:, :i + 1])] for i in range(start, start + steps)]


@pytest.mark.parametrize("label", ["snapkv", "keydiff"])
@pytest.mark.parametrize("past_prompt", [0, 2])
def test_streaming_resume_from_the_prompts_fork_equals_a_fresh_run_over_the_tape(setup, streaming_tape, label,
                                                                                 past_prompt):
    """Generation resumes from the run forked at the prompt's end (fed the tape's rows up to the
    first wrong token) exactly as from a second run over every row before it."""
    model, prompt = setup["model"], len(setup["sample"].ids)
    start = prompt + past_prompt
    forked = resumed_keys(streaming_tape, task_caches.StreamingPolicy(label, BUDGET, 0, model, fork_at=prompt), start)
    assert forked == resumed_keys(streaming_tape, task_caches.StreamingPolicy(label, BUDGET, 0, model), start)


def test_the_resume_check_fails_when_the_fork_skips_the_rows_after_the_prompt(setup, streaming_tape, monkeypatch):
    model, prompt = setup["model"], len(setup["sample"].ids)
    reference = resumed_keys(streaming_tape, task_caches.StreamingPolicy("snapkv", BUDGET, 0, model), prompt + 2)
    cache = task_caches.StreamingPolicy("snapkv", BUDGET, 0, model, fork_at=prompt)
    resume = cache.resume
    monkeypatch.setattr(cache, "resume", lambda layer, tape, start: resume(layer, tape, prompt))
    assert resumed_keys(streaming_tape, cache, prompt + 2) != reference


@pytest.mark.parametrize("protocol", ["prefill", "prefill-question"])
def test_prefill_decode_equals_an_independent_decode_with_the_compressed_cache(setup, protocol):
    assert decode_failures(setup, protocol, "h2o",
                           lambda trace: FixedPrefill(task_loop.compressed_end(setup["sample"], protocol),
                                                      trace["cache"].sets)) == []


def test_prefill_decode_check_fails_when_a_decoded_row_sees_a_dropped_key(setup, monkeypatch):
    keep = task_caches.PrefillSet.keep

    def leaky(self, layer, q, k, v):  # every decoded row also sees the first key the set dropped
        mask = keep(self, layer, q, k, v)
        for h, members in enumerate(self.sets[layer]):
            dropped = sorted(set(range(self.c)) - set(members.tolist()))
            mask[h, :, dropped[0]] = True
        return mask

    monkeypatch.setattr(task_caches.PrefillSet, "keep", leaky)
    assert decode_failures(setup, "prefill", "h2o",
                           lambda trace: FixedPrefill(task_loop.compressed_end(setup["sample"], "prefill"),
                                                      trace["cache"].sets))


# ------------------------------------------------------------------------------------------------
# The compressed set of each layer is the policy's one-shot decision on that layer's Q, K.


def one_shot(label, q, k, c, budget, g, scale):
    """Independent prefill rules on the rows [0, c), per KV head (ascending lists, ties to the
    earlier token): knorm keeps the k lowest key norms; h2o keeps the last `recent` and the top
    `heavy` of the others by their column sums of the c x c causal attention summed over the
    group; opt (the prefill mass optimum) the top k by those sums. Returns (sets, near-ties)."""
    sets, ties = [], 0
    for h in range(k.shape[0]):
        keys = k[h, :c].double()
        if label == "knorm":
            score = -keys.norm(dim=-1)
            pool, take, fixed = list(range(c)), budget, []
        else:
            rows = q[h * g:(h + 1) * g, :c].double()
            logits = rows @ keys.T * scale
            logits.masked_fill_(torch.ones(c, c, dtype=torch.bool).triu(1), float("-inf"))
            score = torch.softmax(logits, dim=-1).sum(dim=(0, 1))
            recent = budget - budget // 2 if label == "h2o" else 0  # opt: the top k, no window
            take = budget // 2 if label == "h2o" else budget
            pool, fixed = list(range(c - recent)), list(range(c - recent, c))
        order = sorted(pool, key=lambda j: (-float(score[j]), j))
        if take < len(order) and abs(float(score[order[take - 1]]) - float(score[order[take]])) <= \
                NEAR_TIE_RTOL * abs(float(score[order[take]])):
            ties += 1
        sets.append(sorted(order[:take] + fixed))
    return sets, ties


@pytest.mark.parametrize("label", ["knorm", "h2o", "opt"])
@pytest.mark.parametrize("protocol", ["prefill", "prefill-question"])
def test_each_layers_compressed_set_is_the_policys_one_shot_decision(setup, label, protocol):
    trace = {}
    run(setup, protocol, label, trace=trace)
    model, c = setup["model"], task_loop.compressed_end(setup["sample"], protocol)
    mismatched, tied = [], []
    for layer in sorted(setup["layers"]):
        tape = trace["tape"]
        want, near = one_shot(label, tape.q[layer], tape.k[layer], c, BUDGET, model.q_heads // model.kv_heads,
                              model.score_scale)
        got = [s.tolist() for s in trace["cache"].sets[layer]]
        if near:  # a near-tie at the boundary may go either way: the layer is not decisive
            tied.append(layer)
        elif got != want:
            mismatched.append(layer)
    assert len(tied) <= 3, f"near-ties in layers {tied}: too few decisive layers"
    assert mismatched == [], f"layers whose compressed set is not {label}'s one-shot decision: {mismatched}"
    # the check can fail: another layer's Q, K give another decision
    other, _ = one_shot(label, trace["tape"].q[6], trace["tape"].k[6], c, BUDGET,
                        model.q_heads // model.kv_heads, model.score_scale)
    assert other != [s.tolist() for s in trace["cache"].sets[5]]


# ------------------------------------------------------------------------------------------------
# Budget >= n: the full cache's answer and log-probabilities, exactly.


@pytest.mark.parametrize("protocol", task_loop.PROTOCOLS)
def test_a_budget_of_n_gives_the_full_caches_answer_exactly(setup, protocol):
    n = len(setup["sample"].ids) + len(setup["sample"].answer_ids)
    full = run(setup, protocol, "full", n)
    for label in ("h2o", "streamingllm", "opt", "opt-answer", "topk"):
        same = run(setup, protocol, label, n)
        assert same.generated == full.generated and same.answer_logprob == full.answer_logprob, label
        assert same.prompt_nll == full.prompt_nll, label


def test_the_full_budget_check_fails_on_a_broken_mask(setup, broken_mask):
    sample = setup["sample"]
    n = len(sample.ids) + len(sample.answer_ids)
    full = run(setup, "streaming", "full", n)
    broken = run(setup, "streaming", "h2o", BUDGET)  # evicts, so the broken mask adds a key
    assert broken.answer_logprob != full.answer_logprob


# ------------------------------------------------------------------------------------------------
# opt-answer keeps at least as much of the answer rows' mass as every irreversible cache.


def answer_row_mass(q, k, keep, rows, scale, g):
    """Per KV head: sum over `rows` of the mean over the group of the full-row attention on the
    kept keys (simulate's units)."""
    n = k.shape[1]
    masses = []
    causal = torch.ones(n, n, dtype=torch.bool).tril()
    for h in range(k.shape[0]):
        logits = q[h * g:(h + 1) * g].double() @ k[h].double().T * scale
        logits.masked_fill_(~causal, float("-inf"))
        weights = torch.softmax(logits, dim=-1).mean(0)
        masses.append(float((weights[rows] * keep[h][rows].double()).sum()))
    return masses


def mass_failures(setup):
    model, sample = setup["model"], setup["sample"]
    rows = list(task_loop.answer_rows(sample, "streaming"))
    g = model.q_heads // model.kv_heads
    failures = []
    for label in ("h2o", "streamingllm", "opt", "opt-answer"):
        trace = {}
        run(setup, "streaming", label, trace=trace)
        tape = trace["tape"]
        for layer in (0, 9, 19, 29):
            q, k, v = tape.q[layer], tape.k[layer], tape.v[layer]
            workload = _subevict.Workload(q.numpy()[None], k.numpy()[None], v.numpy()[None],
                                          score_scale=model.score_scale)
            mass = answer_row_mass(q, k, trace["keep"][layer], rows, model.score_scale, g)
            for h in range(model.kv_heads):
                [cell] = _subevict._simulate(workload, [], [float(BUDGET)], [0], [h], "flow", 1e-4, 0, 16, False,
                                             False, layer, False, optimum_rows=rows)
                best = cell["optimum"]["total"]
                if mass[h] > best * (1 + MASS_RTOL):
                    failures.append(f"{label} layer {layer} head {h}: answer-row mass {mass[h]} > opt-answer {best}")
                if label == "opt-answer" and abs(mass[h] - best) > MASS_RTOL * best:
                    failures.append(f"opt-answer layer {layer} head {h}: its cache keeps {mass[h]}, the optimum {best}")
    return failures


def test_opt_answer_keeps_at_least_every_irreversible_caches_answer_row_mass(setup):
    assert mass_failures(setup) == []


def test_the_mass_check_fails_on_a_broken_mask(setup, broken_mask):
    assert mass_failures(setup)


# ------------------------------------------------------------------------------------------------
# The command.


def command(args, tmp_path):
    return subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "closed_loop_tasks.py"), *args],
                          capture_output=True, text=True, timeout=900, cwd=tmp_path)


def test_command_writes_results_report_and_figures(setup, tmp_path):
    out = tmp_path / "report"
    result = command(["--gguf", setup["path"], "--tasks", "passkey", "--lengths", "160", "--depths", "0.5",
                      "--policies", "h2o,opt-answer", "--budgets", "0.1", "--protocol", "streaming,prefill",
                      "-o", str(out)], tmp_path)
    assert result.returncode == 0, result.stderr
    results = json.loads((out / "results.json").read_text())
    assert len(results["runs"]) == 2 * 3  # two protocols x (full, h2o, opt-answer)
    assert results["samples"][0]["sha256"] and results["settings"]["gguf_sha256"]
    for cell in results["aggregates"]["per_cache"]:
        lower, upper = cell["interval"]
        assert 0 <= lower <= cell["accuracy"] <= upper <= 1
    assert "## streaming" in (out / "report.md").read_text()
    assert (out / "heatmap_prefill.svg").exists() and (out / "accuracy_vs_budget_streaming.svg").exists()
    assert "task loop: 6/6 runs" in result.stderr
    assert not (out / "runs.partial.jsonl").exists()  # the checkpoint goes once the report is complete


# The checkpoint: a killed study resumes with the runs it had finished.


def comparable(run):
    fields = dict(vars(run))
    fields.pop("seconds")
    return fields


def test_a_killed_run_resumes_from_its_checkpoint_and_runs_only_what_was_missing(setup, tmp_path, monkeypatch):
    sample = tasks.generate("passkey", setup["tokenizer"], 160, 0.5, 0)
    checkpoint = tmp_path / "runs.partial.jsonl"
    args = (setup["model"], [sample], "h2o,opt-answer", (0.1,), ("prefill", "streaming"))
    first = task_loop.closed_loop_tasks(*args, quiet=True, checkpoint=str(checkpoint))
    lines = checkpoint.read_bytes().split(b"\n")
    assert len(lines) == 1 + 6 + 1 and lines[-1] == b""  # header, six runs, the final newline
    # A kill while the fourth run was being written: three whole runs and half a line.
    checkpoint.write_bytes(b"\n".join(lines[:4]) + b"\n" + lines[4][:len(lines[4]) // 2])
    calls = []
    run_one = task_loop.run_one
    monkeypatch.setattr(task_loop, "run_one", lambda *a, **kw: calls.append(a[2:4]) or run_one(*a, **kw))
    second = task_loop.closed_loop_tasks(*args, quiet=True, checkpoint=str(checkpoint))
    assert sorted(calls) == [("streaming", "full"), ("streaming", "h2o"), ("streaming", "opt-answer")]
    assert [comparable(r) for r in second["runs"]] == [comparable(r) for r in first["runs"]]
    assert len(checkpoint.read_bytes().split(b"\n")) == 1 + 6 + 1  # the cut line replaced, not kept
    calls.clear()
    third = task_loop.closed_loop_tasks(*args, quiet=True, checkpoint=str(checkpoint))
    assert calls == [] and [comparable(r) for r in third["runs"]] == [comparable(r) for r in first["runs"]]


def test_a_checkpoint_of_another_run_or_with_a_broken_line_is_refused(setup, tmp_path):
    sample = tasks.generate("passkey", setup["tokenizer"], 160, 0.5, 0)
    checkpoint = tmp_path / "runs.partial.jsonl"
    args = (setup["model"], [sample], "h2o", (0.1,), ("prefill",))
    task_loop.closed_loop_tasks(*args, quiet=True, checkpoint=str(checkpoint))
    with pytest.raises(_subevict.InputError, match="seed: written for 0, this run has 1"):
        task_loop.closed_loop_tasks(*args, seed=1, quiet=True, checkpoint=str(checkpoint))
    lines = checkpoint.read_text().split("\n")
    checkpoint.write_text("\n".join([lines[0], "{not json", *lines[1:]]))
    with pytest.raises(_subevict.InputError, match="line 2: expected a finished run"):
        task_loop.closed_loop_tasks(*args, quiet=True, checkpoint=str(checkpoint))


@pytest.mark.parametrize("args,message", [
    (["--tasks", "nosuch"], "task: unknown 'nosuch'"),
    (["--lengths", "9000"], "length 9000: beyond the model's context of 8192 tokens"),
    (["--depths", "1.5"], "depth: expected a fraction in [0, 1], got 1.5"),
    (["--samples", "0"], "--samples: expected an integer >= 1, got 0"),
    (["--max-new-tokens", "0"], "--max-new-tokens: expected an integer >= 1, got 0"),
    (["--lengths", "8000", "--max-new-tokens", "300"], "exceed the model's context of 8192 tokens"),
    (["--tasks", "vt", "--lengths", "8192"], "does not fit after the 8189-token prompt"),
    (["--protocol", "decode"], "--protocol: expected of streaming, prefill, prefill-question, got 'decode'"),
    (["--policies", "h2o-oracle"], "policy"),
    (["--budgets", "0"], "--budgets"),
])
def test_bad_input_exits_2_with_one_line_before_model_work(setup, tmp_path, args, message):
    result = command(["--gguf", setup["path"], "-o", str(tmp_path / "out"), *args], tmp_path)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("closed_loop_tasks: error: ") and message in lines[0], \
        result.stderr
    assert not (tmp_path / "out").exists()


def test_an_unwritable_output_is_refused_before_the_run(setup, tmp_path):
    (tmp_path / "afile").write_text("x")
    result = command(["--gguf", setup["path"], "-o", str(tmp_path / "afile" / "sub")], tmp_path)
    assert result.returncode == 2 and "-o " in result.stderr and "loading" not in result.stderr
