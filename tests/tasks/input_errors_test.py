"""Bad input to subevict.tasks: one TaskError (a ValueError) per case, one line naming the input
and what was expected."""

import pytest

from subevict import tasks

CASES = [
    # (keyword arguments of generate, words the message must contain)
    (dict(task="niah_double"), ["task", "niah_double", *tasks.names()]),
    (dict(haystack="gpl-4"), ["haystack", "gpl-4", "gpl-3", "noise"]),
    (dict(haystack="gpl-3+moby"), ["haystack", "moby"]),
    (dict(depth=-0.1), ["depth", "-0.1", "[0, 1]"]),
    (dict(depth=1.5), ["depth", "1.5", "[0, 1]"]),
    (dict(depth=float("nan")), ["depth", "nan"]),
    (dict(length=40), ["length 40", "too small", "niah_single"]),
    (dict(length=0), ["length", "0"]),
    (dict(length=8192, haystack="artistic"), ["length 8192", "beyond the haystack artistic"]),
    (dict(seed=-1), ["seed", "-1", ">= 0"]),
    (dict(task="cwe", haystack="noise"), ["haystack noise", "cwe"]),
    (dict(length=2048, limit=1024), ["length 2048", "context of 1024"]),
    (dict(task="niah_multivalue", length=1000, limit=1010), ["answer", "niah_multivalue",
                                                             "does not fit", "1010"]),
    (dict(tokenizer=object()), ["tokenizer", "encode"]),
]


@pytest.mark.parametrize("arguments, words", CASES, ids=[str(c[0]) for c in CASES])
def test_bad_input_raises_one_line_naming_it(smollm2, arguments, words):
    call = dict(task="niah_single", tokenizer=smollm2, length=1024, depth=0.5, seed=0)
    call.update(arguments)
    with pytest.raises(tasks.TaskError) as raised:
        tasks.generate(**call)
    message = str(raised.value)
    assert isinstance(raised.value, ValueError)
    assert "\n" not in message
    for word in words:
        assert word in message, (word, message)


@pytest.mark.parametrize("count", (0, -2))
def test_sample_count_below_one_is_refused(smollm2, count):
    with pytest.raises(tasks.TaskError, match=f"samples: expected an int >= 1, got {count}"):
        tasks.samples("passkey", smollm2, 512, 0.5, count)


def test_samples_are_generate_over_consecutive_seeds(smollm2):
    many = tasks.samples("passkey", smollm2, 512, 0.5, 3, seed=7)
    assert many == [tasks.generate("passkey", smollm2, 512, 0.5, s) for s in (7, 8, 9)]
