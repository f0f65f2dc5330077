#!/usr/bin/python3
"""Writes small valid files with independent writers (NumPy for .npy, json + struct for
.safetensors), so subevict's readers are tested against files they did not write themselves.
The expected values are restated in tests/core/{npy,safetensors,workload_io}_test.cpp.

Needs NumPy (Debian's python3-numpy):  /usr/bin/python3 tests/data/valid/make_valid.py
Deterministic; commit the result.
"""

import json
import os
import struct

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def path(*parts):
    return os.path.join(HERE, *parts)


def save_npy(name, array, version=None):
    """np.save, or np.lib.format.write_array for an explicit format version."""
    with open(path(name), "wb") as out:
        np.lib.format.write_array(out, array, version=version)


def save_safetensors(name, tensors, metadata):
    """tensors: (name, dtype, shape, raw little-endian bytes) in buffer order."""
    header, offset = {}, 0
    for tensor_name, dtype, shape, data in tensors:
        header[tensor_name] = {"dtype": dtype, "shape": list(shape),
                               "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
    header["__metadata__"] = metadata
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * ((-len(text)) % 8)
    with open(path(name), "wb") as out:
        out.write(struct.pack("<Q", len(text)) + text + b"".join(t[3] for t in tensors))


def bf16_bytes(values):
    """bfloat16 as the top halves of float32 (the values must be exact in bfloat16)."""
    bits = np.asarray(values, dtype="<f4").view("<u4")
    assert np.all(bits & 0xFFFF == 0), "value not exact in bfloat16"
    return (bits >> 16).astype("<u2").tobytes()


def qkv_value(layer, head, token, dim):
    """The reference workloads' entries: exact in float16 for the sizes used here."""
    return layer * 1000 + head * 100 + token * 10 + dim


def qkv(layers, heads, tokens, head_dim, factor):
    l, h, t, d = np.meshgrid(np.arange(layers), np.arange(heads), np.arange(tokens),
                             np.arange(head_dim), indexing="ij")
    return qkv_value(l, h, t, d) * factor


def main():
    save_npy("numpy_f4_2x3.npy", (np.arange(6, dtype="<f4") * 0.5 - 1).reshape(2, 3))
    save_npy("numpy_f8_scalar.npy", np.array(3.25, dtype="<f8"))
    save_npy("numpy_f8_1d.npy", np.array([0.1, -2.5, 1e10], dtype="<f8"))
    save_npy("numpy_f4_empty_0x4.npy", np.zeros((0, 4), dtype="<f4"))
    save_npy("numpy_f4_special.npy",
             np.array([np.float32(2.0) ** -149, -0.0, np.finfo(np.float32).max], dtype="<f4"))
    save_npy("numpy_f4_v2.npy", np.arange(4, dtype="<f4"), version=(2, 0))
    save_npy("numpy_f4_v3.npy", np.array([[1, 2], [3, 4]], dtype="<f4"), version=(3, 0))

    save_safetensors("reference_f16_bf16.safetensors", [
        ("double", "F64", (), np.array(0.1, dtype="<f8").tobytes()),
        ("half", "F16", (2, 2), np.array([1.0, -2.0, 0.5, 65504.0], dtype="<f2").tobytes()),
        ("brain", "BF16", (3,), bf16_bytes([1.0, -2.0, 3.140625])),
        ("empty", "F32", (0, 3), b""),
        ("single", "F32", (2,), np.array([0.25, -0.001], dtype="<f4").tobytes()),
    ], {"producer": "make_valid.py"})

    # A GQA workload (layers=2, q_heads=2, kv_heads=1, tokens=3, head_dim=2) stored as F16:
    # q = value, k = -value / 4, v = value / 2.
    layers, q_heads, kv_heads, tokens, head_dim = 2, 2, 1, 3, 2
    q = qkv(layers, q_heads, tokens, head_dim, 1.0)
    k = qkv(layers, kv_heads, tokens, head_dim, -0.25)
    v = qkv(layers, kv_heads, tokens, head_dim, 0.5)
    tensors = []
    for layer in range(layers):
        for part, array in (("q", q), ("k", k), ("v", v)):
            half = array[layer].astype("<f2")
            assert np.array_equal(half.astype("<f8"), array[layer]), "value not exact in float16"
            tensors.append(("layers.%d.%s" % (layer, part), "F16", half.shape, half.tobytes()))
    save_safetensors("reference_workload.safetensors", tensors,
                     {"format": "subevict.qkv.v1", "score_scale": "0.5", "model": "toy"})

    # The same workload as a directory of .npy files (k stored as float64).
    os.makedirs(path("reference_workload_npy"), exist_ok=True)
    np.save(path("reference_workload_npy", "q.npy"), q.astype("<f4"))
    np.save(path("reference_workload_npy", "k.npy"), k.astype("<f8"))
    np.save(path("reference_workload_npy", "v.npy"), v.astype("<f4"))


if __name__ == "__main__":
    main()
