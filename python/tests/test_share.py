"""subevict.share against `subevict simulate --share` on the same workload file: the same optima,
budgets and retained masses per head, number for number, in both scopes; and its refusals."""

import json

import pytest

import subevict


@pytest.fixture(scope="module")
def gqa_file(tmp_path_factory, cli):
    """A GQA workload (2 layers, 2 KV heads of 2 query heads, 256 tokens)."""
    path = tmp_path_factory.mktemp("share") / "gqa.safetensors"
    cli("workload", "generate", "--preset", "tiny-gqa", "--tokens", 256, "--layers", 2, "--seed", 11, "-o", path)
    return path


@pytest.mark.parametrize("scope,rules", [("layer", "uniform,adakv,duo"),
                                         ("model", "uniform,adakv:alpha_safeguard=0.5,pyramidkv,duo")])
def test_share_equals_the_command_line(tmp_path, cli, gqa_file, scope, rules):
    out = tmp_path / "cli"
    cli("simulate", "--workload", gqa_file, "--layers", "0-1", "--budget", 0.3, "--share", scope,
        "--share-rules", rules, "--policies", "h2o,snapkv", "--threads", 2, "--quiet", "-o", out)
    expected = json.loads((out / "results.json").read_text())
    got = subevict.share(subevict.read_workload(str(gqa_file)), budget=0.3, layers=[0, 1], scope=scope, rules=rules,
                         policies="h2o,snapkv", threads=2)
    assert got["budget_size"] == expected["budget"] == 77
    assert got["shared_note"] == expected["shared_note"]
    assert len(got["heads"]) == len(expected["optimum_heads"]) == 4
    for mine, theirs in zip(got["heads"], expected["optimum_heads"]):
        for key in ("layer", "kv_head", "uniform_opt", "static_budget", "static_opt"):
            assert mine[key] == theirs[key], key
    slots = [s for unit in got["units"] for s in unit["shared_mean_slots"]]
    assert slots == [h["shared_mean_slots"] for h in expected["optimum_heads"]]
    assert [(r["rule"], r["scorer"]) for r in got["runs"]] == [(r["rule"], r["scorer"]) for r in expected["runs"]]
    for mine, theirs in zip(got["runs"], expected["runs"]):
        assert mine["note"] == theirs["note"]
        assert mine["retained"] == [h["retained"] for h in theirs["heads"]]
        assert mine["mean_slots"] == [h["mean_slots"] for h in theirs["heads"]]
        # The units' shared optimum as the CSV's first rows report it.
        for unit, row in zip(got["units"], theirs["units"]):
            assert unit["shared_opt"] == row["shared_opt"]
            assert unit["shared_bound"] == row["shared_bound"]
    # The order the optima obey, on numbers that could break it.
    for unit in got["units"]:
        uniform = sum(got["heads"][x]["uniform_opt"] for x in unit["heads"])
        fixed = sum(got["heads"][x]["static_opt"] for x in unit["heads"])
        assert uniform <= fixed * (1 + 1e-9) and fixed <= unit["shared_bound"] * (1 + 1e-9)


def test_share_refuses_bad_input_before_any_work(gqa_file):
    w = subevict.read_workload(str(gqa_file))
    for kwargs, words in [(dict(scope="heads"), "scope"), (dict(layers=[2]), "layers"),
                          (dict(rules="pyramidkv"), "pyramidkv"), (dict(policies="random"), "rank"),
                          (dict(rules="fastkv"), "rules"), (dict(budget="0.2"), "budget")]:
        with pytest.raises(subevict.InputError, match=words):
            subevict.share(w, **kwargs)
