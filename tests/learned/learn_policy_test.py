"""The learned policy end to end on a small generated workload (a few hundred tokens): training on
the optimum's decisions ranks the optimum's evicted member lowest in most training steps (a learner
that learns nothing does not), the C++ policy `learned:model=FILE` evicts what the NumPy model says
on the same features, files from another format, version or feature set are refused naming the
field, and scripts/learn_policy.py trains and evaluates from the command line.

    .venv/bin/python -m pytest -q tests/learned
"""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import subevict
from subevict import learned

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import learn_policy  # noqa: E402

TOKENS = 256
BUDGETS = [0.1, 0.2]
LAYERS = [0, 1]


@pytest.fixture(scope="module")
def workload():
    return subevict.generate("tiny-gqa", tokens=TOKENS, layers=2, seed=3)


@pytest.fixture(scope="module")
def traces(workload):
    return learn_policy.optimum_traces(workload, LAYERS, BUDGETS, steps_per_head=64, quiet=True)


@pytest.fixture(scope="module")
def model(traces):
    doc = learned.train([t[3] for t in traces], feature_options=learn_policy.FEATURE_OPTIONS, hidden=8, seed=0)
    return learned.model_document(doc["nets"], learn_policy.FEATURE_OPTIONS)


def test_training_ranks_the_optimums_choice_lowest_in_most_steps(traces, model):
    layers = [t[0] for t in traces]
    data = [t[3] for t in traces]
    trained = learned.top1(model, data, layers)
    # A learner that learns nothing: the same net with every weight 0 scores all members alike,
    # so it evicts the lowest token (the oldest member) at every step.
    blank = json.loads(json.dumps(model))
    for layer in blank["nets"][0]["dense"]:
        layer["weights"] = np.zeros_like(layer["weights"]).tolist()
        layer["bias"] = np.zeros_like(layer["bias"]).tolist()
    untrained = learned.top1(blank, data, layers)
    # The rule a learner finds first: evict the newest token (the optimum's most frequent choice).
    newest = np.mean(np.concatenate([t["tokens"][t["offsets"][:-1] + t["evicted_row"]] == t["steps"] for t in data]))
    assert trained > 0.5, trained
    assert trained > untrained + 0.2, (trained, untrained)
    assert trained > newest + 0.03, (trained, newest)
    # Deterministic for a seed.
    again = learned.train(data, feature_options=learn_policy.FEATURE_OPTIONS, hidden=8, seed=0)
    assert again["nets"][0]["dense"] == model["nets"][0]["dense"]
    # Fit to every member's remaining lifetime instead, the net still finds the optimum's member far
    # more often than a blank net (here about as often as the newest-token rule: not asserted).
    lifetime = learned.train(data, feature_options=learn_policy.FEATURE_OPTIONS, hidden=8, seed=0, target="lifetime")
    by_lifetime = learned.top1(learned.model_document(lifetime["nets"], learn_policy.FEATURE_OPTIONS), data, layers)
    assert by_lifetime > untrained + 0.2, (by_lifetime, untrained)


def test_the_cpp_policy_evicts_what_the_numpy_model_says(workload, model, tmp_path):
    path = tmp_path / "model.json"
    learned.write_model(model, path)
    for layer, head, budget in [(0, 0, 0.1), (1, 1, 0.2)]:
        t = subevict.feature_trace(workload, layer, head, budget, policy=f"learned:model={path}",
                                   **learn_policy.FEATURE_OPTIONS)
        assert len(t["steps"]) > 100
        chosen = t["tokens"][t["offsets"][:-1] + t["evicted_row"]]
        np.testing.assert_array_equal(chosen, learned.decisions(model, t, layer))
        np.testing.assert_array_equal(chosen, t["evicted"][t["steps"]])


def test_files_of_another_format_version_or_feature_set_are_refused(workload, model, tmp_path):
    cases = {
        "version": dict(model, version=2),
        "features_version": dict(model, features_version=99),
        "features": dict(model, features=list(reversed(model["features"]))),
        "format": dict(model, format="something-else"),
    }
    for field, doc in cases.items():
        path = tmp_path / f"{field}.json"
        learned.write_model(doc, path)
        with pytest.raises(subevict.InputError, match=f"{path}: {field}:"):
            subevict.simulate(workload, f"learned:model={path}", 0.1)
    text = json.dumps(model)
    truncated = tmp_path / "truncated.json"
    truncated.write_text(text[: len(text) // 3])
    with pytest.raises(subevict.InputError, match="model file: expected valid JSON"):
        subevict.simulate(workload, f"learned:model={truncated}", 0.1)


def test_the_script_trains_and_evaluates(workload, tmp_path):
    wpath = tmp_path / "w.safetensors"
    subevict.write_workload(str(wpath), workload)
    model_path = tmp_path / "model.json"
    run = lambda *args: subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "learn_policy.py"), *args],
                                       capture_output=True, text=True, timeout=600)
    r = run("train", "--workload", str(wpath), "--budgets", "0.1", "--hidden", "0", "--steps-per-head", "32",
            "-o", str(model_path))
    assert r.returncode == 0, r.stderr
    doc = learned.read_model(model_path)
    assert doc["provenance"]["training_steps"] > 0 and doc["nets"][0]["layers"] is None
    out = tmp_path / "eval.json"
    r = run("evaluate", "--model", str(model_path), "--workload", str(wpath), "--budgets", "0.1",
            "--policies", "h2o,local", "-o", str(out))
    assert r.returncode == 0, r.stderr
    table = json.loads(out.read_text())["mass_over_opt"]
    assert set(table) == {"h2o", "local", "learned"}
    for per_budget in table.values():
        assert 0.0 < per_budget["0.1"] <= 1.0 + 1e-9
    r = run("train", "--workload", str(wpath), "--features", "nonsense", "-o", str(tmp_path / "x.json"))
    assert r.returncode == 2 and "--features" in r.stderr and not (tmp_path / "x.json").exists()
