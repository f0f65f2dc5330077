"""llama.cpp itself on the small GGUF files of the LLaMA-shaped families (small_gguf.py: llama,
qwen2, qwen3, phi3, random weights, a small vocabulary): on the same random token ids, subevict.models'
forward and llama.cpp's agree within the llama.cpp check's tolerances
(subevict.models.llama_cpp.TOLERANCES: perplexity within 2%, top-1 agreement >= 95%, mean KL <=
0.01), and, with llama.cpp's KV cache in float32, logit by logit to 1e-3; a deliberately wrong
forward of each family (small_gguf.WRONG_FORWARDS) fails the same comparison.

Needs llama.cpp (the llama-cpp-python package that scripts/setup_llama_cpp builds, tens of minutes):
skipped where it is not installed, as in CI. `scripts/llama_cpp_check.py --models
llama-tiny,qwen2-tiny,qwen3-tiny,phi3-tiny` runs the same comparison on 512 and more tokens and
records it in bench/results/llama_cpp_check.md.

    .venv/bin/python -m pytest -q tests/models/llama_cpp_families_test.py
"""

import pytest

pytest.importorskip("llama_cpp", reason="llama.cpp (llama-cpp-python) is not installed: "
                    "scripts/setup_llama_cpp builds it (CI does not; scripts/llama_cpp_check.py "
                    "--models llama-tiny,qwen2-tiny,qwen3-tiny,phi3-tiny records the comparison in "
                    "bench/results/llama_cpp_check.md)")

from small_gguf import (FAMILIES, LAYERS, WRONG_FORWARDS, ablate, random_ids,  # noqa: E402
                        write_comparison_file)
from subevict import models  # noqa: E402
from subevict.models import llama_cpp  # noqa: E402

TOKENS = 128
# llama.cpp's forward of float32 weights with a float32 KV cache against ours: logits of standard
# deviation ~8 agree to ~2e-4 on 128 ids (measured; ~1e-3 on 1024), with its default float16 cache
# to ~0.2; a wrong forward misses by more than 1 (measured: 20 and more).
LOGIT_TOL = 1e-3


def gap(a, b):
    return float(abs(a - b).max())


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    directory = tmp_path_factory.mktemp("llama_cpp_families")
    return {family: str(write_comparison_file(directory / f"{family}.gguf", family))
            for family in FAMILIES}


@pytest.fixture(scope="module")
def ids():
    return random_ids(TOKENS)


@pytest.fixture(scope="module")
def reference(files, ids):
    """llama.cpp's logits of each file on `ids`, with its default float16 KV cache (as the check
    runs real models) and with a float32 one."""
    return {family: (llama_cpp.logits(path, ids), llama_cpp.logits(path, ids, f32_cache=True))
            for family, path in files.items()}


@pytest.mark.parametrize("family", FAMILIES)
def test_llama_cpp_and_our_forward_agree(family, files, ids, reference):
    ours = models.forward(models.load(files[family]), ids).numpy()
    f16_cache, f32_cache = reference[family]
    numbers = llama_cpp.agreement(ours, f16_cache, ids)
    assert numbers["within"], numbers
    assert numbers["top1_agreement"] == 1.0, numbers  # the logits are well separated
    assert gap(ours, f32_cache) < LOGIT_TOL


@pytest.mark.parametrize("family, ablation", [(f, a) for f in FAMILIES for a in WRONG_FORWARDS[f]])
def test_a_wrong_forward_fails_the_comparison(family, ablation, files, ids, reference):
    ours = models.forward(ablate(models.load(files[family]), ablation), ids).numpy()
    f16_cache, f32_cache = reference[family]
    numbers = llama_cpp.agreement(ours, f16_cache, ids)
    assert not numbers["within"], numbers
    # Every wrong forward here fails by far on KL and top-1 alone, not by a hair.
    assert numbers["mean_kl"] > 10 * llama_cpp.TOLERANCES["mean_kl"], numbers
    assert numbers["top1_agreement"] < 0.9, numbers
    assert gap(ours, f32_cache) > 1000 * LOGIT_TOL


def test_llama_cpp_ignores_the_phi3_sliding_window(files, ids, reference, tmp_path):
    """A known difference, recorded: llama.cpp (since its pull request 13676, "disable SWA for Phi
    models"; 0.3.36 logs "Phi SWA is currently disabled") reads phi3.attention.sliding_window and
    then attends globally, while subevict.models (as transformers' Phi3) limits every layer to the
    window. Beyond the window the two forwards differ; within it they agree."""
    window = 32
    path = write_comparison_file(tmp_path / "phi3-window.gguf", "phi3", sliding_window=window)
    theirs = llama_cpp.logits(path, ids, f32_cache=True)
    assert gap(theirs, reference["phi3"][1]) < 1e-5  # the same logits as the file without a window
    model = models.load(str(path))
    assert model.windows == [window] * LAYERS
    ours = models.forward(model, ids).numpy()
    assert gap(ours[:window], theirs[:window]) < LOGIT_TOL  # every key within the window
    assert not llama_cpp.agreement(ours, theirs, ids)["within"]  # later queries: ours see 32 keys
    assert gap(models.forward(ablate(model, "window_off"), ids).numpy(), theirs) < LOGIT_TOL
