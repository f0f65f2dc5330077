"""Base classes for eviction policies written in Python (run by subevict.simulate).

The simulator owns the cache and the attention arithmetic; a policy only decides which member of
G_i = S_{i-1} + {i} leaves once the cache holds k tokens. Token i arrives at step i (0-based).
"""

from __future__ import annotations

import numpy as np


class Policy:
    """Subclass and implement evict(); reset() and observe() are optional.

    reset(n, k): a new run of n tokens with cache budget k (one per layer, KV head and budget).
    observe(step, attention_row): every step; attention_row (float64, length n) is the tracked
        attention of query `step` over its cache G_i, aggregated over the KV head's query heads
        (sum), and 0 on every token outside G_i.
    evict(step, cache) -> token: called only when the cache is full; `cache` (int64) holds the
        members of G_i ascending (the current token `step` included). Return one of them. On a
        sliding-window layer the token query step + 1 no longer sees leaves first: evict is called
        only when the cache is still over k without it (never at k = W - 1).

    Set `name` to label the policy in results (default: the class name).
    """

    name: str

    def reset(self, n: int, k: int) -> None:
        pass

    # observe(step, attention_row) is looked up on the instance and not defined here: a policy
    # without it is not handed the attention row (a cost of O(n) per step).

    def evict(self, step: int, cache: np.ndarray) -> int:
        raise NotImplementedError("a Policy must implement evict(step, cache)")


class ScorePolicy:
    """A policy given by a score function, kvpress's shape: higher scores are more important.

    score(step, cache, q, K, V) -> scores: `cache` (int64) the members of G_i ascending, q
    (float32, [g, d]) the KV head's query heads at `step`, K and V (float32, [len(cache), d]) the
    members' keys and values. The member with the lowest score is evicted (ties: the lowest token).

    Use as ScorePolicy(function, name="mine") or subclass and override score().
    """

    def __init__(self, function=None, name: str | None = None):
        if function is not None:
            self._function = function
        self.name = name or getattr(function, "__name__", None) or type(self).__name__

    def reset(self, n: int, k: int) -> None:
        pass

    def score(self, step: int, cache: np.ndarray, q: np.ndarray, K: np.ndarray, V: np.ndarray):
        function = getattr(self, "_function", None)
        if function is None:
            raise NotImplementedError("a ScorePolicy needs a score function or an overridden score()")
        return function(step, cache, q, K, V)


class Decisions:
    """A recorded eviction schedule of any system, replayed by subevict.simulate like a policy
    (`subevict simulate --decisions`), under the same process, contract checks, metrics and optimum.

    array: eviction steps, int64, (n,) for every (layer, KV head) run or (layers, kv_heads, n) per
        head: e[j] is the step at which token j left the cache (j: evicted on arrival, n: never);
        or a keep mask, bool or uint8, (n, n) or (layers, kv_heads, n, n): mask[i, j] = 1 exactly
        when token j is in the cache after step i. A policy trace's `last_step + 1` is its
        eviction steps.
    name: the trace's label is "recorded:NAME".
    to_process: a schedule that evicts before the cache is full, or several tokens in one step, is
        rejected naming the first bad step unless to_process=True, which evaluates the process
        schedule keeping every token at least as long instead (`--decisions-to-process`; the trace
        then reports `converted` and `changed_tokens`).

    The schedule is admitted at each run's budget: pass the budget it was recorded at.
    """

    _subevict_decisions = True

    def __init__(self, array, name: str, to_process: bool = False):
        array = np.asarray(array)
        if array.dtype == np.bool_:
            array = array.view(np.uint8)  # the same bytes, 0 or 1
        self.array = array
        self.name = f"recorded:{name}"
        self.to_process = bool(to_process)
