"""The agreement measure of the llama.cpp comparison (subevict.models.llama_cpp.agreement), on
logits built here: it needs neither llama.cpp nor a model, so it runs in CI, while the comparison
itself (scripts/llama_cpp_check.py, which needs llama.cpp built) is run and recorded on its own
(bench/results/llama_cpp_check.md).

    .venv/bin/python -m pytest -q tests/models
"""

import math

import numpy as np
import pytest
import torch

from subevict.models import llama_cpp

N, VOCAB = 64, 50


@pytest.fixture
def case():
    generator = torch.Generator().manual_seed(0)
    logits = 3.0 * torch.randn(N, VOCAB, generator=generator)
    ids = torch.randint(0, VOCAB, (N,), generator=generator)
    return logits, ids


def test_identical_logits_agree_exactly(case):
    logits, ids = case
    numbers = llama_cpp.agreement(logits, logits.clone(), ids)
    assert numbers["perplexity"] == numbers["reference_perplexity"]
    assert (numbers["perplexity_rel"], numbers["top1_agreement"], numbers["mean_kl"]) == (0.0, 1.0, 0.0)
    assert numbers["within"]


def test_the_numbers_are_the_definitions(case):
    logits, ids = case
    other = logits + 0.3 * torch.randn(N, VOCAB, generator=torch.Generator().manual_seed(1))
    numbers = llama_cpp.agreement(other, logits, ids)
    # Independent float64 computation over the n - 1 predicted positions.
    ours = torch.log_softmax(other[:-1].double(), -1).numpy()
    ref = torch.log_softmax(logits[:-1].double(), -1).numpy()
    target = ids[1:].numpy()
    rows = np.arange(N - 1)
    assert numbers["perplexity"] == pytest.approx(math.exp(-ours[rows, target].mean()), rel=1e-5)
    assert numbers["reference_perplexity"] == pytest.approx(math.exp(-ref[rows, target].mean()), rel=1e-5)
    kl = (np.exp(ref) * (ref - ours)).sum(-1)
    assert numbers["mean_kl"] == pytest.approx(kl.mean(), rel=1e-4)
    agree = (ours.argmax(-1) == ref.argmax(-1)).mean()
    assert numbers["top1_agreement"] == pytest.approx(agree)


@pytest.mark.parametrize("break_it, failing", [
    (lambda x: x * 1.5, "mean_kl"),                                   # sharper: KL and perplexity move
    (lambda x: x.roll(1, dims=-1), "top1_agreement"),                 # every argmax shifted
    (lambda x: x + torch.linspace(0, 1, VOCAB) * 2.0, "mean_kl"),     # a bias toward high ids
])
def test_a_wrong_forward_is_not_within_the_tolerances(case, break_it, failing):
    logits, ids = case
    numbers = llama_cpp.agreement(break_it(logits), logits, ids)
    assert not numbers["within"]
    limit = llama_cpp.TOLERANCES[failing]
    assert numbers[failing] > limit if failing != "top1_agreement" else numbers[failing] < limit


def test_a_small_perturbation_stays_within(case):
    logits, ids = case
    numbers = llama_cpp.agreement(logits + 1e-3 * torch.randn(N, VOCAB), logits, ids)
    assert numbers["within"], numbers
