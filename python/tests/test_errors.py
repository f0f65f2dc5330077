"""Bad input never crashes the interpreter: every case raises a Python exception carrying the
library's message (subevict.InputError is a ValueError)."""

import numpy as np
import pytest

import subevict


def arrays(dtype=np.float32, tokens=8):
    rng = np.random.default_rng(0)
    shape = (1, 2, tokens, 8)
    return [rng.standard_normal(shape).astype(dtype) for _ in range(3)]


def test_input_error_is_a_value_error():
    assert issubclass(subevict.InputError, ValueError)
    assert issubclass(subevict.PolicyContractError, RuntimeError)


@pytest.mark.parametrize("make, message", [
    (lambda: arrays(np.float64), "Workload: q: expected a float32 array, got float64"),
    (lambda: arrays(np.int32), "expected a float32 array, got int32"),
    (lambda: [a[0] for a in arrays()], "Workload: q: expected a 4-D array, got shape (2, 8, 8)"),
    (lambda: [a.transpose(0, 1, 3, 2) for a in arrays()], "expected a C-contiguous array"),
    (lambda: [a[:, :, ::2] for a in arrays()], "expected a C-contiguous array"),
    (lambda: [arrays()[0], arrays(tokens=9)[1], arrays()[2]], "Workload: k: expected shape"),
    (lambda: [arrays()[0], np.zeros((1, 0, 8, 8), np.float32), arrays()[2]], "Workload: k: expected every dimension >= 1"),
])
def test_bad_workload_arrays(make, message):
    with pytest.raises(subevict.InputError) as info:
        subevict.Workload(*make())
    assert message in str(info.value)


def test_nan_and_inf_in_a_workload():
    q, k, v = arrays()
    q[0, 1, 3, 2] = np.nan
    with pytest.raises(subevict.InputError, match="NaN at query head 1, token 3, dim 2"):
        subevict.Workload(q, k, v)
    q[0, 1, 3, 2] = 0
    v[0, 0, 0, 0] = np.inf
    with pytest.raises(subevict.InputError, match="finite"):
        subevict.Workload(q, k, v)
    with pytest.raises(subevict.InputError, match="score_scale"):
        subevict.Workload(*arrays(), score_scale=float("nan"))


def test_not_an_array():
    with pytest.raises(TypeError):
        subevict.Workload("q", "k", "v")
    with pytest.raises(TypeError):
        subevict.offline_optimum([[1.0]], 1)


@pytest.mark.parametrize("gains, message", [
    (np.ones((4, 4), np.float32), "expected a float64 array, got float32"),
    (np.ones(4), "expected a 2-D array"),
    (np.tril(np.ones((6, 6)))[::2, ::2], "C-contiguous"),
    (np.asfortranarray(np.tril(np.ones((4, 4)) + np.eye(4))), "C-contiguous"),
    (np.where(np.eye(4) > 0, np.nan, 0.0), "NaN at (0, 0)"),
    (np.ones((3, 4)), "square"),
    (np.ones((4, 4)), "0 above the diagonal"),
    (-np.tril(np.ones((4, 4))), ">= 0"),
])
def test_bad_gain_matrices(gains, message):
    for solve in (subevict.offline_optimum, subevict.step_oracle):
        with pytest.raises(subevict.InputError, match=message.replace("(", r"\(").replace(")", r"\)")):
            solve(gains, 2)


def test_bad_budgets_presets_and_indices():
    w = subevict.generate("tiny", tokens=20, seed=1)
    with pytest.raises(subevict.InputError, match="budget"):
        subevict.offline_optimum(np.tril(np.ones((4, 4))), -1)
    for budget in (0, -0.5, 2.5, float("nan")):
        with pytest.raises(subevict.InputError, match="simulate: budget"):
            subevict.simulate(w, "h2o", budget=budget)
    with pytest.raises(subevict.InputError, match="simulate: layers"):
        subevict.simulate(w, "h2o", layers=5)
    with pytest.raises(subevict.InputError, match="simulate: kv_heads"):
        subevict.simulate(w, "h2o", kv_heads=[0, 2])
    with pytest.raises(subevict.InputError, match="policy"):
        subevict.simulate(w, "no-such-policy")
    with pytest.raises(subevict.InputError, match="sinks"):
        subevict.simulate(w, "streamingllm:sinks=9", budget=4)
    with pytest.raises(subevict.InputError, match="optimum"):
        subevict.simulate(w, "h2o", optimum="best")
    with pytest.raises(subevict.InputError, match="preset"):
        subevict.generate("no-such-model")
    with pytest.raises(subevict.InputError, match="params"):
        subevict.generate("tiny", params={"no_such": 1.0})
    with pytest.raises(subevict.InputError, match="layer"):
        subevict.attention(w, 1, 0)
    with pytest.raises(subevict.InputError, match="members"):
        subevict.tracked_attention(w, 0, 0, 5, np.array([6]))
    with pytest.raises(subevict.InputError, match="int64"):
        subevict.tracked_attention(w, 0, 0, 5, np.array([1.0]))
    with pytest.raises(subevict.InputError, match="layer"):
        subevict.gain_matrix(w, 0, 7)


def test_bad_files(tmp_path):
    (tmp_path / "junk.safetensors").write_bytes(b"\x00" * 5)
    with pytest.raises(subevict.InputError, match="junk.safetensors"):
        subevict.read_workload(str(tmp_path / "junk.safetensors"))
    with pytest.raises(subevict.InputError):
        subevict.read_workload(str(tmp_path / "missing.safetensors"))


def test_bad_set_functions():
    with pytest.raises(subevict.InputError, match="float64"):
        subevict.facility_location(np.ones((3, 3), np.float32))
    with pytest.raises(subevict.InputError, match="finite"):
        subevict.facility_location(np.full((3, 3), np.nan))
    f = subevict.modular(np.array([1.0, 2.0, 3.0]))
    with pytest.raises(subevict.InputError, match="k"):
        subevict.greedy(f, 4)
    with pytest.raises(subevict.InputError, match="distinct"):
        f([0, 0])
    with pytest.raises(subevict.InputError, match="weights"):
        subevict.modular(np.array([1.0, -1.0]))
