"""The learned policy end to end on a small generated workload (a few hundred tokens): training on
the optimum's decisions ranks the optimum's evicted member lowest in most training steps (a learner
that learns nothing does not), the C++ policy `learned:model=FILE` evicts what the NumPy model says
on the same features, files from another format, version or feature set are refused naming the
field, and scripts/learn_policy.py trains and evaluates from the command line. DAgger's labels:
the optimal continuation's victim from a given cache (against exhaustive search), and one round
of DAgger raising the net's agreement with those labels on the policy's own states.

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


def test_the_leaving_target_puts_the_lowest_score_among_the_members_the_optimum_evicts_soon(traces, model):
    layers = [t[0] for t in traces]
    data = [t[3] for t in traces]

    def fit(**target):
        doc = learned.train(data, feature_options=learn_policy.FEATURE_OPTIONS, hidden=8, seed=0, **target)
        return learned.model_document(doc["nets"], learn_policy.FEATURE_OPTIONS)

    # With a set of one step the target is the evicted member's: the same loss, summed in another
    # order, so L-BFGS ends at the same net up to its stopping tolerances (measured: 3e-7).
    one = fit(target="leaving", leaving_within=1)
    np.testing.assert_allclose(np.concatenate([np.ravel(d["weights"]) for d in one["nets"][0]["dense"]]),
                               np.concatenate([np.ravel(d["weights"]) for d in model["nets"][0]["dense"]]),
                               rtol=1e-4, atol=1e-5)
    assert learned.top1(one, data, layers) == learned.top1(model, data, layers)
    within = 16
    leaving = fit(target="leaving", leaving_within=within)
    blank = json.loads(json.dumps(model))
    for layer in blank["nets"][0]["dense"]:
        layer["weights"] = np.zeros_like(layer["weights"]).tolist()
        layer["bias"] = np.zeros_like(layer["bias"]).tolist()
    newest = np.mean(np.concatenate([t["last_step"][t["steps"]] - t["steps"] + 1 < within for t in data]))
    hit = learned.top1(leaving, data, layers, within=within)
    # Its lowest member is one the optimum evicts within 16 steps more often than the newest-token
    # rule's, a blank net's, and the net fitted to the one evicted member.
    assert hit > newest + 0.1, (hit, newest)
    assert hit > learned.top1(blank, data, layers, within=within) + 0.5
    assert hit > learned.top1(model, data, layers, within=within) + 0.03, (hit, learned.top1(model, data, layers, within))
    # The set-valued agreement: 1 step is the evicted one's, and it grows with the set.
    assert learned.top1(model, data, layers, within=1) == learned.top1(model, data, layers)
    shares = [learned.top1(leaving, data, layers, within=w) for w in (1, 4, 16, TOKENS + 1)]
    assert shares == sorted(shares) and shares[-1] == 1.0, shares
    with pytest.raises(ValueError, match="leaving_within"):
        learned.train(data, feature_options=learn_policy.FEATURE_OPTIONS, target="leaving", leaving_within=0)


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
    dagger_path = tmp_path / "dagger.json"
    r = run("train", "--workload", str(wpath), "--budgets", "0.1", "--hidden", "0", "--steps-per-head", "32",
            "--dagger-rounds", "1", "--dagger-horizon", "32", "-o", str(dagger_path))
    assert r.returncode == 0, r.stderr
    dagger_doc = learned.read_model(dagger_path)
    assert dagger_doc["provenance"]["dagger_rounds"] == 1 and dagger_doc["provenance"]["dagger_horizon"] == 32
    assert dagger_doc["provenance"]["training_steps"] > doc["provenance"]["training_steps"]
    r = run("train", "--workload", str(wpath), "--features", "nonsense", "-o", str(tmp_path / "x.json"))
    assert r.returncode == 2 and "--features" in r.stderr and not (tmp_path / "x.json").exists()


def best_continuation(gains, cache, step, k):
    """Exhaustive search: the largest sum over the steps after `step` of the attention mass each
    query keeps, for the irreversible process started with cache S_step = `cache`."""
    n = gains.shape[0]
    memo = {}

    def value(kept, t):
        if t == n:
            return 0.0
        key = (kept, t)
        if key not in memo:
            members = kept | {t}
            gain = float(sum(gains[t, j] for j in members))
            if len(members) <= k:
                memo[key] = gain + value(members, t + 1)
            else:
                memo[key] = gain + max(value(members - {v}, t + 1) for v in members)
        return memo[key]

    return value(frozenset(cache), step + 1)


def test_optimal_victims_start_the_best_continuation_by_exhaustive_search():
    """optimal_victims with a horizon past the end: evicting its victim from G_i and going on
    optimally is worth as much as the best choice of victim, by exhaustive search over every
    continuation; a victim that is not (the newest, or the oldest, member) is caught on these
    instances. A horizon of 1 is the best member for the next query alone."""
    rng = np.random.default_rng(7)
    n, k = 10, 3
    newest_wrong = oldest_wrong = 0
    for case in range(24):
        gains = np.tril(rng.random((n, n)) ** 3)
        steps, tokens, offsets = [], [], [0]
        for i in range(k, n - 1):
            members = sorted(rng.choice(i, k, replace=False).tolist()) + [i]
            steps.append(i)
            tokens += members
            offsets.append(len(tokens))
        victims = subevict._subevict.optimal_victims(gains, steps, offsets, tokens, n)
        short = subevict._subevict.optimal_victims(gains, steps, offsets, tokens, 1)
        for s, i in enumerate(steps):
            members = tokens[offsets[s]:offsets[s + 1]]
            assert victims[s] in members
            values = {v: best_continuation(gains, set(members) - {v}, i, k) for v in members}
            best = max(values.values())
            assert values[victims[s]] >= best - 1e-9 * max(1.0, best), (case, i, values, victims[s])
            newest_wrong += values[members[-1]] < best - 1e-9
            oldest_wrong += values[members[0]] < best - 1e-9
            next_row = {v: sum(gains[i + 1, j] for j in members if j != v) for v in members}
            assert next_row[short[s]] >= max(next_row.values()) - 1e-12
    assert newest_wrong > 10 and oldest_wrong > 10  # the instances tell those victims from the best one


def test_victim_regrets_are_the_loss_of_each_victim_by_exhaustive_search():
    """victim_regrets with a horizon past the end: each member's regret is the best continuation's
    value minus the value of evicting it and going on optimally, by exhaustive search; the member
    the window optimum evicts at once costs nothing. Its zeroed-gains shortcut, replaced by the
    window optimum alone (every member's regret the same), fails on these instances."""
    rng = np.random.default_rng(11)
    n, k = 10, 3
    distinct = 0
    for case in range(12):
        gains = np.tril(rng.random((n, n)) ** 3)
        for i in (k, 5, n - 2):
            members = sorted(rng.choice(i, k, replace=False).tolist()) + [i]
            regrets, lifetimes, mass = learn_policy.victim_regrets(gains, i, members, n)
            values = np.array([best_continuation(gains, set(members) - {v}, i, k) for v in members])
            np.testing.assert_allclose(regrets, values.max() - values, atol=1e-9)
            assert regrets[lifetimes == 0].max() <= 1e-9 and (lifetimes == 0).sum() == 1
            assert mass == pytest.approx(gains[i + 1:, members].sum())
            distinct += len(np.unique(np.round(regrets, 9))) > 1
    assert distinct > 20


def test_the_script_counts_near_ties(workload, tmp_path):
    wpath = tmp_path / "w.safetensors"
    subevict.write_workload(str(wpath), workload)
    script = os.path.join(ROOT, "scripts", "learn_policy.py")
    out = tmp_path / "ties.json"
    r = subprocess.run([sys.executable, script, "near-ties", "--workload", str(wpath), "--budgets", "0.1",
                        "--layers", "0,1", "--horizon", "64", "--within", "1,8", "-o", str(out)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    rows = json.loads(out.read_text())["steps"]
    assert len(rows) == 2 * workload.shape["kv_heads"] * 2
    for row in rows:
        assert 1 <= row["zero_regret"] <= row["near_ties"] <= row["members"]
        assert row["leaving"]["1"]["members"] == 1 and row["leaving"]["1"]["max_regret"] <= 1e-12
        assert row["leaving"]["8"]["members"] >= 1
    bad = subprocess.run([sys.executable, script, "near-ties", "--workload", str(wpath), "--budgets", "0.1,0.2",
                          "-o", str(tmp_path / "x.json")], capture_output=True, text=True, timeout=600)
    assert bad.returncode == 2 and "one budget" in bad.stderr and not (tmp_path / "x.json").exists()


def test_optimal_victims_refuse_bad_input():
    gains = np.tril(np.ones((6, 6)))
    with pytest.raises(subevict.InputError, match="optimal_victims: tokens of step 3"):
        subevict._subevict.optimal_victims(gains, [3], [0, 3], [0, 1, 4], 8)
    with pytest.raises(subevict.InputError, match="optimal_victims: offsets"):
        subevict._subevict.optimal_victims(gains, [3], [0, 2], [0, 1, 3], 8)
    with pytest.raises(subevict.InputError, match="optimal_victims: horizon"):
        subevict._subevict.optimal_victims(gains, [3], [0, 3], [0, 1, 3], 0)
    with pytest.raises(subevict.InputError, match="optimal_victims: tokens of step 3"):
        subevict._subevict.optimal_victims(gains, [3], [0, 3], [-1, 1, 3], 8)
    with pytest.raises(subevict.InputError, match="optimal_victims"):
        subevict._subevict.optimal_victims(np.ones((6, 5)), [3], [0, 3], [0, 1, 3], 8)


def test_dagger_labels_the_policys_own_states_and_training_on_them_agrees_more(workload, traces, model, tmp_path):
    """One round of DAgger: the on-policy traces hold the learned policy's own caches (its recorded
    decisions are the NumPy model's), each labelled with a member of that cache, the optimal
    continuation's victim; retrained on the optimum's traces plus these, the net picks those labels
    more often than before (a round whose labels were misplaced or dropped would not)."""
    path = tmp_path / "model.json"
    learned.write_model(model, path)
    on_policy = learn_policy.on_policy_traces(workload, str(path), LAYERS, [0.1], 32, 64, quiet=True)
    assert len(on_policy) == len(LAYERS) * workload.shape["kv_heads"]
    for layer, head, _, t in on_policy:
        sizes = np.diff(t["offsets"])
        assert np.all((0 <= t["evicted_row"]) & (t["evicted_row"] < sizes))
        np.testing.assert_array_equal(learned.decisions(model, t, layer), t["evicted"][t["steps"]])
    data = [t[3] for t in on_policy]
    layers = [t[0] for t in on_policy]
    before = learned.top1(model, data, layers)
    after = learn_policy.dagger(traces, workload, LAYERS, [0.1], 32, 64, 1,
                                lambda d: learn_policy.train_on(d, LAYERS, 8, False, None, 0, {"seed": 0}), quiet=True)
    assert learned.top1(after, data, layers) > before + 0.05, (before, learned.top1(after, data, layers))


def test_dagger_with_the_leaving_target_labels_every_member_with_its_windows_lifetime(workload, traces):
    """On-policy traces for the leaving target carry each member's remaining lifetime under the
    window optimum (a schedule of the process: one member leaves at step i, the optimal
    continuation's victim that optimal_victims names, and at most d within d steps, none beyond
    the window); one round of DAgger on them raises the net's agreement with those sets on the
    policy's own states (sets misplaced or dropped would not)."""
    within, horizon = 8, 64

    def fit(data):
        return learn_policy.train_on(data, LAYERS, 8, False, None, 0, {"seed": 0}, target="leaving",
                                     leaving_within=within)

    model = fit(traces)
    path = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"leaving-{os.getpid()}.json")
    learned.write_model(model, path)
    try:
        on_policy = learn_policy.on_policy_traces(workload, path, LAYERS, [0.1], 32, horizon, quiet=True,
                                                  lifetimes=True)
    finally:
        os.remove(path)
    for _, _, _, t in on_policy:
        for s in range(len(t["steps"])):
            life = t["row_lifetime"][t["offsets"][s]:t["offsets"][s + 1]]
            assert np.flatnonzero(life == 0).tolist() == [t["evicted_row"][s]]
            future = min(horizon, TOKENS - 1 - int(t["steps"][s]))  # the window's steps; kept through it: future + 1
            assert all((life < d).sum() <= d for d in range(1, future + 1)), life
            assert life.min() >= 0 and life.max() <= future + 1
    data = [t[3] for t in on_policy]
    layers = [t[0] for t in on_policy]
    before = learned.top1(model, data, layers, within=within)
    after = learn_policy.dagger(traces, workload, LAYERS, [0.1], 32, horizon, 1, fit, quiet=True, lifetimes=True)
    assert learned.top1(after, data, layers, within=within) > before + 0.1, (before, learned.top1(after, data, layers,
                                                                                                 within=within))


@pytest.mark.parametrize("args,named", [(["--target", "lifetime", "--dagger-rounds", "1"], "--dagger-rounds"),
                                         (["--target", "leaving", "--dagger-rounds", "1", "--dagger-horizon", "16",
                                           "--leaving-within", "32"], "--leaving-within"),
                                         (["--target", "leaving", "--leaving-within", "0"], "--leaving-within")])
def test_the_script_refuses_dagger_with_the_lifetime_target_and_bad_leaving_sets(workload, tmp_path, args, named):
    wpath = tmp_path / "w.safetensors"
    subevict.write_workload(str(wpath), workload)
    r = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "learn_policy.py"), "train", "--workload",
                        str(wpath), *args, "-o", str(tmp_path / "m.json")],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 2 and named in r.stderr and not (tmp_path / "m.json").exists(), r.stderr


# The closed-loop export: SmolLM2-135M (scripts/setup_model) on the first EXPORT_TOKENS tokens of GPL-3.
EXPORT_TOKENS = 96
EXPORT_TEXT = "/usr/share/common-licenses/GPL-3"


@pytest.fixture(scope="module")
def smollm2():
    result = subprocess.run([os.path.join(ROOT, "scripts", "setup_model")], capture_output=True, text=True,
                            timeout=900)
    assert result.returncode == 0, f"scripts/setup_model failed:\n{result.stderr}"
    return result.stdout.strip().splitlines()[-1]


def test_the_closed_loop_export_holds_the_rows_each_layers_optimum_saw(smollm2, tmp_path):
    """At a budget >= n the export is the open-loop export (scripts/export_gguf.py) bit for bit; at
    a small one its first layer still is (nothing evicted below it) and deeper layers are not (the
    optimum's eviction upstream moved them): an export of the full model's rows fails the second
    check, one with the budgets' files swapped fails both."""
    out = tmp_path / "closed"
    run = lambda *args: subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "learn_policy.py"), *args],
                                       capture_output=True, text=True, timeout=900)
    r = run("closed-loop-export", "--gguf", smollm2, "--text-file", EXPORT_TEXT, "--tokens", str(EXPORT_TOKENS),
            "--budgets", f"12,{EXPORT_TOKENS}", "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert sorted(os.listdir(out)) == sorted([learn_policy.export_name(12), learn_policy.export_name(EXPORT_TOKENS)])
    # An output that cannot be a directory is refused before any model work (no closed loop ran).
    (tmp_path / "file").write_text("")
    r = run("closed-loop-export", "--gguf", smollm2, "--text-file", EXPORT_TEXT, "--tokens", str(EXPORT_TOKENS),
            "--budgets", "12", "-o", str(tmp_path / "file" / "closed"))
    assert r.returncode == 2 and "-o" in r.stderr and "closed loop" not in r.stderr, r.stderr
    reference = tmp_path / "open.safetensors"
    r = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "export_gguf.py"), "--gguf", smollm2,
                        "--text-file", EXPORT_TEXT, "--tokens", str(EXPORT_TOKENS), "-o", str(reference)],
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr
    open_loop = subevict.read_workload(str(reference))
    full = subevict.read_workload(str(out / learn_policy.export_name(EXPORT_TOKENS)))
    small = subevict.read_workload(str(out / learn_policy.export_name(12)))
    assert full.shape == small.shape == {**open_loop.shape, "tokens": EXPORT_TOKENS}
    layers = full.shape["layers"]
    for layer in range(layers):
        for part in ("q", "k", "v"):
            assert np.array_equal(getattr(full, part)[layer], getattr(open_loop, part)[layer]), (layer, part)
    for part in ("q", "k", "v"):
        assert np.array_equal(getattr(small, part)[0], getattr(open_loop, part)[0]), part
    moved = [layer for layer in range(1, layers) if not np.array_equal(small.k[layer], open_loop.k[layer])]
    assert len(moved) == layers - 1, moved
    # Training on one workload per budget; a count that matches neither one nor the budgets is refused.
    model_path = tmp_path / "model.json"
    r = run("train", "--workload", str(out / learn_policy.export_name(12)), "--workload",
            str(out / learn_policy.export_name(EXPORT_TOKENS)), "--budgets", "12,24", "--layers", "0,29",
            "--hidden", "0", "--steps-per-head", "8", "-o", str(model_path))
    assert r.returncode == 0, r.stderr
    assert learned.read_model(model_path)["provenance"]["workload"] == [learn_policy.export_name(12),
                                                                        learn_policy.export_name(EXPORT_TOKENS)]
    r = run("train", "--workload", str(out / learn_policy.export_name(12)), "--workload",
            str(out / learn_policy.export_name(12)), "--budgets", "0.1,0.2,0.5", "-o", str(tmp_path / "x.json"))
    assert r.returncode == 2 and "--workload" in r.stderr and not (tmp_path / "x.json").exists(), r.stderr
