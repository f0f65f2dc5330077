"""An independent RoPE for the exporters' tests: rotates stored pre-RoPE tensors with the rotary
parameters a workload file records (core/workload_io.hpp, "rotary_*") in float64 numpy, and the
float32 tolerance within which the stored post-RoPE tensors must match."""

import numpy

# A float32 model rounds the angle p * theta to about p * 2^-24 radians and each product to
# 2^-24 relative; 8 ulps per position of the rotated vector's largest entry bounds both.
ROTATION_ULPS_PER_POSITION = 8
FLOAT32_EPSILON = 2.0 ** -24


def parse_rotary(metadata, layers):
    """[(base, dims)] per layer from the rotary_* metadata entries (AssertionError when absent
    or malformed)."""
    assert metadata.get("rotary_pairing") == "rotate_half", metadata.get("rotary_pairing")
    bases = [float(b) for b in metadata["rotary_bases"].split(",")]
    assert len(bases) == layers, f"{len(bases)} rotary bases for {layers} layers"
    dims = int(metadata["rotary_dims"])
    return [(base, dims) for base in bases]


def rotate(x, base, dims):
    """x [heads, tokens, head_dim] rotated to positions 0..tokens-1 (rotate_half pairing of the
    first `dims` entries, theta_j = base^(-2j/dims)), float64."""
    x = numpy.asarray(x, dtype=numpy.float64)
    half = dims // 2
    theta = base ** (-2.0 * numpy.arange(half) / dims)
    angle = numpy.arange(x.shape[1], dtype=numpy.float64)[:, None] * theta[None, :]
    cos, sin = numpy.cos(angle), numpy.sin(angle)
    out = x.copy()
    first, second = x[..., :half], x[..., half:dims]
    out[..., :half] = first * cos - second * sin
    out[..., half:dims] = second * cos + first * sin
    return out


def rotation_tolerance(x):
    """The float32 tolerance for x [heads, tokens, head_dim] rotated by a float32 model."""
    x = numpy.asarray(x, dtype=numpy.float64)
    return ROTATION_ULPS_PER_POSITION * FLOAT32_EPSILON * x.shape[1] * float(numpy.abs(x).max())


def max_rotation_error(pre, post, base, dims):
    """(max |rotate(pre) - post|, its tolerance)."""
    error = float(numpy.abs(rotate(pre, base, dims) - numpy.asarray(post, numpy.float64)).max())
    return error, rotation_tolerance(pre)
