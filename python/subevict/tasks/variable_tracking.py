"""RULER's variable tracking (multi-hop tracing): one chain "VAR A = 12345.", "VAR B = VAR A.",
... of four hops (five variables) hidden in the haystack; asked which variables hold the value.
The chain's first statement is placed at the requested depth, the others in order at boundaries
drawn uniformly after it."""

from __future__ import annotations

from .needles import Draws
from .prompt import Layout

HOPS = 4
VALUE_DIGITS = 5
HEAD = "Memorize and track the chain(s) of variable assignment hidden in the following text.\n\n"
# RULER's wording, its spelling "assgined" included.
QUESTION = ("\nQuestion: Find all variables that are assigned the value {value} in the text above. "
            "Answer: According to the chain(s) of variable assignment in the text above, {count} "
            "variables are assgined the value {value}, they are:")


def layout(task, rng, haystack, depth, length):
    draws = Draws(rng, haystack.text + HEAD + QUESTION)
    value = draws.number(VALUE_DIGITS)
    names = [draws.variable() for _ in range(HOPS + 1)]
    statements = [f"VAR {names[0]} = {value}."] + \
        [f"VAR {names[j + 1]} = VAR {names[j]}." for j in range(HOPS)]
    fractions = [depth] + sorted(depth + (1.0 - depth) * rng.random() for _ in range(HOPS))
    return Layout(head=HEAD, question=QUESTION.format(value=value, count=len(names)),
                  answer=" " + " ".join(names), answers=tuple(names),
                  needles=list(zip(statements, fractions)), sentences=haystack.first,
                  available=haystack.available, source=haystack.name,
                  details={"value": value, "chain": names, "anchor": 0})
