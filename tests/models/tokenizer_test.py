"""The GGUF tokenizers of subevict.models against llama.cpp's (an independent implementation: the
format's own), and the SentencePiece rules on a vocabulary built here.

The reference ids are llama.cpp's (llama-cpp-python 0.3.36, `Llama.tokenize(text, add_bos,
special=False)`) on whole texts, recorded as SHA-256 of the comma-separated ids; the
tokenization comparison of scripts/llama_cpp_check.py recomputes them with llama.cpp on every run.

    .venv/bin/python -m pytest -q tests/models
"""

import hashlib
import os
import subprocess

import pytest

from subevict import models
from subevict.models import tokenizer as tokenizer_module

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TEXTS = {"gpl3": "/usr/share/common-licenses/GPL-3", "gfdl": "/usr/share/common-licenses/GFDL-1.3"}
# (model, text) -> (token count, SHA-256 of llama.cpp's ids, BOS included where the model adds one)
LLAMA_CPP_IDS = {
    ("gemma3", "gpl3"): (7563, "69d173b2d0f9b993e595dbd677a3ea475ac0f04b90f6300602a262a4239b7895"),
    ("gemma3", "gfdl"): (5024, "e5601004217bd749dd3a768b397fa580bd3d1efc0fbe2b731424d8345672e663"),
    ("smollm2", "gpl3"): (7639, "143a014442ef851532f2ced103c9b8dbd377cdb72fd9e68b52933d9e33b60bcf"),
    ("smollm2", "gfdl"): (5201, "0d6c0d9ddf95791e72337eea9b75a746d889440da72a331d2d7a1120ae1d38d1"),
}


def gguf(name):
    result = subprocess.run([os.path.join(ROOT, "scripts", "setup_model"), name], capture_output=True,
                            text=True, timeout=900)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip().splitlines()[-1]


@pytest.mark.parametrize("model, text", sorted(LLAMA_CPP_IDS))
def test_whole_texts_tokenize_as_llama_cpp_does(model, text):
    reader = models.open_gguf(gguf(model))
    encode, add_bos, bos = tokenizer_module.load_tokenizer(reader)
    with open(TEXTS[text], encoding="utf-8") as stream:
        ids = ([int(bos)] if add_bos else []) + list(encode.encode_ids(stream.read()))
    count, digest = LLAMA_CPP_IDS[(model, text)]
    assert len(ids) == count
    assert hashlib.sha256(",".join(map(str, ids)).encode()).hexdigest() == digest


def small_vocabulary(add_space_prefix=False):
    tokens = ["<unk>", "a", "b", "\u2581", "ab", "\u2581a", "  ", "\n", "\n\n", "<0x63>"]
    scores = [0.0, -1.0, -1.0, -1.0, -0.5, -0.2, 0.0, 0.0, 0.0, 0.0]
    types = [2, 1, 1, 1, 1, 1, 4, 4, 4, 6]
    return tokenizer_module.SentencePiece(tokens, scores, add_space_prefix, types)


def test_user_defined_tokens_are_split_off_longest_first():
    spm = small_vocabulary()
    assert spm.partition("ab\n\n\nab") == [("ab", None), ("\n\n", 8), ("\n", 7), ("ab", None)]
    # Two spaces are a user-defined token; one space is U+2581 inside a piece, merged by score.
    assert spm.encode_ids("a  b a") == [1, 6, 2, 5]  # "a", "  ", "b", "▁a"
    assert spm.encode_ids("a  a b") == [1, 6, 1, 3, 2]  # "▁b" is no token: "▁", "b"


def test_without_user_defined_tokens_spaces_merge_by_score():
    plain = tokenizer_module.SentencePiece(["a", "\u2581", "\u2581a", "\u2581\u2581"], [-1.0, -1.0, -0.2, -0.1],
                                           False)
    assert plain.encode_ids("  a") == [3, 0]  # the pair with the higher score merges first


def test_the_space_prefix_follows_the_start_and_every_user_defined_token():
    spm = small_vocabulary(add_space_prefix=True)
    assert spm.encode_ids("a\na") == [5, 7, 5]  # "▁a", "\n", "▁a"
    assert spm.encode_ids("c") == [3, 9]  # "▁" then the byte fallback of "c"


def _pieces(pre, text):
    from tokenizers import Regex, pre_tokenizers

    split = pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(r), behavior="isolated")
                                     for r in tokenizer_module.BPE_PRE_TOKENIZERS[pre]])
    return [piece for piece, _ in split.pre_tokenize_str(text)]


def test_the_qwen2_pre_tokenizer_splits_every_digit_where_llama3_groups_three():
    # Pieces by hand from the two expressions: contractions case-insensitively, a letter run with
    # one leading non-letter, digits (one each for qwen2, up to three for llama-bpe), punctuation
    # runs with trailing newlines, newline runs, spaces.
    text = "Hello world 12345 DON'T stop!\n\nx"
    assert _pieces("qwen2", text) == ["Hello", " world", " ", "1", "2", "3", "4", "5", " DON", "'T",
                                      " stop", "!\n\n", "x"]
    assert _pieces("llama-bpe", text) == ["Hello", " world", " ", "123", "45", " DON", "'T", " stop",
                                          "!\n\n", "x"]
