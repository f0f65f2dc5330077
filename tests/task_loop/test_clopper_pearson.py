"""_subevict.clopper_pearson against the Beta quantiles it is defined by (scipy, an independent
implementation) and the closed forms at the ends; bad arguments raise InputError naming them."""

import pytest

from subevict import InputError, _subevict


@pytest.mark.parametrize("successes,trials", [(0, 10), (3, 10), (10, 10), (17, 40), (1, 1)])
def test_the_interval_is_the_beta_quantiles(successes, trials):
    stats = pytest.importorskip("scipy.stats")
    lower, upper = _subevict.clopper_pearson(successes, trials, 0.95)
    want_lower = 0.0 if successes == 0 else stats.beta.ppf(0.025, successes, trials - successes + 1)
    want_upper = 1.0 if successes == trials else stats.beta.ppf(0.975, successes + 1, trials - successes)
    assert lower == pytest.approx(want_lower, abs=1e-10)
    assert upper == pytest.approx(want_upper, abs=1e-10)


def test_the_ends_have_closed_forms():
    # x = 0: upper = 1 - (alpha/2)^(1/n); x = n: lower = (alpha/2)^(1/n)
    n = 12
    assert _subevict.clopper_pearson(0, n, 0.9)[1] == pytest.approx(1 - 0.05 ** (1 / n), rel=1e-12)
    assert _subevict.clopper_pearson(n, n, 0.9)[0] == pytest.approx(0.05 ** (1 / n), rel=1e-12)


@pytest.mark.parametrize("args,field", [((1, 0), "trials"), ((5, 4), "successes"), ((-1, 4), "successes"),
                                        ((1, 4, 1.0), "confidence")])
def test_bad_arguments_are_refused_naming_them(args, field):
    with pytest.raises(InputError, match=f"clopper_pearson: {field}"):
        _subevict.clopper_pearson(*args)
