"""Reading a GGUF file (llama.cpp's format) with the `gguf` package: metadata, tensors as float32
torch tensors, and the file's SHA-256."""

from __future__ import annotations

import hashlib
import os

from .errors import ModelError


def open_gguf(path):
    """A gguf.GGUFReader of `path`; ModelError naming the file when it is missing or not a GGUF
    file (magic bytes), or when the gguf package cannot read it."""
    if not os.path.isfile(path):
        raise ModelError(f"--gguf {path}: no such file")
    with open(path, "rb") as stream:
        magic = stream.read(4)
    if magic != b"GGUF":
        raise ModelError(f"--gguf {path} is not a GGUF file (expected the magic bytes 'GGUF', "
                         f"found {magic!r})")
    try:
        import gguf
    except ImportError:
        raise ModelError("the gguf package is not installed (scripts/setup_model installs it "
                         "into .venv/)") from None
    try:
        return gguf.GGUFReader(path)
    except (ValueError, IndexError, OSError) as error:
        raise ModelError(f"--gguf {path}: cannot read the GGUF file: {error}") from None


def field(reader, key, default=None, required=True):
    """The value of metadata `key` (a Python scalar, str or list), or `default` when it is absent
    and not `required` (ModelError naming the file and key when it is required)."""
    entry = reader.fields.get(key)
    if entry is None:
        if required:
            raise ModelError(f"{reader.data.filename}: GGUF metadata key {key} is missing")
        return default
    return entry.contents()


def tensor_index(reader):
    """{name: gguf ReaderTensor} of the file's tensors."""
    return {tensor.name: tensor for tensor in reader.tensors}


def dequantize(tensor):
    """A float32 torch tensor of a GGUF tensor, in torch's row-major shape (GGUF lists ne0, the
    column count, first)."""
    import gguf
    import numpy
    import torch

    try:
        values = gguf.quants.dequantize(tensor.data, tensor.tensor_type)
    except NotImplementedError:
        raise ModelError(f"tensor {tensor.name}: GGML type {tensor.tensor_type.name} cannot be "
                         "dequantized by the gguf package") from None
    shape = tuple(int(n) for n in reversed(tensor.shape))
    values = numpy.array(values, dtype=numpy.float32, order="C").reshape(shape)  # writable
    return torch.from_numpy(values)


def file_sha256(path):
    """The hex SHA-256 of the file at `path`."""
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def tensor_loader(reader, known, family):
    """A function name -> float32 torch tensor of the file's tensor `name` (ModelError naming it
    when missing), after checking that the file holds no tensor outside the set `known` (ModelError
    naming up to three, as not part of a `family` model)."""
    tensors = tensor_index(reader)
    unknown = sorted(set(tensors) - set(known))
    if unknown:
        raise ModelError(f"{reader.data.filename}: unsupported tensors {', '.join(unknown[:3])} "
                         f"(not part of a {family} model)")

    def weight(name):
        if name not in tensors:
            raise ModelError(f"{reader.data.filename}: tensor {name} is missing")
        return dequantize(tensors[name])

    return weight
