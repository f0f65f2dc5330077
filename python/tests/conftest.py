"""Shared fixtures: the command-line tool the package is compared with, and small workloads."""

import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def cli_path():
    """The `subevict` executable: $SUBEVICT_CLI, else the release tree's build/bin/subevict."""
    return pathlib.Path(os.environ.get("SUBEVICT_CLI", ROOT / "build" / "bin" / "subevict"))


@pytest.fixture(scope="session")
def cli():
    path = cli_path()
    if not path.is_file():
        raise FileNotFoundError(f"{path}: build the command line first (scripts/build) or set SUBEVICT_CLI")

    def run(*args):
        result = subprocess.run([str(path), *map(str, args)], capture_output=True, text=True)
        if result.returncode != 0:
            raise AssertionError(f"subevict {' '.join(map(str, args))} failed:\n{result.stderr}")
        return result.stdout

    return run


@pytest.fixture(scope="session")
def tiny_file(tmp_path_factory, cli):
    """A tiny MHA workload (2 heads, 96 tokens) written by `subevict workload generate`."""
    path = tmp_path_factory.mktemp("tiny") / "tiny.safetensors"
    cli("workload", "generate", "--preset", "tiny", "--tokens", 96, "--seed", 5, "-o", path)
    return path


@pytest.fixture(scope="session")
def tiny_gqa_file(tmp_path_factory, cli):
    """A tiny GQA workload (2 query heads per KV head, 96 tokens): masses are means over the group."""
    path = tmp_path_factory.mktemp("tiny_gqa") / "tiny_gqa.safetensors"
    cli("workload", "generate", "--preset", "tiny-gqa", "--tokens", 96, "--seed", 5, "-o", path)
    return path


@pytest.fixture(scope="session")
def gqa_file(tmp_path_factory, cli):
    """A real-size GQA workload: llama3-8b's shape (4 query heads per KV head, head_dim 128), one
    layer of 1024 tokens with the preset's per-layer profile."""
    path = tmp_path_factory.mktemp("gqa") / "gqa.safetensors"
    cli("workload", "generate", "--preset", "llama3-8b", "--tokens", 1024, "--layers", 1, "--seed", 11, "-o", path)
    return path
