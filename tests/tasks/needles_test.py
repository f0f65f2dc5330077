"""The random parts of a task never occur in the haystack or the fixed text, and never twice."""

import random

from subevict.tasks.needles import Draws


def test_a_number_found_in_the_haystack_is_drawn_again():
    predicted = str(random.Random("twin").randrange(10 ** 6, 10 ** 7))
    draws = Draws(random.Random("twin"), f"Section {predicted} of the license.")
    value = draws.number(7)
    assert value != predicted and len(value) == 7


def test_a_key_or_variable_found_in_the_haystack_is_drawn_again():
    from subevict.tasks.needles import KEY_WORDS

    predicted = "-".join(random.Random("k").sample(KEY_WORDS, 2))
    assert Draws(random.Random("k"), f"see {predicted}.").key() != predicted
    twin = random.Random("v")
    name = "".join(twin.choices("ABCDEFGHIJKLMNOPQRSTUVWXYZ", k=5))
    assert Draws(random.Random("v"), f"THE {name} CLAUSE").variable() != name


def test_draws_never_repeat_nor_contain_one_another():
    draws = Draws(random.Random(0), "")
    values = [draws.number(2) for _ in range(80)]  # 90 two-digit numbers: repeats would come
    assert len(set(values)) == len(values)
