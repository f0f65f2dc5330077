"""A task's prompt fitted to a length in tokens: the layout a task draws (instruction, needles with
their depths, haystack sentences, question, answer) assembled with as many haystack sentences as
fit, and the token spans of its parts."""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

from .errors import TaskError


@dataclass
class Layout:
    """What a task drew for one sample, before it is fitted to a length.

    head: the instruction before the context (ends with its line break); question: the text after
    the context, answer prefix included, without trailing whitespace; answer: the text that follows
    the prompt (starting with its space); answers: the values a response must contain.
    needles: [(sentence, fraction)] in context order, fraction in [0, 1] the share of the
    haystack's tokens that precede it (non-decreasing).
    sentences(n): the context's first n haystack sentences; available: how many there are (None:
    endless); source: the haystack's name, for messages."""

    head: str
    question: str
    answer: str
    answers: tuple
    needles: list
    sentences: object
    available: object
    source: str
    details: dict = field(default_factory=dict)


@dataclass
class Fitted:
    """The assembled prompt: its text, ids (BOS first when the tokenizer adds one), token spans
    and answer ids."""

    text: str
    ids: list
    spans: dict
    needles: list
    needle_spans: list
    answer_ids: list
    sentences: int


class _Counter:
    """Token counts of texts, remembered within one generation."""

    def __init__(self, encode):
        self.encode = encode
        self.memo = {}

    def __call__(self, text):
        if text not in self.memo:
            self.memo[text] = len(self.encode(text))
        return self.memo[text]


def boundary(cumulative, fraction):
    """The sentence boundary b (0..n) whose token count before it, cumulative[b], is nearest to
    fraction * cumulative[-1] (the earlier of two equally near)."""
    target = fraction * cumulative[-1]
    b = bisect.bisect_left(cumulative, target)
    if b == len(cumulative):
        return b - 1
    if b > 0 and target - cumulative[b - 1] <= cumulative[b] - target:
        return b - 1
    return b


def assemble(layout, n, count):
    """(prompt text, context (start, end) in characters, needle (start, end)s in characters) with
    the first n haystack sentences and each needle at the boundary nearest its fraction. Context
    pieces are joined by one space; a needle's span starts at its leading space."""
    sentences = layout.sentences(n)
    cumulative = [0]
    for sentence in sentences:
        cumulative.append(cumulative[-1] + count(" " + sentence))
    at = {}
    for index, (_, fraction) in enumerate(layout.needles):
        at.setdefault(boundary(cumulative, fraction), []).append(index)
    pieces = []  # (text, needle index or None)
    for b in range(len(sentences) + 1):
        pieces += [(layout.needles[i][0], i) for i in at.get(b, [])]
        if b < len(sentences):
            pieces.append((sentences[b], None))
    text = layout.head
    context_start = len(text)
    needle_chars = [None] * len(layout.needles)
    for k, (piece, index) in enumerate(pieces):
        start = len(text)
        text += (" " if k else "") + piece
        if index is not None:
            needle_chars[index] = (start, len(text))
    context = (context_start, len(text))
    return text + layout.question, context, needle_chars


def fit(layout, encode, length, label):
    """The Fitted prompt of the layout with the most haystack sentences whose whole prompt (BOS,
    instruction, context, question, answer prefix) is at most `length` tokens. TaskError when even
    no sentence fits, or when a finite haystack runs out before the length is reached."""
    count = _Counter(encode)
    bos = len(encode.bos)
    fixed = bos + count(layout.head) + count(layout.question) + \
        sum(count(" " + text) for text, _ in layout.needles)
    if fixed > length:
        raise TaskError(f"length {length}: too small for {label} (its instruction, needles and "
                        f"question alone take {fixed} tokens)")

    def estimate(n):
        return fixed + sum(count(" " + s) for s in layout.sentences(n))

    def within(n):
        return layout.available is None or n <= layout.available

    # The largest n whose estimate fits: doubling, then bisection.
    low, high = 0, 1
    while within(high) and estimate(high) <= length:
        low, high = high, high * 2
    if not within(high):
        high = layout.available + 1
    while high - low > 1:
        middle = (low + high) // 2
        if estimate(middle) <= length:
            low = middle
        else:
            high = middle

    def exact(n):
        text, context, needle_chars = assemble(layout, n, count)
        return text, context, needle_chars, encode.bos + encode(text)

    n = low
    built = exact(n)
    while len(built[3]) > length:
        if n == 0:
            raise TaskError(f"length {length}: too small for {label} (the prompt without haystack "
                            f"takes {len(built[3])} tokens)")
        n -= 1
        built = exact(n)
    while within(n + 1):
        longer = exact(n + 1)
        if len(longer[3]) > length:
            break
        n, built = n + 1, longer
    text, context, needle_chars, ids = built
    if layout.available is not None and n == layout.available and len(ids) < length:
        raise TaskError(f"length {length}: beyond the haystack {layout.source} (all of it makes a "
                        f"{len(ids)}-token prompt for {label}; join more texts with '+')")
    token_at = _TokenPositions(text, ids, encode)
    spans = {"prefix": (0, token_at(context[0])),
             "context": (token_at(context[0]), token_at(context[1])),
             "question": (token_at(context[1]), len(ids))}
    needle_spans = [(token_at(a), token_at(b)) for a, b in needle_chars]
    whole = encode(text + layout.answer)
    if whole[:len(ids) - bos] != ids[bos:] or len(whole) == len(ids) - bos:
        raise TaskError(f"tokenizer: the answer {layout.answer!r} merges with the end of the "
                        f"prompt ({text[-20:]!r}) into other tokens; the answer's tokens are not "
                        "those that follow the prompt")
    answer_ids = whole[len(ids) - bos:]
    spans["answer"] = (len(ids), len(ids) + len(answer_ids))
    needles = [text[a:b].lstrip(" ") for a, b in needle_chars]
    return Fitted(text, ids, spans, needles, needle_spans, answer_ids, n)


class _TokenPositions:
    """Character position -> token position in the prompt's ids: the ids of the text before it,
    which must be a prefix of the prompt's ids. Where the tokenizer joins the whitespace before
    the position with what follows (e.g. "\n\n" before a word), the boundary moves back to the
    start of that whitespace; where it merges across the boundary otherwise, TaskError."""

    def __init__(self, text, ids, encode):
        self.text, self.ids, self.encode = text, ids, encode
        self.bos = len(encode.bos)
        self.memo = {}

    def __call__(self, position):
        if position not in self.memo:
            stripped = len(self.text[:position].rstrip())
            for candidate in dict.fromkeys((position, stripped)):
                before = self.encode(self.text[:candidate])
                if self.ids[self.bos:self.bos + len(before)] == before:
                    self.memo[position] = self.bos + len(before)
                    break
            else:
                raise TaskError(f"tokenizer: the prompt's tokens cross the boundary at character "
                                f"{position} ({self.text[max(0, position - 15):position + 15]!r}), "
                                "so the part's token span is not exact")
        return self.memo[position]
