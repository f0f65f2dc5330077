"""verify and the set-function optima from Python equal the command line's results on the same
inputs."""

import json

import numpy as np

import subevict

VOLATILE = {"seconds"}


def strip(value):
    """The document without wall-clock times."""
    if isinstance(value, dict):
        return {k: strip(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [strip(v) for v in value]
    return value


def test_verify_equals_the_command_line(cli, tmp_path):
    args = ["--check", "core.row_sums", "--check", "h2o.greedy_vs_offline_optimum", "--check",
            "streamingllm.attention_sinks", "--tokens", 160, "--effort", 0.1, "--seed", 3]
    cli("verify", *args, "--quiet", "--json", tmp_path / "cli.json", "-o", tmp_path / "report")
    theirs = json.loads((tmp_path / "cli.json").read_text())
    mine = subevict.verify(checks=["core.row_sums", "h2o.greedy_vs_offline_optimum", "streamingllm.attention_sinks"],
                           tokens=160, effort=0.1, seed=3)
    assert strip(mine) == strip(theirs)
    assert mine["summary"]["line"].startswith("1 claims") or "measurements" in mine["summary"]["line"]
    assert "h2o.greedy_vs_offline_optimum" in subevict.check_ids()


def test_verify_on_a_workload_file_equals_the_command_line(cli, tiny_file, tmp_path):
    cli("verify", "--workload", tiny_file, "--check", "core.row_sums", "--check", "h2o.greedy_vs_offline_optimum",
        "--policy", "h2o,tova", "--quiet", "--json", tmp_path / "cli.json", "-o", tmp_path / "report")
    theirs = json.loads((tmp_path / "cli.json").read_text())
    mine = subevict.verify(str(tiny_file), checks=["core.row_sums", "h2o.greedy_vs_offline_optimum"],
                           policies="h2o,tova", output=str(tmp_path / "mine"))
    assert strip(mine) == strip(theirs)
    assert (tmp_path / "mine" / "report.md").is_file()


def test_set_function_optima_equal_the_command_line(cli, tmp_path):
    rng = np.random.default_rng(4)
    similarity = rng.random((30, 12))
    np.save(tmp_path / "sim.npy", similarity)
    f = subevict.facility_location(similarity)
    assert f.ground_size == 12 and f.monotone_submodular
    for method in ("greedy", "lazy", "bnb", "exhaustive"):
        cli("optimum", "--similarity", tmp_path / "sim.npy", "-k", 4, "--method", method, "--json",
            tmp_path / f"{method}.json")
        theirs = json.loads((tmp_path / f"{method}.json").read_text())
        greedy = subevict.greedy(f, 4, "greedy" if method == "greedy" else "lazy")
        assert strip(greedy) == strip(theirs["greedy"])
        if method in ("bnb", "exhaustive"):
            exact = subevict.exact_optimum(f, 4, method)
            assert strip(exact) == strip(theirs["optimum"])
            assert exact["optimal"] and exact["value"] >= greedy["value"]
            assert f(exact["set"]) == exact["value"]
