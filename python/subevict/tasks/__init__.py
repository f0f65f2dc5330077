"""Synthetic long-context tasks with exact answers, RULER's families written from their
definitions (no dataset download), measured in the tokens of a model's tokenizer (docs/tasks.md).

    from subevict import tasks
    tokenizer = tasks.tokenizer_of("model.gguf")
    sample = tasks.generate("niah_single", tokenizer, length=1024, depth=0.5, seed=0)
    sample.ids, sample.spans["context"], sample.answer   # " 1234567"

generate is deterministic in (task, haystack, length, depth, seed): the same inputs give the same
text and token ids. The random draws (keys, values, variable names, words, distractor places)
depend on (task, haystack, seed) only, so one seed hides the same needle at every length and
depth. Bad input raises TaskError (a ValueError) with one line naming it. Prompts are plain text
as RULER's base templates; a chat template is not applied (left for later)."""

from __future__ import annotations

import math
import numbers
import random

from . import common_words, haystack as haystacks, niah, passkey, variable_tracking
from .errors import TaskError
from .prompt import fit
from .sample import Sample
from .tokenizer import Encoder, GgufTokenizer, tokenizer_of

# task -> (module with layout(task, rng, haystack, depth, length), default haystack)
TASKS = {
    "niah_single": (niah, "licenses"),
    "niah_multikey": (niah, "licenses"),
    "niah_multivalue": (niah, "licenses"),
    "niah_multiquery": (niah, "licenses"),
    "vt": (variable_tracking, "noise"),
    "cwe": (common_words, "licenses"),
    "passkey": (passkey, "noise"),
}

__all__ = ["GgufTokenizer", "Sample", "TASKS", "TaskError", "generate", "haystack_names", "names",
           "samples", "tokenizer_of"]


def names():
    """The task names, in the order of TASKS."""
    return list(TASKS)


def haystack_names():
    """The haystack names generate accepts (or several joined by '+')."""
    return haystacks.names()


def _check(task, length, depth, seed):
    if task not in TASKS:
        raise TaskError(f"task: unknown {task!r} (expected one of {', '.join(TASKS)})")
    if isinstance(length, bool) or not isinstance(length, numbers.Integral) or length < 1:
        raise TaskError(f"length: expected a positive number of tokens, got {length!r}")
    if isinstance(depth, bool) or not isinstance(depth, (int, float)) or \
            not math.isfinite(depth) or not 0.0 <= depth <= 1.0:
        raise TaskError(f"depth: expected a fraction in [0, 1], got {depth!r}")
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise TaskError(f"seed: expected an int >= 0, got {seed!r}")


def generate(task, tokenizer, length, depth, seed, haystack=None, limit=None):
    """The Sample of `task` whose prompt is at most `length` tokens of `tokenizer` (BOS included
    when the tokenizer has bos_id), as close as whole haystack sentences allow, with its needle at
    `depth` (the share of the haystack's tokens before it, within one sentence). haystack: a name
    of haystack_names(), several joined by '+' or a list (default: the task's, TASKS). limit: the
    most tokens the prompt and its answer may take together (a model's context); TaskError when
    the length exceeds it or the answer does not fit after the prompt."""
    _check(task, length, depth, seed)
    if limit is not None and length > limit:
        raise TaskError(f"length {length}: beyond the model's context of {limit} tokens")
    length, seed = int(length), int(seed)
    module, default = TASKS[task]
    stack = haystacks.load(default if haystack is None else haystack)
    encode = Encoder(tokenizer)
    rng = random.Random(f"subevict.tasks:{task}:{stack.name}:{seed}")
    layout = module.layout(task, rng, stack, float(depth), length)
    fitted = fit(layout, encode, length, task)
    if limit is not None and len(fitted.ids) + len(fitted.answer_ids) > limit:
        raise TaskError(f"length {length}: the answer of {task} ({len(fitted.answer_ids)} tokens) "
                        f"does not fit after the {len(fitted.ids)}-token prompt within the "
                        f"model's context of {limit} tokens")
    from ..models.tokenizer import token_ids_sha256
    import numpy as np

    return Sample(task=task, haystack=stack.name, length=length, depth=float(depth), seed=seed,
                  text=fitted.text, ids=tuple(fitted.ids), spans=fitted.spans,
                  needles=tuple(fitted.needles), needle_spans=tuple(fitted.needle_spans),
                  answer=layout.answer, answers=tuple(layout.answers),
                  answer_ids=tuple(fitted.answer_ids),
                  sha256=token_ids_sha256(np.asarray(fitted.ids, dtype=np.int64)),
                  details=dict(layout.details, sentences=fitted.sentences))


def samples(task, tokenizer, length, depth, count, seed=0, haystack=None, limit=None):
    """`count` samples of generate with seeds seed, seed + 1, ... (TaskError when count < 1)."""
    if isinstance(count, bool) or not isinstance(count, numbers.Integral) or count < 1:
        raise TaskError(f"samples: expected an int >= 1, got {count!r}")
    _check(task, length, depth, seed)
    return [generate(task, tokenizer, length, depth, seed + i, haystack, limit)
            for i in range(count)]
