"""vt and cwe answers recomputed from the generated text alone: the variables a chain of
assignments reaches from the asked value, and the most frequent words of the numbered list."""

import collections
import re

import pytest

from subevict import tasks

STATEMENT = re.compile(r"VAR ([A-Z]+) = (VAR [A-Z]+|\d+)\.")


@pytest.mark.parametrize("depth", (0.0, 0.5, 1.0))
@pytest.mark.parametrize("seed", range(3))
def test_vt_the_chain_from_the_value_reaches_exactly_the_answer(tokenizer, depth, seed):
    sample = tasks.generate("vt", tokenizer, 1024, depth, seed)
    context = tokenizer.decode(sample.ids[slice(*sample.spans["context"])])
    value = re.search(r"assigned the value (\d+) in the text above", sample.text).group(1)
    holds = {value}  # what holds the value: the number, then every variable assigned from one
    reached = []
    for name, source in STATEMENT.findall(context):  # in text order, as the model reads them
        if source.removeprefix("VAR ") in holds:
            holds.add(name)
            reached.append(name)
    assert reached == list(sample.answers)
    assert sample.answer == " " + " ".join(reached)
    assert f"{len(reached)} variables are assgined the value {value}" in sample.text


@pytest.mark.parametrize("length", (600, 2048, 6000))
@pytest.mark.parametrize("seed", range(2))
def test_cwe_the_answer_is_exactly_the_most_frequent_words(tokenizer, length, seed):
    sample = tasks.generate("cwe", tokenizer, length, 0.5, seed)
    context = tokenizer.decode(sample.ids[slice(*sample.spans["context"])])
    entries = re.findall(r"(\d+)\. ([a-z]+)", context)
    assert [int(n) for n, _ in entries] == list(range(1, len(entries) + 1))
    assert " ".join(f"{n}. {w}" for n, w in entries) == context.strip()
    counts = collections.Counter(w for _, w in entries).most_common()
    top = {w for w, _ in counts[:10]}
    assert counts[9][1] > counts[10][1]  # ten words stand out: no tie at the tenth place
    assert set(sample.answers) == top and len(sample.answers) == 10
    assert sample.answer == " " + ", ".join(sample.answers)
