"""Answers, not only perplexity: long-context tasks (subevict.tasks) in the closed loop, in the
streaming and the prefill protocols, with the exact optimum and a question-aware optimum beside
the policies (docs/tasks.md).

For each sample (task, length, depth, seed), protocol, budget and cache the model runs once
teacher-forced over the prompt and the gold answer with the cache in its evicting layers (the
answer's log-probability, and the greedy answer up to its first wrong token: the caches are
causal, so a greedy decode feeds exactly the teacher-forced tokens until then), and from the
first wrong token on it decodes greedily token by token with the cache in place (a policy's
state carried by _subevict.StreamingCache) until it has generated as many tokens as the gold
answer has, or max_new_tokens (RULER's token limit) when that is larger, stopping after the
model's end-of-sequence token. Metrics: exact match (the first generated tokens are the
answer's), RULER's string match (the share of the sample's answers that the generated text
contains, case-insensitive), and the teacher-forced answer log-probability.

Budgets are ratios of the sample's prompt (its tokens before the answer) or integer sizes; in
the prefill protocols the decoded rows keep every decoded position besides the k compressed
entries."""

from __future__ import annotations

import time
from dataclasses import dataclass


from . import _subevict
from .evicted_forward import check_labels
from .task_checkpoint import run_key
from .task_caches import (REFERENCES, Full, StreamingPolicy, StreamingSchedule, StreamingTopk, PrefillTopk,
                          prefill_mass_optimum, prefill_policy)
from .task_forward import cached_pass, decode, full_pass, log_probabilities

PROTOCOLS = ("streaming", "prefill", "prefill-question")
SOURCE = "closed_loop_tasks"


@dataclass
class TaskRun:
    """One (sample, protocol, cache, budget) run."""

    sample: int  # index into the run's samples
    protocol: str
    cache: str
    budget: object  # as given ("full" for the full cache)
    budget_size: int
    generated: list
    text: str
    exact_match: bool
    string_match: float
    answer_logprob: float
    first_wrong: int  # the first answer token the greedy decode got wrong (len(answer): none)
    seconds: float
    prompt_nll: object = None  # streaming: mean negative log-likelihood of the prompt's tokens

    @property
    def correct(self):
        """Every answer of the sample in the generated text (RULER's string match at 1)."""
        return self.string_match == 1.0


def compressed_end(sample, protocol):
    """The rows a protocol compresses or streams from: streaming 0 (every row evicts), prefill the
    question's first token (the context, instruction included), prefill-question the prompt's
    end."""
    if protocol == "streaming":
        return 0
    return sample.spans["question"][0] if protocol == "prefill" else len(sample.ids)


def answer_rows(sample, protocol):
    """The rows whose gains opt-answer keeps: streaming the question's and the answer's; the
    prefill protocols the rows decoded over the compressed part."""
    n = len(sample.ids) + len(sample.answer_ids)
    first = sample.spans["question"][0] if protocol == "streaming" else compressed_end(sample, protocol)
    return range(first, n)


def make_cache(label, protocol, budget_size, sample, model, seed, capacity=None):
    """The cache object of `label` (a policy spec or a reference) in one run; capacity: the
    positions it may see (default the prompt and the gold answer)."""
    c = compressed_end(sample, protocol)
    rows = answer_rows(sample, protocol)
    if label == "full":
        return Full(model, c)
    if protocol == "streaming":
        if label == "opt":
            return StreamingSchedule(budget_size, None, model)
        if label == "opt-answer":
            return StreamingSchedule(budget_size, list(rows), model)
        if label == "topk":
            return StreamingTopk(budget_size, model)
        return StreamingPolicy(label, budget_size, seed, model, fork_at=len(sample.ids), capacity=capacity)
    if label == "opt":  # the top k of [0, c)'s column sums summed over the group: h2o's accumulated
        # prompt scores, so h2o's prefill rule without a recent window (the C++ one-pass sums;
        # a tie at the k-th key keeps the later token)
        return prefill_policy("h2o:recent=0", budget_size, 0, model, c)
    if label == "opt-answer":
        return prefill_mass_optimum(budget_size, model, c, rows)
    if label == "topk":
        return PrefillTopk(budget_size, model, c)
    return prefill_policy(label, budget_size, seed, model, c)


def string_match(text, answers):
    """RULER's string_match_all: the share of `answers` that `text` contains, case-insensitive."""
    lowered = text.lower()
    return sum(a.lower() in lowered for a in answers) / len(answers)


def run_one(model, sample, protocol, label, budget, budget_size, full, evict_layers, tokenizer, seed,
            trace=None, max_new_tokens=None, stop=None):
    """One run: the teacher-forced pass, then the greedy decode from the first wrong token. `full`
    is the sample's full_pass tape (with inputs and last_prompt_logp, the log-probabilities at the
    prompt's last position: the prefill's, which prefill-question reads the first answer token
    from, as the compression follows the prefill). The run generates max(len(answer),
    max_new_tokens) tokens, fewer when it generates `stop` (a token id) past the answer's length."""
    import torch

    start_time = time.monotonic()
    ids = torch.tensor(list(sample.ids) + list(sample.answer_ids), dtype=torch.int64)
    prompt, answer = len(sample.ids), list(sample.answer_ids)
    limit = max(len(answer), int(max_new_tokens or 0))
    cache = make_cache(label, protocol, budget_size, sample, model, seed, capacity=prompt + limit)
    first_row = compressed_end(sample, protocol)
    keep_of_layer = cache.keep
    if trace is not None:
        trace.update(cache=cache, keep={})

        def keep_of_layer(layer, q, k, v):
            trace["keep"][layer] = cache.keep(layer, q, k, v)
            return trace["keep"][layer]
    if hasattr(cache, "prefetch"):
        cache.prefetch(full, evict_layers)
    hidden, tape = cached_pass(model, ids, full, first_row, keep_of_layer, evict_layers)
    if trace is not None:
        trace["tape"] = tape
    first = max(prompt - 1, first_row)  # the first row whose logits this pass computes
    logp = log_probabilities(model, hidden[first - first_row:prompt - 1 + len(answer) - first_row])
    if first_row > prompt - 1:  # prefill-question: the first answer token comes from the prefill
        logp = torch.cat([full.last_prompt_logp, logp])
    prompt_nll = None
    if protocol == "streaming":  # the cache's perplexity on the prompt, the closed loop's measure
        prompt_nll = float(-log_probabilities(model, hidden[:prompt - 1], ids[1:prompt]).mean())
    target = torch.tensor(answer).view(-1, 1)
    answer_logprob = float(logp.gather(-1, target).double().sum())
    predicted = logp.argmax(-1).tolist()
    wrong = next((t for t, (p, a) in enumerate(zip(predicted, answer)) if p != a), len(answer))
    generated = predicted[:wrong + 1]
    # From the first wrong token on, or past the answer's last row, the decode goes on with the cache.
    start = min(wrong, len(answer) - 1)
    if len(generated) < limit and not (len(generated) == len(answer) and generated[-1] == stop):
        for layer in evict_layers:
            cache.resume(layer, tape, prompt + start)
        generated += decode(model, tape, prompt + start, predicted[start], limit - 1 - start, cache.keys,
                            evict_layers, stop=stop, stop_after=len(answer) - 1 - start)
    text = tokenizer.decode(generated)
    return TaskRun(-1, protocol, label, budget, budget_size, generated, text, generated[:len(answer)] == answer,
                   string_match(text, sample.answers), answer_logprob, wrong,
                   time.monotonic() - start_time, prompt_nll)


def budget_sizes(budgets, prompt):
    """The integer budget of each budget value for a prompt of `prompt` tokens."""
    return [_subevict.budget_size(float(b), prompt, SOURCE) for b in budgets]


def check_caches(caches, sizes_and_lengths, model, seed):
    """InputError, before any model work, for a policy that cannot run: an oracle (it reads rows
    that have not arrived; streaming and prefill decode causally) or a budget the policy refuses
    at a sample's length."""
    group = model.q_heads // model.kv_heads
    for label in caches:
        if label in REFERENCES:
            continue
        for size, length in sizes_and_lengths:
            _subevict.StreamingCache(label, int(size), group, model.head_dim, model.score_scale, seed=int(seed),
                                     capacity=int(length))


def cache_labels(policies):
    """The cache labels of a policy list: built-in specs (as simulate parses them, each label once)
    and the references opt, opt-answer, topk; `full` is always run and needs no naming."""
    items = [x.strip() for x in (policies.split(",") if isinstance(policies, str) else policies)]
    specs = ",".join(x for x in items if x not in REFERENCES)
    labels = [x for x in items if x in REFERENCES and x != "full"]
    if specs:
        labels += list(_subevict.policy_specs(specs, SOURCE, 16))
    check_labels(labels, SOURCE)
    return labels


def closed_loop_tasks(model, samples, policies="h2o,tova,snapkv,opt,opt-answer,topk", budgets=(0.1,),
                      protocols=("streaming", "prefill"), layers=None, seed=0, tokenizer=None, quiet=False,
                      checkpoint=None, max_new_tokens=None):
    """Runs every sample of `samples` (subevict.tasks Samples of `model`'s tokenizer) in each
    protocol of `protocols`, with the full cache and every cache of `policies` at every budget.

    model: a subevict.models model or a GGUF path; policies: built-in specs and the references
    opt, opt-answer, topk (cache_labels); budgets: ratios in (0, 1) of each sample's prompt or
    integer sizes; protocols: of PROTOCOLS; layers: the evicting layers (default every global
    layer, evicted_forward.evicting_layers); tokenizer: decodes the generated tokens (default the
    model file's). Returns {"samples": [Sample], "runs": [TaskRun]} in (sample, protocol, budget,
    cache) order, the full cache's run first per protocol. InputError before any model work for
    bad arguments. Progress (one unit per run) on stderr unless quiet. checkpoint: a file path
    (task_checkpoint.RunLog) where every finished run is appended, and from which the runs of an
    earlier, interrupted call with the same model, layers, seed and max_new_tokens are taken instead
    of run again. max_new_tokens: each run generates max(the answer's tokens, max_new_tokens)
    tokens, stopping after the model's end-of-sequence token past the answer's length (default:
    the answer's tokens, exactly)."""
    from . import models as models_module
    from . import tasks
    from .evicted_forward import evicting_layers
    from .progress import Progress

    import torch

    if isinstance(model, (str, bytes)) or hasattr(model, "__fspath__"):
        model = models_module.load(model)
    if tokenizer is None:
        tokenizer = tasks.tokenizer_of(model.path)
    samples = list(samples)
    if not samples:
        raise _subevict.InputError(f"{SOURCE}: samples: at least one sample")
    labels = cache_labels(policies)
    if max_new_tokens is not None and (isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int)
                                       or max_new_tokens < 1):
        raise _subevict.InputError(f"{SOURCE}: max_new_tokens: expected an integer >= 1, got {max_new_tokens!r}")
    protocols = [protocols] if isinstance(protocols, str) else list(protocols)
    for protocol in protocols:
        if protocol not in PROTOCOLS:
            raise _subevict.InputError(f"{SOURCE}: protocols: expected of {', '.join(PROTOCOLS)}, got {protocol!r}")
    if not protocols:
        raise _subevict.InputError(f"{SOURCE}: protocols: at least one")
    budgets = [budgets] if isinstance(budgets, (int, float)) else list(budgets)
    if not budgets:
        raise _subevict.InputError(f"{SOURCE}: budgets: at least one budget")
    sizes = [budget_sizes(budgets, len(s.ids)) for s in samples]
    check_caches(labels, [(k, len(s.ids) + len(s.answer_ids)) for s, row in zip(samples, sizes) for k in row],
                 model, seed)
    evict_layers = evicting_layers(model, layers)
    stop = None
    if max_new_tokens is not None:
        stop = models_module.config_of(model.reader).get("eos_token_id")
        stop = None if stop is None else int(stop)
    progress = Progress("task loop", len(samples) * len(protocols) * (1 + len(labels) * len(budgets)), "run",
                        quiet=quiet)
    log = None
    if checkpoint is not None:
        from .models import file_sha256
        from .task_checkpoint import RunLog

        log = RunLog(checkpoint, {"model_sha256": file_sha256(model.path), "layers": sorted(evict_layers),
                                  "seed": seed, "max_new_tokens": max_new_tokens}, TaskRun)
    runs = []
    try:
        for index, sample in enumerate(samples):
            length = len(sample.ids) + len(sample.answer_ids)
            jobs = [(protocol, label, budget, k) for protocol in protocols
                    for label, budget, k in [("full", "full", length)] + [(label, b, k) for b, k in zip(
                        budgets, sizes[index]) for label in labels]]
            full = None
            for protocol, label, budget, k in jobs:
                key = run_key(sample, protocol, label, k, budget)
                run = log.get(key) if log is not None else None
                if run is None:
                    if full is None:
                        progress.note(f"sample {index + 1}/{len(samples)}: {sample.task} {len(sample.ids)} tokens "
                                      "full pass")
                        ids = torch.tensor(list(sample.ids) + list(sample.answer_ids), dtype=torch.int64)
                        full_logp, full = full_pass(model, ids, slice(len(sample.ids) - 1, len(sample.ids)))
                        full.last_prompt_logp = full_logp
                    run = run_one(model, sample, protocol, label, budget, k, full, evict_layers, tokenizer, seed,
                                  max_new_tokens=max_new_tokens, stop=stop)
                    if log is not None:
                        log.add(key, run)
                run.sample = index
                runs.append(run)
                progress.advance(f"{sample.task} {protocol} {label} k={k}")
    finally:
        if log is not None:
            log.close()
    return {"samples": samples, "runs": runs}
