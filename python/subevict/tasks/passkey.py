"""The passkey task (the classic passkey retrieval test): a 5-digit pass key stated
once in a repeated filler, asked at the end."""

from __future__ import annotations

from .needles import Draws
from .prompt import Layout

HEAD = ("There is an important info hidden inside a lot of irrelevant text. Find it and memorize "
        "them. I will quiz you about the important information there.\n")
NEEDLE = "The pass key is {key}. Remember it. {key} is the pass key."
QUESTION = "\nWhat is the pass key? The pass key is"
KEY_DIGITS = 5


def layout(task, rng, haystack, depth, length):
    key = Draws(rng, haystack.text + HEAD + QUESTION).number(KEY_DIGITS)
    return Layout(head=HEAD, question=QUESTION, answer=" " + key, answers=(key,),
                  needles=[(NEEDLE.format(key=key), depth)], sentences=haystack.first,
                  available=haystack.available, source=haystack.name, details={"anchor": 0})
