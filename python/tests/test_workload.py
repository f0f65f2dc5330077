"""Workloads: generation bit-identical to the command line, files, zero-copy views, attention."""

import json

import numpy as np
import pytest

import subevict


def test_generate_equals_the_command_line(tiny_file):
    from_cli = subevict.read_workload(str(tiny_file))
    generated = subevict.generate("tiny", tokens=96, seed=5)
    assert generated == from_cli
    assert np.array_equal(generated.q, from_cli.q)
    assert generated.metadata["preset"] == "tiny"


def test_views_are_read_only_and_share_the_workload_memory():
    w = subevict.generate("tiny", tokens=32, seed=1)
    q1, q2 = w.q, w.q
    assert np.shares_memory(q1, q2)
    assert q1.shape == (1, 2, 32, 8) and q1.dtype == np.float32
    assert not q1.flags.writeable
    del w
    assert np.isfinite(q1).all()  # the view keeps the workload alive


def test_round_trip_through_safetensors_and_npy(tmp_path):
    w = subevict.generate("tiny-gqa", tokens=40, layers=2, seed=3)
    w.write(str(tmp_path / "w.safetensors"))
    assert subevict.read_workload(str(tmp_path / "w.safetensors")) == w
    subevict.write_workload(str(tmp_path / "dir"), w)
    back = subevict.read_workload(str(tmp_path / "dir"))
    assert np.array_equal(back.k, w.k) and np.array_equal(back.v, w.v)


def test_workload_from_arrays():
    rng = np.random.default_rng(0)
    q = rng.standard_normal((2, 4, 16, 8), dtype=np.float32)
    k = rng.standard_normal((2, 2, 16, 8), dtype=np.float32)
    v = rng.standard_normal((2, 2, 16, 8), dtype=np.float32)
    w = subevict.Workload(q, k, v, score_scale=0.5, metadata={"source": "test"})
    assert w.shape == {"layers": 2, "q_heads": 4, "kv_heads": 2, "tokens": 16, "head_dim": 8}
    assert w.group_size == 2 and w.score_scale == 0.5 and w.metadata == {"source": "test"}
    assert np.array_equal(w.q, q) and np.array_equal(w.v, v)


def test_exact_and_tracked_attention():
    w = subevict.generate("tiny", tokens=24, seed=2)
    a = subevict.attention(w, 0, 1)
    assert a.shape == (24, 24)
    assert np.allclose(a.sum(axis=1), 1.0) and np.all(np.triu(a, 1) == 0)
    members = np.array([0, 3, 7, 10], dtype=np.int64)
    row = subevict.tracked_attention(w, 0, 1, 10, members)
    expected = np.zeros(11)
    expected[members] = a[10, members] / a[10, members].sum()
    assert np.allclose(row, expected, rtol=1e-12, atol=0)


def test_inspect_equals_the_command_line(tmp_path, cli):
    path = tmp_path / "w.safetensors"
    cli("workload", "generate", "--preset", "tiny", "--tokens", 200, "--seed", 4, "-o", path)
    cli("workload", "inspect", path, "--json", tmp_path / "stats.json")
    doc = json.loads((tmp_path / "stats.json").read_text())
    stats = subevict.inspect(subevict.read_workload(str(path)))
    heads = doc["heads"]
    assert len(heads) == len(stats["heads"])
    for mine, theirs in zip(stats["heads"], heads):
        for key, value in mine.items():
            if key in theirs:
                assert value == theirs[key], key


def test_sliding_window_layers_from_arrays_mask_attention_and_compress_below_the_window(tmp_path):
    rng = np.random.default_rng(3)
    q = rng.standard_normal((2, 2, 24, 8), dtype=np.float32)
    k = rng.standard_normal((2, 1, 24, 8), dtype=np.float32)
    v = rng.standard_normal((2, 1, 24, 8), dtype=np.float32)
    w = subevict.Workload(q, k, v, windows=[0, 6])
    assert w.windows == [0, 6]
    a = subevict.attention(w, 1, 0)
    assert np.allclose(a.sum(axis=1), 1.0)
    assert all(np.all(a[i, :i - 5] == 0) for i in range(6, 24))  # keys before i - W + 1: masked
    assert np.any(subevict.attention(w, 0, 0)[23, :18] > 0)  # the global layer still sees them
    with pytest.raises(subevict.InputError, match=r"tokens in \[18, step = 23\]"):
        subevict.tracked_attention(w, 1, 0, 23, np.array([3, 23], dtype=np.int64))
    w.write(str(tmp_path / "w.safetensors"))
    assert subevict.read_workload(str(tmp_path / "w.safetensors")).windows == [0, 6]
    with pytest.raises(subevict.InputError, match="windows"):
        subevict.Workload(q, k, v, windows=[0])
    with pytest.raises(subevict.InputError, match="windows"):
        subevict.Workload(q, k, v, windows=[0, -2])
