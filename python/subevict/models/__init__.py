"""Real models from GGUF files, in float32 torch, split at the attention: the code that
scripts/export_gguf.py and subevict.closed_loop share. Needs torch, numpy, gguf and tokenizers
(scripts/setup_model installs them into .venv/); nothing here needs subevict's compiled library.

    from subevict import models
    model = models.load("model.gguf")
    ids = models.tokenize(model, text, 512)[0]
    logits = models.forward(model, ids)

One module per architecture family (llama.py: `llama`; qwen2.py: `qwen2`; qwen3.py: `qwen3`;
phi3.py: `phi3`; gemma3.py: `gemma3`); `load` picks it by general.architecture. llama_cpp.py runs llama.cpp, the format's reference, on the same ids
(scripts/llama_cpp_check.py). A model has `windows`: per layer None (every earlier key) or the
size of its sliding window.
"""

from __future__ import annotations

from . import gemma3, llama, phi3, qwen2, qwen3
from .attention import attend, causal_keep, keep_from_last_step, keep_from_sets
from .errors import ModelError
from .gguf_file import field, file_sha256, open_gguf
from .tokenizer import token_ids_sha256
from .tokenizer import tokenize as _tokenize

# Each module: ARCHITECTURE, config_of(reader), Model.
FAMILIES = {module.ARCHITECTURE: module for module in (llama, qwen2, qwen3, phi3, gemma3)}
SUPPORTED_ARCHITECTURES = tuple(FAMILIES)

__all__ = ["ModelError", "SUPPORTED_ARCHITECTURES", "attend", "causal_keep", "config_of",
           "field", "file_sha256", "forward", "keep_from_last_step", "keep_from_sets", "load",
           "open_gguf", "token_ids_sha256", "tokenize"]


def family(reader):
    """The family module of the file's architecture (ModelError naming the architecture and the
    supported list)."""
    arch = field(reader, "general.architecture")
    if arch not in FAMILIES:
        raise ModelError(f"{reader.data.filename}: unsupported architecture {arch!r} (expected "
                         f"one of {', '.join(SUPPORTED_ARCHITECTURES)})")
    return FAMILIES[arch]


def config_of(reader):
    """The model's configuration dict from the file's metadata, without loading tensors."""
    return family(reader).config_of(reader)


def load(path, **options):
    """The model of the GGUF file at `path` (weights dequantized to float32). `options` go to the
    family's constructor (llama: undo_permutation). The model keeps `reader` and `path`."""
    reader = open_gguf(path)
    model = family(reader).Model(reader, **options)
    model.reader, model.path = reader, path
    return model


def tokenize(model_or_reader, text, tokens):
    """The first `tokens` token ids of `text` ([1, tokens] int64), BOS first when the model adds
    one (ModelError when the text is shorter)."""
    reader = getattr(model_or_reader, "reader", model_or_reader)
    return _tokenize(reader, text, tokens)


def forward(model, ids, attention=None):
    """Next-token logits [n, vocab] of token ids (int64 [n]) with the full cache of every layer
    (causal, within the window of a sliding-window layer), or with `attention(layer, q, k, v) ->
    heads` deciding each layer's attention output."""
    import torch

    n = int(ids.shape[0])
    positions = torch.arange(n)
    with torch.no_grad():
        hidden = model.embed(ids)
        for layer in range(model.layers):
            q, k, v = model.attention_inputs(layer, hidden, positions)
            heads = (attend(q, k, v, model.score_scale, causal_keep(n, model.kv_heads,
                                                                     model.windows[layer]))
                     if attention is None else attention(layer, q, k, v))
            hidden = model.attention_output(layer, hidden, heads)
        return model.logits(hidden)
