"""RULER's common-word extraction (aggregation): a numbered list "1. word 2. word ..." in which
ten words appear `common` times each and every other word three times; asked for the ten most
common. The words are the haystack's distinct lower-case words (four letters or more); the list's
length fills the prompt. common = min(30, max(4, length // 200)) (RULER's 30 at 6000 tokens and
more, fewer where 300 entries would not fit), always above the other words' 3."""

from __future__ import annotations

import random
import re

from .errors import TaskError
from .prompt import Layout

COMMON_WORDS = 10
UNCOMMON_REPEATS = 3
HEAD = ("Below is a numbered list of words. In these words, some appear more often than others. "
        "Memorize the ones that appear most often.\n")
QUESTION = ("\nQuestion: What are the 10 most common words in the above list? Answer: The top 10 "
            "words that appear most often in the list are:")


def common_repeats(length):
    """How often each common word appears at a prompt length."""
    return min(30, max(4, length // 200))


def layout(task, rng, haystack, depth, length):
    words = sorted(set(re.findall(r"\b[a-z]{4,}\b", haystack.text)))
    if len(words) < COMMON_WORDS + 1:
        raise TaskError(f"haystack {haystack.name}: has {len(words)} distinct words, {task} needs "
                        f"at least {COMMON_WORDS + 1} (use a license text)")
    drawn = rng.sample(words, len(words))
    common, uncommon = drawn[:COMMON_WORDS], drawn[COMMON_WORDS:]
    repeats = common_repeats(length)
    seed = f"{rng.random()!r}"

    def sentences(n):
        entries = [w for w in common for _ in range(repeats)] + \
            [w for w in uncommon[:n] for _ in range(UNCOMMON_REPEATS)]
        random.Random(f"{seed}:{n}").shuffle(entries)
        return [f"{i + 1}. {w}" for i, w in enumerate(entries)]

    # The answer lists the common words in the order the seed drew them (the list's order changes
    # with its length; the answer does not).
    answer = tuple(common)
    return Layout(head=HEAD, question=QUESTION, answer=" " + ", ".join(answer), answers=answer,
                  needles=[], sentences=sentences, available=len(uncommon), source=haystack.name,
                  details={"common": list(common), "common_repeats": repeats,
                           "uncommon_repeats": UNCOMMON_REPEATS})
