"""One generated task sample: the prompt, its token ids and the token spans of its parts."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Sample:
    """A prompt with an exact answer. Token spans are [start, end) indices into `ids` (the prompt's
    token ids, BOS first when the tokenizer adds one); `spans["answer"]` indexes the answer tokens
    as they would follow the prompt (ids + answer_ids).

    task, haystack, length, depth, seed: the inputs (haystack by its canonical name; length is the
    requested maximum in tokens, len(ids) <= length).
    text: the prompt (instruction, context, question and answer prefix; no trailing whitespace).
    spans: "prefix" (BOS and instruction), "context" (the haystack with the needles), "question"
    (question and answer prefix, up to the end of the prompt), "answer".
    needles: the needle sentences as inserted, in context order; needle_spans their token spans.
    answer: the text that follows the prompt (e.g. " 1234567"); answers: the values a response
    must contain (one for single-value tasks, several for multi-value ones); answer_ids:
    the answer's token ids, tokenize(text + answer)[len(ids):] (the prompt's ids are a prefix).
    sha256: SHA-256 of the prompt's ids written as comma-separated decimals.
    details: task-specific facts (keys asked and their distractors, the variable chain, word
    frequencies), JSON-serializable."""

    task: str
    haystack: str
    length: int
    depth: float
    seed: int
    text: str
    ids: tuple
    spans: dict
    needles: tuple
    needle_spans: tuple
    answer: str
    answers: tuple
    answer_ids: tuple
    sha256: str
    details: dict = field(default_factory=dict)

    def to_dict(self):
        """The sample as plain JSON-serializable values."""
        return {"task": self.task, "haystack": self.haystack, "length": self.length,
                "depth": self.depth, "seed": self.seed, "text": self.text, "ids": list(self.ids),
                "spans": {k: list(v) for k, v in self.spans.items()},
                "needles": list(self.needles),
                "needle_spans": [list(s) for s in self.needle_spans], "answer": self.answer,
                "answers": list(self.answers), "answer_ids": list(self.answer_ids),
                "sha256": self.sha256, "details": self.details}
