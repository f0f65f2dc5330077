"""RULER's needle-in-a-haystack family: needles "One of the special magic numbers for {key} is:
{value}." with 7-digit values, in RULER's base template (plain text).

niah_single: one key, one value, asked. niah_multikey: four keys with a value each, one asked (the
other three are distractors). niah_multivalue: one key with four values, all asked.
niah_multiquery: four keys with a value each, all asked. The first asked needle is placed at the
requested depth; the sample's other needles at boundaries drawn uniformly over the context."""

from __future__ import annotations

from .needles import Draws
from .prompt import Layout

# task -> (keys, values per key, keys asked)
SHAPES = {"niah_single": (1, 1, 1), "niah_multikey": (4, 1, 1), "niah_multivalue": (1, 4, 1),
          "niah_multiquery": (4, 1, 4)}
VALUE_DIGITS = 7
HEAD = ("Some special magic {kind} are hidden within the following text. Make sure to memorize "
        "it. I will quiz you about the {kind} afterwards.\n")
QUESTION = ("\nWhat are all the special magic {kind} for {query} mentioned in the provided text? "
            "The special magic {kind} for {query} mentioned in the provided text are")
NEEDLE = "One of the special magic numbers for {key} is: {value}."


def singular(text):
    """RULER's wording when one value is asked: 'Some ... are' -> 'A ... is', numbers -> number."""
    for plural, one in (("Some", "A"), ("are all", "is"), ("are ", "is "), ("numbers", "number")):
        text = text.replace(plural, one)
    return text[:-3] + "is" if text.endswith("are") else text


def query_of(keys):
    """'a', 'a and b', 'a, b, and c' as RULER joins the asked keys."""
    return keys[0] if len(keys) == 1 else ", ".join(keys[:-1]) + ", and " + keys[-1]


def layout(task, rng, haystack, depth, length):
    keys_n, values_n, asked_n = SHAPES[task]
    draws = Draws(rng, haystack.text + HEAD + QUESTION)
    keys = [draws.key() for _ in range(keys_n)]
    values = {key: [draws.number(VALUE_DIGITS) for _ in range(values_n)] for key in keys}
    asked = keys[:asked_n]
    # The first asked needle at the requested depth, every other one at a uniform draw.
    placed = [(depth, keys[0], values[keys[0]][0])]
    placed += [(rng.random(), key, value) for key in keys for value in values[key]
               if (key, value) != (keys[0], values[keys[0]][0])]
    order = sorted(range(len(placed)), key=lambda i: (placed[i][0], i))
    needles = [(NEEDLE.format(key=placed[i][1], value=placed[i][2]), placed[i][0]) for i in order]
    in_context = [(placed[i][1], placed[i][2]) for i in order]
    asked_in_order = [key for key in dict.fromkeys(k for k, _ in in_context) if key in asked]
    answers = tuple(v for key, v in in_context if key in asked)
    head, question = HEAD.format(kind="numbers"), QUESTION.format(kind="numbers",
                                                                  query=query_of(asked_in_order))
    if asked_n * values_n == 1:
        head, question = singular(head), singular(question)
    return Layout(head=head, question=question, answer=" " + ", ".join(answers), answers=answers,
                  needles=needles, sentences=haystack.first, available=haystack.available,
                  source=haystack.name,
                  details={"asked": asked_in_order, "values": values,
                           "anchor": order.index(0)})
