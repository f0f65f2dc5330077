"""The tokenizers the task tests measure in: SmolLM2-135M-Instruct's and Gemma 3 270M's, read
from the GGUF files scripts/setup_model installs (a failure, not a skip, when it cannot)."""

import os
import subprocess

import pytest

from subevict import tasks

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODELS = ("smollm2", "gemma3")
_LOADED = {}


def tokenizer_of(model):
    """The GgufTokenizer of scripts/setup_model's `model`, loaded once per session."""
    if model not in _LOADED:
        result = subprocess.run([os.path.join(ROOT, "scripts", "setup_model"), model],
                                capture_output=True, text=True, timeout=900)
        assert result.returncode == 0, f"scripts/setup_model {model} failed:\n{result.stderr}"
        _LOADED[model] = tasks.tokenizer_of(result.stdout.strip().splitlines()[-1])
    return _LOADED[model]


@pytest.fixture(params=MODELS)
def tokenizer(request):
    return tokenizer_of(request.param)


@pytest.fixture
def smollm2():
    return tokenizer_of("smollm2")
