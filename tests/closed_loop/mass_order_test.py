"""The closed loop's mass-order check (LayerRecord.order_violations: policy <= OPT <= topk per KV
head), on records made up here that keep or break each inequality; no model needed.

    .venv/bin/python -m pytest -q tests/closed_loop/mass_order_test.py
"""

import pytest

from subevict.evicted_forward import MASS_ORDER_RTOL, LayerRecord

# Per KV head: a policy's mass, OPT and the oracle's mass, in order (three heads).
MASS, OPT, TOPK = [40.0, 50.0, 60.0], [45.0, 52.0, 61.0], [47.0, 55.0, 63.0]
# Far beyond the check's rounding slack, far below any real gap between caches.
BREAK = 1e3 * MASS_ORDER_RTOL


def record(kind, mass, opt=OPT, topk=TOPK, compressed=(True, True, True)):
    return LayerRecord(3, kind, list(compressed), list(mass), list(opt), list(topk))


def test_records_in_order_have_no_violation():
    assert record("policy", MASS).order_violations() == 0
    assert record("policy", OPT).order_violations() == 0  # a policy may reach OPT
    assert record("opt", OPT).order_violations() == 0
    assert record("topk", TOPK).order_violations() == 0
    # Within the slack: the three masses are double sums over n steps.
    assert record("policy", [OPT[0] * (1 + MASS_ORDER_RTOL / 2), *MASS[1:]]).order_violations() == 0


@pytest.mark.parametrize("head", [0, 1, 2])
def test_a_policy_above_opt_on_one_head_is_one_violation(head):
    mass = list(MASS)
    mass[head] = OPT[head] * (1 + BREAK)
    assert record("policy", mass).order_violations() == 1


@pytest.mark.parametrize("kind", ["policy", "opt", "topk"])
def test_opt_above_topk_on_one_head_is_one_violation(kind):
    opt = list(OPT)
    opt[1] = TOPK[1] * (1 + BREAK)
    mass = {"policy": MASS, "opt": opt, "topk": TOPK}[kind]
    assert record(kind, mass, opt=opt).order_violations() == 1


def test_each_head_is_checked_when_another_head_is_kept_whole():
    """A policy that keeps head 0 whole (l2norm's skipped layers) holds more than OPT of k there,
    which is no violation; head 2, compressed, above OPT still is one."""
    mass = [TOPK[0] + 5.0, MASS[1], OPT[2] * (1 + BREAK)]
    assert record("policy", mass, compressed=(False, True, True)).order_violations() == 1
    assert record("policy", mass[:2] + MASS[2:], compressed=(False, True, True)).order_violations() == 0


@pytest.mark.parametrize("factor", [1 - BREAK, 1 + BREAK])
def test_opts_own_mass_must_equal_opt(factor):
    """opt's mass is its schedule's, measured apart from the optimum's value: below OPT the
    optimum claims more than its cache keeps, above OPT it was not optimal."""
    mass = list(OPT)
    mass[0] *= factor
    assert record("opt", mass).order_violations() == 1


def test_a_check_that_compares_a_mass_with_itself_fails_here():
    """The check must read OPT, not the run's own mass, as the bound: the policy record above
    OPT on every head counts three violations."""
    above = [o * (1 + BREAK) for o in OPT]
    assert record("policy", above).order_violations() == 3
    assert record("policy", above).compressed and not record("policy", above,
                                                             compressed=(True, False, True)).compressed
