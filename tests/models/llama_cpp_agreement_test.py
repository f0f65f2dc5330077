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
# float32 log-softmax of logits shifted by a constant per row: the same distribution up to rounding.
SHIFT_TOL = 1e-5


@pytest.fixture
def case():
    generator = torch.Generator().manual_seed(0)
    logits = 3.0 * torch.randn(N, VOCAB, generator=generator)
    ids = torch.randint(0, VOCAB, (N,), generator=generator)
    return logits, ids


def test_logits_shifted_per_position_agree_and_their_difference_is_measured(case):
    """Adding a constant to every logit of a position changes no probability: the two forwards
    agree exactly in distribution, while their logits differ by the constants, which
    max_abs_logit_diff reports. A measure that compared either input with itself, or the
    log-probabilities of one forward with themselves, reads 0 there or misses the shift."""
    logits, ids = case
    shift = torch.linspace(-2.0, 3.0, N).unsqueeze(-1)  # per position; the last is never predicted
    numbers = llama_cpp.agreement(logits + shift, logits, ids)
    assert numbers["perplexity_rel"] < SHIFT_TOL and numbers["mean_kl"] < SHIFT_TOL, numbers
    assert numbers["top1_agreement"] == 1.0 and numbers["within"], numbers
    assert numbers["max_abs_logit_diff"] == pytest.approx(float(shift[:-1].abs().max()), rel=1e-5)
    assert numbers["perplexity"] == pytest.approx(numbers["reference_perplexity"], rel=SHIFT_TOL)


def test_the_reference_is_the_second_argument(case):
    """KL(reference || ours) and each side's perplexity are not symmetric: swapping the arguments
    changes them, so the measure reads its two inputs as named."""
    logits, ids = case
    other = 0.5 * logits + 0.5 * torch.randn(N, VOCAB, generator=torch.Generator().manual_seed(2))
    forward, backward = llama_cpp.agreement(other, logits, ids), llama_cpp.agreement(logits, other, ids)
    assert forward["perplexity"] == backward["reference_perplexity"] != forward["reference_perplexity"]
    assert abs(forward["mean_kl"] - backward["mean_kl"]) > 0.01 * forward["mean_kl"]


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
    assert numbers["max_kl"] == pytest.approx(kl.max(), rel=1e-4)
    agree = (ours.argmax(-1) == ref.argmax(-1)).mean()
    assert numbers["top1_agreement"] == pytest.approx(agree)
    assert numbers["max_abs_logit_diff"] == pytest.approx(float((other - logits)[:-1].abs().max()), rel=1e-6)


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
