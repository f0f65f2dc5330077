#!/usr/bin/env python3
"""Writes the malformed-file corpus and its manifest.

Every file here must be rejected by subevict's readers with an InputError whose message contains
the file's name and the substring listed in manifest.tsv (checked by
tests/core/malformed_corpus_test.cpp, which also fails if a file here is missing from the
manifest). Standard library only and deterministic: run it with any python3, from anywhere,
and commit the result.

    python3 tests/data/malformed/make_corpus.py
"""

import json
import math
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
MANIFEST = "manifest.tsv"
NPY_MAGIC = b"\x93NUMPY"


# ----------------------------------------------------------------------------- .npy helpers


def npy_dict(descr="'<f4'", fortran="False", shape="(2,)", extra=""):
    """A header dict as NumPy writes it, with each value given as Python source text."""
    return "{'descr': %s, 'fortran_order': %s, 'shape': %s, %s}" % (descr, fortran, shape, extra)


def npy(header, payload=b"", version=(1, 0), header_length=None):
    """A .npy file: magic, version, header length, header padded to 64 bytes, payload."""
    length_format = "<H" if version[0] == 1 else "<I"
    prefix = len(NPY_MAGIC) + 2 + struct.calcsize(length_format)
    text = header.encode("latin1")
    padding = (-(prefix + len(text) + 1)) % 64
    text += b" " * padding + b"\n"
    if header_length is None:
        header_length = len(text)
    return (NPY_MAGIC + bytes(version) + struct.pack(length_format, header_length) + text +
            payload)


def f4(*values):
    return struct.pack("<%df" % len(values), *values)


def f8(*values):
    return struct.pack("<%dd" % len(values), *values)


# ---------------------------------------------------------------------- .safetensors helpers


def st_raw(header_text, buffer=b"", header_length=None):
    """A .safetensors file from literal JSON text (bytes or str) and a data buffer."""
    if isinstance(header_text, str):
        header_text = header_text.encode("utf-8")
    if header_length is None:
        header_length = len(header_text)
    return struct.pack("<Q", header_length) + header_text + buffer


def st(header, buffer=b""):
    """A .safetensors file from a header given as a Python dict."""
    return st_raw(json.dumps(header, separators=(",", ":")), buffer)


def entry(dtype="F32", shape=(2,), offsets=(0, 8)):
    return {"dtype": dtype, "shape": list(shape), "data_offsets": list(offsets)}


# ------------------------------------------------------------------------------ the corpus

NAN = float("nan")
INF = float("inf")
TWO_2 = f4(1.0, 2.0)

CASES = [
    # .npy: magic, version, header length
    ("npy_empty.npy", b"", "magic: expected the 6 bytes"),
    ("npy_truncated_magic.npy", b"\x93NUM", "got a 4-byte file"),
    ("npy_bad_magic.npy", b"\x93NUMPZ" + npy(npy_dict())[6:] + TWO_2,
     "got bytes 93 4e 55 4d 50 5a"),
    ("npy_truncated_version.npy", NPY_MAGIC + b"\x01", "version: expected 2 version bytes"),
    ("npy_bad_version.npy", npy(npy_dict(), TWO_2, version=(4, 0)),
     "version: expected 1.0, 2.0 or 3.0, got 4.0"),
    ("npy_bad_minor_version.npy", npy(npy_dict(), TWO_2, version=(1, 1)), "got 1.1"),
    ("npy_truncated_header_length.npy", NPY_MAGIC + b"\x01\x00\x10",
     "header length: expected a 2-byte little-endian header length, got end of file"),
    ("npy_v2_truncated_header_length.npy", NPY_MAGIC + b"\x02\x00\x10\x00\x00",
     "header length: expected a 4-byte little-endian header length"),
    ("npy_header_length_beyond_file.npy", npy(npy_dict(), TWO_2, header_length=4096),
     "header length: expected at most"),
    # .npy: header syntax and keys
    ("npy_header_syntax.npy",
     npy("{'descr': '<f4' 'fortran_order': False, 'shape': (2,), }", TWO_2),
     "header: expected ',' or '}' after a value"),
    ("npy_header_not_dict.npy", npy("[('descr', '<f4')]", TWO_2),
     "header: expected '{' opening the header dict"),
    ("npy_header_unterminated_string.npy", npy("{'descr': '<f4", TWO_2),
     "expected a string without escapes or control characters"),
    ("npy_header_trailing_garbage.npy", npy(npy_dict() + " x", TWO_2),
     "expected only spaces and a newline after the dict"),
    ("npy_missing_shape.npy", npy("{'descr': '<f4', 'fortran_order': False}", TWO_2),
     "missing key 'shape'"),
    ("npy_extra_key.npy", npy(npy_dict(extra="'extra': 'x', "), TWO_2),
     "expected only the keys 'descr', 'fortran_order' and 'shape', got key 'extra'"),
    ("npy_duplicate_key.npy", npy(npy_dict(extra="'shape': (2,), "), TWO_2),
     "key 'shape' repeated"),
    # .npy: values of the keys
    ("npy_big_endian.npy", npy(npy_dict(descr="'>f4'"), struct.pack(">2f", 1.0, 2.0)),
     "descr: expected '<f4' or '<f8' (little-endian float32 or float64), got '>f4' (big-endian)"),
    ("npy_unsupported_dtype.npy", npy(npy_dict(descr="'<i4'"), struct.pack("<2i", 1, 2)),
     "descr: expected '<f4' or '<f8'"),
    ("npy_descr_not_string.npy", npy(npy_dict(descr="[('x', '<f4')]"), TWO_2),
     "descr: expected a quoted string"),
    ("npy_fortran_order.npy", npy(npy_dict(fortran="True", shape="(2, 2)"), TWO_2 + TWO_2),
     "fortran_order: expected False (C order), got True"),
    ("npy_fortran_order_not_bool.npy", npy(npy_dict(fortran="0"), TWO_2),
     "fortran_order: expected True or False"),
    ("npy_negative_dim.npy", npy(npy_dict(shape="(2, -3)"), TWO_2),
     "shape: expected non-negative integer dimensions, got '-3'"),
    ("npy_float_dim.npy", npy(npy_dict(shape="(2.5,)"), TWO_2),
     "shape: expected non-negative integer dimensions, got '2.5'"),
    ("npy_shape_not_tuple.npy", npy(npy_dict(shape="(2)"), TWO_2),
     "shape: expected a tuple: (n,) for one dimension"),
    ("npy_shape_list.npy", npy(npy_dict(shape="[2]"), TWO_2),
     "shape: expected a tuple of non-negative integers"),
    ("npy_dim_literal_overflow.npy", npy(npy_dict(shape="(99999999999999999999999,)"), TWO_2),
     "shape: expected dimensions below 2^64 (overflow)"),
    ("npy_shape_overflow.npy", npy(npy_dict(shape="(4294967296, 4294967296, 2)"), TWO_2),
     "shape: expected a shape whose element count fits in 64 bits"),
    ("npy_exceeds_max_bytes.npy", npy(npy_dict(descr="'<f8'", shape="(17179869184,)"), f8(1.0)),
     "shape: expected at most max_bytes = 68719476736 bytes of tensor data"),
    # .npy: payload
    ("npy_truncated_payload.npy", npy(npy_dict(shape="(4,)"), f4(1.0, 2.0, 3.0)),
     "payload: expected 16 bytes for shape (4,) of <f4, got 12 bytes (truncated)"),
    ("npy_payload_left_over.npy", npy(npy_dict(), f4(1.0, 2.0, 3.0)),
     "payload: expected 8 bytes for shape (2,) of <f4, got 12 bytes (4 bytes left over)"),
    ("npy_nan.npy", npy(npy_dict(shape="(3,)"), f4(1.0, NAN, 3.0)),
     "values: expected finite values"),
    ("npy_inf.npy", npy(npy_dict(descr="'<f8'", shape="(2, 1)"), f8(-INF, 0.0)),
     "got -Inf at element 0"),
    # .safetensors: header length and JSON
    ("st_empty.safetensors", b"",
     "header length: expected an 8-byte little-endian header length, got a 0-byte file"),
    ("st_truncated_length.safetensors", b"\x10\x00\x00", "got a 3-byte file"),
    ("st_header_too_large.safetensors", st_raw("{}", header_length=1 << 40),
     "header length: expected at most 100000000 bytes"),
    ("st_header_beyond_file.safetensors", st_raw("{}", header_length=1000),
     "expected at most 2 (the bytes left in the file), got 1000"),
    ("st_invalid_json.safetensors", st_raw('{"a": {"dtype": "F32",}}'),
     "header: expected valid JSON"),
    ("st_invalid_utf8.safetensors", st_raw(b'{"\xff": {}}'), "header: expected valid JSON"),
    ("st_header_not_object.safetensors", st_raw("[1, 2]"), "header: expected a JSON object"),
    ("st_duplicate_tensor.safetensors",
     st_raw('{"a": %s, "a": %s}' % (json.dumps(entry()), json.dumps(entry())), TWO_2),
     "header: expected each key once, got 'a' repeated"),
    ("st_deep_nesting.safetensors", st_raw('{"a": {"shape": [[[2]]]}}'),
     "expected JSON nested at most 3 levels deep"),
    ("st_empty_name.safetensors", st({"": entry()}, TWO_2), "non-empty tensor names"),
    # .safetensors: tensor entries
    ("st_entry_not_object.safetensors", st({"a": [1]}),
     "tensor 'a': expected an object with dtype, shape and data_offsets"),
    ("st_missing_key.safetensors", st({"a": {"dtype": "F32", "shape": [2]}}, TWO_2),
     "tensor 'a': expected the keys dtype, shape and data_offsets, got missing key 'data_offsets'"),
    ("st_extra_key.safetensors", st({"a": dict(entry(), strides=[1])}, TWO_2),
     "got unexpected key 'strides'"),
    ("st_unknown_dtype.safetensors", st({"a": entry(dtype="I32")}, TWO_2),
     "tensor 'a': dtype: expected one of \"F32\", \"F16\", \"BF16\", \"F64\", got \"I32\""),
    ("st_negative_dim.safetensors", st({"a": entry(shape=(-2,))}, TWO_2),
     "tensor 'a': shape: expected an array of non-negative integers, got [-2]"),
    ("st_float_dim.safetensors", st({"a": entry(shape=(2.5,))}, TWO_2),
     "tensor 'a': shape: expected an array of non-negative integers, got [2.5]"),
    ("st_shape_overflow.safetensors",
     st({"a": entry(shape=(4294967296, 4294967296, 2))}, TWO_2),
     "tensor 'a': shape: expected a shape whose element count fits in 64 bits"),
    ("st_exceeds_max_bytes.safetensors",
     st({"a": entry(dtype="F64", shape=(17179869184,))}, TWO_2),
     "tensor 'a': shape: expected at most max_bytes = 68719476736 bytes"),
    ("st_offsets_wrong_length.safetensors", st({"a": entry(offsets=(0,))}, TWO_2),
     "tensor 'a': data_offsets: expected [begin, end], non-negative integers"),
    ("st_offsets_negative.safetensors", st({"a": entry(offsets=(-1, 7))}, TWO_2),
     "tensor 'a': data_offsets: expected [begin, end], non-negative integers, got [-1,7]"),
    ("st_offsets_end_before_begin.safetensors", st({"a": entry(offsets=(8, 0))}, TWO_2),
     "tensor 'a': data_offsets: expected begin <= end, got [8, 0]"),
    ("st_offsets_beyond_buffer.safetensors", st({"a": entry(offsets=(400, 408))}, TWO_2),
     "tensor 'a': data_offsets: expected end <= 8 (the size of the data buffer)"),
    ("st_shape_bytes_mismatch.safetensors", st({"a": entry(shape=(3,))}, TWO_2),
     "tensor 'a': data_offsets: expected end - begin = 12 bytes for shape [3] of F32"),
    # .safetensors: the buffer as a whole
    ("st_overlap.safetensors",
     st({"a": entry(offsets=(0, 8)), "b": entry(offsets=(4, 12))}, f4(1, 2, 3)),
     "tensor 'b': data_offsets: expected no overlap"),
    ("st_gap.safetensors",
     st({"a": entry(shape=(1,), offsets=(0, 4)), "b": entry(shape=(1,), offsets=(8, 12))},
        f4(1, 2, 3)),
     "the buffer may not have gaps"),
    ("st_left_over.safetensors", st({"a": entry()}, f4(1, 2, 3)),
     "payload: expected 8 bytes of tensor data (up to the end of the last tensor), got 12 bytes "
     "(4 bytes left over)"),
    # .safetensors: metadata
    ("st_metadata_not_object.safetensors", st({"__metadata__": "x", "a": entry()}, TWO_2),
     "__metadata__: expected an object of strings"),
    ("st_metadata_not_string.safetensors",
     st({"__metadata__": {"k": 1}, "a": entry()}, TWO_2),
     "__metadata__: expected string values, got 'k': 1"),
    # .safetensors: values
    ("st_nan_f32.safetensors", st({"a": entry()}, f4(1.0, NAN)),
     "tensor 'a': values: expected finite values"),
    ("st_inf_f16.safetensors", st({"a": entry(dtype="F16", offsets=(0, 4))}, b"\x00\x7c\x00\x3c"),
     "tensor 'a': values: expected finite values (NaN and Inf are rejected unless "
     "allowed: --allow-nonfinite), got +Inf at element 0"),
    ("st_nan_bf16.safetensors",
     st({"a": entry(dtype="BF16", shape=(3,), offsets=(0, 6))}, b"\x80\x3f\x00\x40\xc0\x7f"),
     "got NaN at element 2"),
]


def main():
    names = [name for name, _, _ in CASES]
    assert len(names) == len(set(names)), "duplicate corpus file names"
    for name, data, expected in CASES:
        assert "\t" not in expected and "\n" not in expected
        with open(os.path.join(HERE, name), "wb") as out:
            out.write(data)
    with open(os.path.join(HERE, MANIFEST), "w", encoding="utf-8", newline="\n") as out:
        out.write("file\texpected_error_substring\n")
        for name, _, expected in CASES:
            out.write("%s\t%s\n" % (name, expected))
    print("wrote %d files and %s" % (len(CASES), MANIFEST))


if __name__ == "__main__":
    main()
