"""The closed-loop report's Spearman rho of mean mass / OPT against Delta log-perplexity
(closed_loop_report.analysis), on made-up runs whose points are asymmetric: a sign flip, a pairing
of each mass with another run's loss (reversed, or shifted by one) and the axes swapped for one
coordinate's ranks would each give another number. References: scipy.stats.spearmanr on the
points listed here, and the definition (Pearson's correlation of average ranks). No model needed.

    .venv/bin/python -m pytest -q tests/closed_loop/spearman_test.py
"""

import numpy as np
import pytest
from scipy.stats import spearmanr

from subevict.closed_loop_report import analysis

# (policy, kind, budget size, mean mass / OPT, Delta log-perplexity): per budget, losses that mostly
# fall as the mass rises, not monotonically; no tie but opt's mass / OPT of 1.
RUNS = [
    ("h2o", "policy", 16, 0.71, 0.93), ("tova", "policy", 16, 0.83, 0.41),
    ("local", "policy", 16, 0.64, 0.52), ("random", "policy", 16, 0.52, 1.37),
    ("snapkv", "policy", 16, 0.88, 0.47), ("opt", "opt", 16, 1.00, 0.12),
    ("h2o", "policy", 48, 0.90, 0.11), ("tova", "policy", 48, 0.95, 0.09),
    ("local", "policy", 48, 0.86, 0.05), ("random", "policy", 48, 0.79, 0.38),
    ("snapkv", "policy", 48, 0.97, 0.14), ("opt", "opt", 48, 1.00, 0.02),
    ("topk", "topk", 16, None, 0.08), ("topk", "topk", 48, None, 0.01),  # no ratio: left out
]
REL = 1e-12


def runs():
    return [{"policy": p, "kind": kind, "budget_size": k, "budget": k, "mean_ratio_to_opt": x,
             "delta_log_perplexity": y, "perplexity": float(np.exp(2.0 + y)),
             "mass_order_violations": 0} for p, kind, k, x, y in RUNS]


def points(budget=None):
    return [(x, y) for _, _, k, x, y in RUNS if x is not None and budget in (None, k)]


def average_ranks(values):
    """1-based ranks, tied values sharing the mean of their ranks."""
    values = np.asarray(values, dtype=float)
    return np.array([(values < v).sum() + ((values == v).sum() + 1) / 2 for v in values])


def rank_formula(pairs):
    """Spearman's rho by its definition: the Pearson correlation of the average ranks (both
    opt runs have mass / OPT 1, a tie)."""
    xs, ys = np.array(pairs).T
    return float(np.corrcoef(average_ranks(xs), average_ranks(ys))[0, 1])


@pytest.mark.parametrize("budget", [None, 16, 48])
def test_rho_is_scipys_on_the_pairs_of_each_run(budget):
    pairs = points(budget)
    a = analysis(runs())
    got = (a["spearman_mass_vs_delta_log_perplexity"] if budget is None
           else a["per_budget"][str(budget)]["spearman_mass_vs_delta_log_perplexity"])
    rho, p = spearmanr(*zip(*pairs))
    assert got["points"] == len(pairs)
    assert got["rho"] == pytest.approx(rho, rel=REL)
    assert got["rho"] == pytest.approx(rank_formula(pairs), rel=REL)
    assert got["p_value"] == pytest.approx(p, rel=1e-9)
    assert got["rho"] < 0  # more mass, less loss in these runs


def test_the_made_up_runs_tell_each_wrong_pairing_apart():
    """The fixture's own guard: every wrong reading of the points gives a rho that the test above
    would reject (so it cannot pass by symmetry of the data)."""
    pairs = points()
    xs, ys = (list(c) for c in zip(*pairs))
    rho = rank_formula(pairs)
    for wrong in (list(zip(xs, ys[::-1])), list(zip(xs, ys[1:] + ys[:1])),
                  list(zip(xs, [-y for y in ys]))):
        assert abs(rank_formula(wrong) - rho) > 0.1, wrong
    for budget in (16, 48):
        xs, ys = (list(c) for c in zip(*points(budget)))
        assert abs(rank_formula(list(zip(xs, ys[::-1]))) - rank_formula(points(budget))) > 0.1


def test_too_few_or_constant_points_give_no_rho():
    few = [r for r in runs() if r["budget_size"] == 16][:2]
    assert analysis(few)["spearman_mass_vs_delta_log_perplexity"] is None
    flat = [dict(r, mean_ratio_to_opt=0.9) for r in runs()]
    assert analysis(flat)["spearman_mass_vs_delta_log_perplexity"] is None
