"""The caches of the task loop, per protocol (docs/tasks.md "Protocols" and "References").

Each cache answers, per evicting layer of one run: keep(layer, q, k, v), the keep mask of the
teacher-forced rows [first_row, n) from the layer's q, k, v at every position; resume(layer,
tape, start), getting ready to decode from position `start` (the rows before it are the tape's);
keys(layer, i, q, k, v), the key positions query i attends over while decoding (k, v: the
layer's keys and values up to i). A cache built for one run holds that run's state.

streaming (decode-time eviction: G_i = S_{i-1} + {i} at every step, the process of
docs/eviction.md): a built-in policy (its state carried from the teacher-forced rows into
generation by _subevict.StreamingCache), `opt` (the exact mass optimum of the layer's rows), `opt-answer`
(the same solver with every row's gain 0 but the question's and the answer's), `topk` (the
reversible per-step oracle), `full`.
prefill (one-shot compression of the rows [0, c) before the decoded part, kvpress's protocol;
`prefill-question` when the question is inside them): a built-in policy's prefill rule, `opt`
(the k keys of [0, c) with the most attention from the compressed rows themselves, summed over
rows and query heads), `opt-answer` (the k keys with the most attention from the decoded rows),
`topk` (each decoded row's own k keys of [0, c)), `full`. Every decoded row also sees every
decoded position before it."""

from __future__ import annotations

import numpy as np

from . import _subevict
from .models import causal_keep, keep_from_last_step

REFERENCES = ("full", "opt", "opt-answer", "topk")


_POOLS = {}  # thread pools by size


def _workers(heads=0):
    """The threads the library's runs share (it releases the GIL while it runs), each with one
    OpenMP thread (a matrix product that opened its own team on every worker would put twice as
    many threads as cores to work): one per core, or one per KV head where a layer's `heads` runs
    outnumber the cores, so that they share the cores and finish together instead of in rounds
    (3 heads on 2 cores: the third would start when the first two end; measured 23-28% less wall
    time per layer of streaming h2o and expected_attention at 4096 tokens)."""
    import os
    from concurrent.futures import ThreadPoolExecutor

    size = max(len(os.sched_getaffinity(0)), heads)
    if size not in _POOLS:
        _POOLS[size] = ThreadPoolExecutor(max_workers=size, thread_name_prefix="subevict",
                                          initializer=_subevict._set_threads, initargs=(1,))
    return _POOLS[size]


def _each_head(one, heads):
    """[one(h) for h < heads], each call on the worker threads, in head order."""
    return [head.result() for head in [_workers(heads).submit(one, h) for h in range(heads)]]


def _contiguous(tensor):
    return np.ascontiguousarray(tensor.numpy())


def _group_rows(q, h, group, rows):
    return _contiguous(q[h * group:(h + 1) * group, rows])


def _evicted_to_last_step(evicted, n):
    """The schedule t_j (models.keep_from_last_step's) from the evicted token of each step."""
    last = np.full(n, n - 1, dtype=np.int64)
    for step, token in enumerate(evicted):
        if token >= 0:
            last[token] = step - 1
    return last


def _keys_from_schedule(last_step, i):
    """Per KV head the keys query i attends over under schedules last_step [kv_heads, n]:
    {j < i : i <= t_j + 1} + {i}; past the schedule's rows (i > n) the last step's cache
    {j : t_j = n - 1} and every position from n to i."""
    import torch

    m = min(i, last_step.shape[1])  # the step whose cache query i starts from
    return [torch.cat([torch.from_numpy(np.flatnonzero(row[:m] + 1 >= m)), torch.arange(m, i + 1)]) for row in last_step]


def _top_keys(weights, count):
    """The `count` positions of the largest weights (float64 [m]), ascending; ties to the earlier."""
    import torch

    order = np.lexsort((np.arange(weights.shape[0]), -weights.numpy()))[:count]
    return torch.from_numpy(np.sort(order).astype(np.int64))


class StreamingPolicy:
    """A built-in policy in the streaming protocol. fork_at (the prompt's length): each KV head's
    run is forked there while the teacher-forced rows pass it, so that generation resumes from the
    fork and the rows the decode shares with the pass, not from a second run over the prompt.
    capacity: the positions a run may reach (default the teacher-forced rows)."""

    def __init__(self, spec, budget, seed, model, fork_at=None, capacity=None):
        self.spec, self.budget, self.seed, self.model = spec, int(budget), int(seed), model
        self.group = model.q_heads // model.kv_heads
        self.fork_at, self.capacity = fork_at, capacity
        self.state, self.forks = {}, {}

    def _run(self, layer, h, capacity):
        m = self.model
        return _subevict.StreamingCache(self.spec, self.budget, self.group, m.head_dim, m.score_scale,
                                        seed=self.seed, capacity=capacity, model_layer=layer, kv_head=h)

    def _rows(self, q, k, v, h, start, stop):
        """KV head h's rows [start, stop) as StreamingCache.extend takes them."""
        return (_group_rows(q, h, self.group, slice(start, stop)), _contiguous(k[h, start:stop]),
                _contiguous(v[h, start:stop]))

    def _extend(self, layer, q, k, v, stop, capacity):
        """Per KV head, run on the worker threads: a fresh run fed rows [0, stop), with its
        evictions and its cache (futures)."""

        def one(h):
            run = self._run(layer, h, capacity)
            evicted, cache = run.extend(*self._rows(q, k, v, h, 0, stop))
            return run, evicted, cache

        return [_workers(k.shape[0]).submit(one, h) for h in range(k.shape[0])]

    def keep(self, layer, q, k, v):
        import torch

        n = k.shape[1]
        split = self.fork_at if self.fork_at is not None and 0 < self.fork_at < n else None

        keep = torch.empty(k.shape[0], n, n, dtype=torch.bool)

        def one(h):  # the run and its head's mask on a worker thread
            run = self._run(layer, h, max(n, self.capacity or 0))
            fork = None
            if split is None:
                evicted = run.extend(*self._rows(q, k, v, h, 0, n))[0]
            else:
                before, _ = run.extend(*self._rows(q, k, v, h, 0, split))
                fork = run.fork()
                evicted = np.concatenate([before, run.extend(*self._rows(q, k, v, h, split, n))[0]])
            keep_from_last_step(_evicted_to_last_step(evicted, n), out=keep[h])
            return fork

        self.forks[layer] = _each_head(one, k.shape[0])
        return keep

    def resume(self, layer, tape, start):
        """Queued: the layers' runs go on while the next layer's are queued; keys() waits. From the
        fork at fork_at fed the tape's rows up to `start` where keep() made one, else a fresh run."""
        forks = self.forks.pop(layer, None)
        if not forks or forks[0] is None or start < self.fork_at:
            self.state[layer] = self._extend(layer, tape.q[layer], tape.k[layer], tape.v[layer], start,
                                             max(tape.k[layer].shape[1], self.capacity or 0))
            return

        def one(h):
            run = forks[h]
            if start == self.fork_at:
                return run, None, run.cache()
            return run, None, run.extend(*self._rows(tape.q[layer], tape.k[layer], tape.v[layer], h, self.fork_at,
                                                     start))[1]

        self.state[layer] = [_workers(len(forks)).submit(one, h) for h in range(len(forks))]

    def keys(self, layer, i, q, k, v):
        import torch

        heads = self.state[layer]
        if heads and not isinstance(heads[0], list):
            heads = self.state[layer] = [list(head.result()) for head in heads]
        kept = [torch.cat([torch.from_numpy(cache.astype(np.int64)), torch.tensor([i])]) for _, _, cache in heads]
        for h, head in enumerate(heads):
            _, head[2] = head[0].extend(_contiguous(q[h * self.group:(h + 1) * self.group]),
                                        _contiguous(k[h, i:i + 1]), _contiguous(v[h, i:i + 1]))
        return kept


class StreamingSchedule:
    """`opt` or `opt-answer` in the streaming protocol: the exact optimum's schedule per KV head on
    the layer's teacher-forced rows (opt-answer: gains of the rows `rows` only), held fixed while
    decoding (the decoded positions up to the gold answer's last are those whose rows it was
    solved on; past them, with a token limit above the answer's length, its last cache stays and
    every later position is kept, as in the prefill protocols)."""

    def __init__(self, budget, rows, model):
        self.budget, self.rows, self.model = int(budget), rows, model
        self.schedules, self.values = {}, {}

    def keep(self, layer, q, k, v):
        import torch

        workload = _subevict.Workload(q.numpy()[None], k.numpy()[None], v.numpy()[None],
                                      score_scale=self.model.score_scale)
        n = k.shape[1]
        keep = torch.empty(k.shape[0], n, n, dtype=torch.bool)

        def one(h):  # on the worker threads, a KV head each, its mask included
            [cell] = _subevict._simulate(workload, [], [float(self.budget)], [0], [h], "flow", 1e-4, 0, 16,
                                         False, False, int(layer), False, optimum_rows=self.rows, oracle=False)
            last = np.asarray(cell["optimum"]["last_step"], dtype=np.int64)
            keep_from_last_step(last, out=keep[h])
            return last, cell["optimum"]["total"]

        heads = _each_head(one, k.shape[0])
        self.schedules[layer], self.values[layer] = np.stack([last for last, _ in heads]), [total for _, total in heads]
        return keep

    def resume(self, layer, tape, start):
        pass

    def keys(self, layer, i, q, k, v):
        return _keys_from_schedule(self.schedules[layer], i)


class StreamingTopk:
    """`topk` in the streaming protocol: at each step each KV head keeps the k past keys with the
    most attention from the step's query, summed over its query heads (evicted keys may return)."""

    def __init__(self, budget, model):
        self.budget, self.model = int(budget), model
        self.group = model.q_heads // model.kv_heads

    def _row_keys(self, weights, i):
        import torch

        if i <= self.budget:
            return torch.arange(i + 1)
        return torch.cat([_top_keys(weights[:i], self.budget), torch.tensor([i])])

    def keep(self, layer, q, k, v):
        import torch

        from .models.attention import keep_from_row_sets

        workload = _subevict.Workload(q.numpy()[None], k.numpy()[None], v.numpy()[None],
                                      score_scale=self.model.score_scale)
        def one(h):  # on the worker threads, a KV head each, its mask included
            [cell] = _subevict._simulate(workload, [], [float(self.budget)], [0], [h], "oracle", 1e-4, 0, 16,
                                         False, False, int(layer), True)
            return keep_from_row_sets(cell["oracle"]["chosen"], k.shape[1])

        return torch.stack(_each_head(one, k.shape[0]))

    def resume(self, layer, tape, start):
        pass

    def keys(self, layer, i, q, k, v):
        from .task_forward import row_attention

        weights = row_attention(q, k, self.model.score_scale, i, self.group)
        return [self._row_keys(weights[h, 0], i) for h in range(k.shape[0])]


class Full:
    """`full`: every key (a protocol's own full-cache run)."""

    def __init__(self, model, first_row):
        self.model, self.first_row = model, first_row

    def keep(self, layer, q, k, v):
        return causal_keep(k.shape[1], k.shape[0])[:, self.first_row:]

    def resume(self, layer, tape, start):
        pass

    def keys(self, layer, i, q, k, v):
        import torch

        return [torch.arange(i + 1)] * k.shape[0]


class PrefillSet:
    """A cache of the prefill protocols: per KV head a set S of the compressed rows [0, c), chosen
    once per layer by `choose_head(layer, h, q, k, v)` (KV head h's set of at most `budget` keys,
    an int64 tensor, ascending; every row of [0, c) when budget >= c), each KV head's on the worker
    threads; the rows from c on attend over S and every position in [c, i]. When the choice reads
    the rows before c only (`prefetchable`), `prefetch` starts every layer's choice at once from the
    full pass's rows, which are the run's rows before c."""

    def __init__(self, c, budget, choose_head, prefetchable):
        self.c, self.budget, self.choose_head, self.prefetchable = c, int(budget), choose_head, prefetchable
        self.sets, self.pending = {}, {}

    def _submit(self, layer, q, k, v):
        """The layer's choice as one future per KV head."""
        import torch
        from concurrent.futures import Future

        if self.budget >= self.c:
            done = Future()
            done.set_result(torch.arange(self.c))
            return [done] * k.shape[0]
        return [_workers().submit(self.choose_head, layer, h, q, k, v) for h in range(k.shape[0])]

    def prefetch(self, tape, layers):
        """Starts the choice of each layer of `layers` from `tape` (the sample's full pass) on the
        worker threads, so the KV heads of all layers share the cores; keep() takes the results."""
        if self.prefetchable:
            for layer in sorted(layers):
                self.pending[layer] = self._submit(layer, tape.q[layer], tape.k[layer], tape.v[layer])

    def keep(self, layer, q, k, v):
        n = k.shape[1]
        heads = self.pending.pop(layer) if layer in self.pending else self._submit(layer, q, k, v)
        self.sets[layer] = [head.result() for head in heads]
        keep = causal_keep(n, k.shape[0])[:, self.c:].clone()
        keep[:, :, :self.c] = False
        for h, members in enumerate(self.sets[layer]):
            keep[h][:, members] = True
        return keep

    def resume(self, layer, tape, start):
        pass

    def keys(self, layer, i, q, k, v):
        import torch

        return [torch.cat([members, torch.arange(self.c, i + 1)]) for members in self.sets[layer]]


def prefill_policy(spec, budget, seed, model, c):
    """A built-in policy's one-shot decision on the rows [0, c) (its prefill rule, the k kept)."""
    import torch

    group = model.q_heads // model.kv_heads

    def choose_head(layer, h, q, k, v):
        run = _subevict.StreamingCache(spec, int(budget), group, model.head_dim, model.score_scale, seed=int(seed),
                                       capacity=c, model_layer=layer, kv_head=h, prefill=c)
        _, cache = run.extend(_group_rows(q, h, group, slice(0, c)), _contiguous(k[h, :c]), _contiguous(v[h, :c]))
        return torch.from_numpy(cache.astype(np.int64))

    return PrefillSet(c, budget, choose_head, prefetchable=True)


def attention_column_sums(q, k, scale, rows, group, block=256):
    """Per KV head, the attention every key receives from the query rows `rows` (a range of
    positions), each row's full-cache softmax summed over the rows and the group's query heads:
    float64 [kv_heads, n]."""
    from .task_forward import row_attention

    import torch

    total = torch.zeros(k.shape[0], k.shape[1], dtype=torch.float64)
    for first in range(rows.start, rows.stop, block):
        last = min(rows.stop, first + block)
        total[:, :last] += row_attention(q[:, first:last], k[:, :last], scale, first, group).sum(1)
    return total


def prefill_mass_optimum(budget, model, c, rows):
    """`opt-answer` of the prefill protocols: the k keys of [0, c) with the most attention from the
    decoded rows `rows` (all at or after c), which is the exact best k-set for those rows' retained
    mass (a set's mass is the sum of its keys'). The prefill `opt` (the same for the rows [0, c))
    is h2o's prefill rule without a recent window (task_loop.make_cache)."""
    group = model.q_heads // model.kv_heads

    def choose_head(layer, h, q, k, v):
        sums = attention_column_sums(q[h * group:(h + 1) * group], k[h:h + 1], model.score_scale, rows, group)
        return _top_keys(sums[0, :c], int(budget))

    return PrefillSet(c, budget, choose_head, prefetchable=False)  # it reads decoded rows


class PrefillTopk:
    """`topk` of the prefill protocols: each decoded row keeps its own k keys of [0, c) with the most
    attention (full-cache softmax, summed over the group) and every position in [c, i]."""

    def __init__(self, budget, model, c):
        self.budget, self.model, self.c = int(budget), model, c
        self.group = model.q_heads // model.kv_heads

    def _row_keys(self, weights, i):
        import torch

        chosen = torch.arange(self.c) if self.budget >= self.c else _top_keys(weights[:self.c], self.budget)
        return torch.cat([chosen, torch.arange(self.c, i + 1)])

    def keep(self, layer, q, k, v):
        from .task_forward import row_attention

        import torch

        n = k.shape[1]
        weights = row_attention(q[:, self.c:], k, self.model.score_scale, self.c, self.group)
        keep = torch.zeros(k.shape[0], n - self.c, n, dtype=torch.bool)
        for h in range(k.shape[0]):
            for r in range(n - self.c):
                keep[h, r, self._row_keys(weights[h, r], self.c + r)] = True
        return keep

    def resume(self, layer, tape, start):
        pass

    def keys(self, layer, i, q, k, v):
        from .task_forward import row_attention

        weights = row_attention(q, k, self.model.score_scale, i, self.group)
        return [self._row_keys(weights[h, 0], i) for h in range(k.shape[0])]
