"""subevict.tasks on real tokenizers: needles at their depth, unique answers found only in their
needles, determinism, the fitted length and the token spans (docs/tasks.md).

    .venv/bin/python -m pytest -q tests/tasks
"""

import hashlib
import random
import re

import pytest

from subevict import tasks

NEEDLE_TASKS = ("niah_single", "niah_multikey", "niah_multivalue", "niah_multiquery", "vt",
                "passkey")
DEPTHS = (0.0, 0.1, 0.5, 0.9, 1.0)
LENGTH = 1024
# A sentence as docs/tasks.md defines it (ends at . ! ? or ; before whitespace).
SENTENCE_END = re.compile(r"(?<=[.!?;])\s+")
# One piece of the context's join or of a boundary (e.g. "\n\n") merged into a neighbour.
BOUNDARY_TOKENS = 2
NIAH_NEEDLE = re.compile(r"One of the special magic numbers for (\S+) is: (\d+)\.")


def part(tokenizer, sample, name):
    start, end = sample.spans[name]
    return tokenizer.decode(sample.ids[start:end])


def haystack_sentences(sample, tokenizer):
    """The context's text without its needles, as sentences."""
    context = part(tokenizer, sample, "context")
    for needle in sample.needles:
        context = context.replace(needle, "")
    return [s for s in SENTENCE_END.split(" ".join(context.split())) if s]


def longest_sentence(sample, tokenizer):
    return max(len(tokenizer.encode_ids(" " + s)) for s in haystack_sentences(sample, tokenizer))


@pytest.mark.parametrize("task", NEEDLE_TASKS)
@pytest.mark.parametrize("depth", DEPTHS)
def test_each_needle_occurs_once_and_the_first_asked_one_at_its_depth(tokenizer, task, depth):
    sample = tasks.generate(task, tokenizer, LENGTH, depth, seed=3)
    context = part(tokenizer, sample, "context")
    start, end = sample.spans["context"]
    for needle, (a, b) in zip(sample.needles, sample.needle_spans):
        assert context.count(needle) == 1, needle
        assert start <= a < b <= end
        assert tokenizer.decode(sample.ids[a:b]).strip() == needle
    # Depth: the share of the haystack's tokens (the context less its needles) before the needle.
    needle_tokens = [b - a for a, b in sample.needle_spans]
    haystack_tokens = (end - start) - sum(needle_tokens)
    a, _ = sample.needle_spans[sample.details["anchor"]]
    before = (a - start) - sum(n for (s, _), n in zip(sample.needle_spans, needle_tokens) if s < a)
    tolerance = longest_sentence(sample, tokenizer) + BOUNDARY_TOKENS
    assert abs(before - depth * haystack_tokens) <= tolerance, (before, haystack_tokens, tolerance)


@pytest.mark.parametrize("task", ("niah_single", "niah_multikey", "niah_multivalue",
                                  "niah_multiquery"))
@pytest.mark.parametrize("seed", range(4))
def test_niah_answers_are_unique_and_only_in_their_needles(smollm2, task, seed):
    sample = tasks.generate(task, smollm2, 2048, 0.4, seed)
    found = [NIAH_NEEDLE.fullmatch(n).groups() for n in sample.needles]
    values = [v for _, v in found]
    assert len(set(values)) == len(values)
    asked = set(sample.details["asked"])
    question = part(smollm2, sample, "question")
    assert all(key in question for key in asked)
    assert not any(key in question for key, _ in found if key not in asked)  # distractors
    assert list(sample.answers) == [v for key, v in found if key in asked]
    shape = {"niah_single": (1, 1), "niah_multikey": (4, 1), "niah_multivalue": (1, 4),
             "niah_multiquery": (4, 4)}[task]
    assert (len({key for key, _ in found}), len(sample.answers)) == shape
    # Token level: each value lies in its needle's tokens and in no other token of the prompt.
    outside, last = "", 0
    for a, b in sample.needle_spans:
        outside += smollm2.decode(sample.ids[last:a]) + "|"
        last = b
    outside += smollm2.decode(sample.ids[last:])
    for value, (a, b) in zip(values, sample.needle_spans):
        assert sample.text.count(value) == 1  # nowhere else in the prompt, question included
        assert value in smollm2.decode(sample.ids[a:b])
        assert value not in outside
    assert smollm2.decode(sample.answer_ids) == sample.answer == " " + ", ".join(sample.answers)


@pytest.mark.parametrize("task", ("passkey", "vt"))
def test_the_value_occurs_only_in_its_needle(smollm2, task):
    sample = tasks.generate(task, smollm2, 2048, 0.6, 5)
    value = sample.answers[0] if task == "passkey" else sample.details["value"]
    context = part(smollm2, sample, "context")
    in_needles = sum(n.count(value) for n in sample.needles)
    assert in_needles == (2 if task == "passkey" else 1)
    assert context.count(value) == in_needles
    assert sample.text[:sample.text.index(context)].count(value) == 0


@pytest.mark.parametrize("task", tasks.names())
def test_same_inputs_same_tokens_and_seeds_differ(tokenizer, task):
    first = tasks.generate(task, tokenizer, 768, 0.3, 11)
    random.seed(12345)  # the generator's draws must not come from the global generator
    random.random()
    again = tasks.generate(task, tokenizer, 768, 0.3, 11)
    assert again == first
    ids = ",".join(map(str, first.ids)).encode("ascii")
    assert first.sha256 == hashlib.sha256(ids).hexdigest()
    others = [tasks.generate(task, tokenizer, 768, 0.3, seed) for seed in range(4)]
    drawn = [s.answers for s in others + [first]]
    assert len(set(drawn)) == len(drawn)


@pytest.mark.parametrize("task", tasks.names())
@pytest.mark.parametrize("length", (384, 1500, 4096))
def test_the_prompt_is_the_longest_within_the_length(tokenizer, task, length):
    sample = tasks.generate(task, tokenizer, length, 0.5, 2)
    assert len(sample.ids) <= length
    assert sample.ids == tuple(tokenizer.encode_ids(sample.text)) if tokenizer.bos_id is None \
        else sample.ids == (tokenizer.bos_id,) + tuple(tokenizer.encode_ids(sample.text))
    if task == "cwe":  # one more word adds three list entries
        entries = re.findall(r"\d+\. [a-z]+", part(tokenizer, sample, "context"))
        step = 3 * max(len(tokenizer.encode_ids(" " + e)) for e in entries)
    else:
        step = longest_sentence(sample, tokenizer)
    assert length - len(sample.ids) <= step + BOUNDARY_TOKENS
    if task != "cwe":  # cwe's common repeats follow the length
        tight = tasks.generate(task, tokenizer, len(sample.ids), 0.5, 2)
        assert tight.ids == sample.ids


@pytest.mark.parametrize("task", tasks.names())
def test_spans_cover_the_prompt_and_hold_its_parts(tokenizer, task):
    sample = tasks.generate(task, tokenizer, 900, 0.7, 1)
    spans = sample.spans
    assert spans["prefix"][0] == 0
    assert spans["prefix"][1] == spans["context"][0] < spans["context"][1] == spans["question"][0]
    assert spans["question"][1] == len(sample.ids)
    assert spans["answer"] == (len(sample.ids), len(sample.ids) + len(sample.answer_ids))
    head = part(tokenizer, sample, "prefix")
    context = part(tokenizer, sample, "context")
    question = part(tokenizer, sample, "question")
    assert (head + context + question).replace("<bos>", "") == sample.text
    assert question.startswith("\n") and question.strip().split()[0] in ("What", "Question:")
    assert "\n" not in context.strip()
    assert context.strip() and all(n in context for n in sample.needles)
    prompt = list(sample.ids[1:] if tokenizer.bos_id is not None else sample.ids)
    whole = tokenizer.encode_ids(sample.text + sample.answer)
    assert whole[:len(prompt)] == prompt and tuple(whole[len(prompt):]) == sample.answer_ids
    assert tokenizer.decode(sample.answer_ids) == sample.answer
    for answer in sample.answers:
        assert answer in sample.answer
