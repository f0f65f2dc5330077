"""The GGUF format's own implementation, llama.cpp (through the llama-cpp-python package that
scripts/setup_llama_cpp builds from source), as the reference of every family's forward here.

    from subevict.models import llama_cpp
    reference = llama_cpp.logits(path, ids)          # [n, vocab] float32, llama.cpp's forward
    numbers = llama_cpp.agreement(ours, reference, ids)

llama.cpp multiplies quantized weights with activations it quantizes to 8 bits, so its logits and
ours (float32 activations on the dequantized weights) agree closely, not exactly: `agreement`
measures how closely, and TOLERANCES says what counts as the same forward.
"""

from __future__ import annotations

import math

from .errors import ModelError
from .next_token import next_token_metrics

# What "the same forward" means against llama.cpp on >= 512 tokens: perplexity within 2%, top-1
# agreement of the next token >= 95%, mean KL(llama.cpp || ours) <= 0.01 nats.
TOLERANCES = {"perplexity_rel": 0.02, "top1_agreement": 0.95, "mean_kl": 0.01}


def _library():
    try:
        import llama_cpp
    except ImportError as error:
        raise ModelError("llama_cpp: the llama-cpp-python package is missing from this Python "
                         f"({error}); run scripts/setup_llama_cpp") from error
    return llama_cpp


def logits(path, ids, threads=None, f32_cache=False):
    """llama.cpp's next-token logits [n, vocab] (float32 numpy) of token ids (int [n]) of the GGUF
    file at `path`, one context of n positions, every position's logits kept. Weight repacking into
    extra buffer types is off (on CPUs with AMX it crashes in the repacking). The KV cache is
    llama.cpp's default float16, or float32 with `f32_cache` (then, on a file of float32 weights,
    llama.cpp's logits and ours agree to about 1e-4: tests/models/llama_cpp_families_test.py)."""
    import os

    import numpy as np

    library = _library()
    ids = [int(t) for t in np.asarray(ids).reshape(-1)]
    default_params = library.llama_model_default_params

    def params():
        p = default_params()
        p.use_extra_bufts = False
        return p

    library.llama_model_default_params = params
    try:
        f32 = library.GGML_TYPE_F32
        cache = {"type_k": f32, "type_v": f32} if f32_cache else {}
        model = library.Llama(model_path=str(path), n_ctx=len(ids), n_batch=512, n_ubatch=512,
                              logits_all=True, n_threads=threads or os.cpu_count(),
                              n_threads_batch=threads or os.cpu_count(), verbose=False, **cache)
    finally:
        library.llama_model_default_params = default_params
    try:
        model.eval(ids)
        return np.array(model.scores[:len(ids)], dtype=np.float32)
    finally:
        model.close()


def tokens(path, text, count, add_bos):
    """llama.cpp's first `count` token ids of `text` (its own tokenizer, `add_bos` as the model
    adds one)."""
    library = _library()
    model = library.Llama(model_path=str(path), vocab_only=True, verbose=False)
    try:
        return model.tokenize(text.encode("utf-8"), add_bos=add_bos, special=False)[:count]
    finally:
        model.close()


def agreement(ours, reference, ids):
    """Perplexity of each on the n - 1 next tokens, their relative difference, top-1 agreement of
    the next token and mean KL(reference || ours) in nats (float64 sums of float32 log-softmax):
    a dict, with `within` (every TOLERANCES entry met)."""
    import torch

    ours = torch.as_tensor(ours, dtype=torch.float32)
    reference = torch.as_tensor(reference, dtype=torch.float32)
    ids = torch.as_tensor(ids, dtype=torch.int64).reshape(-1)
    ref_logp = torch.log_softmax(reference, -1)
    theirs = next_token_metrics(ref_logp, ref_logp, ids)
    measured = next_token_metrics(ref_logp, torch.log_softmax(ours, -1), ids)
    out = {
        "perplexity": measured["perplexity"], "reference_perplexity": theirs["perplexity"],
        "perplexity_rel": abs(math.exp(measured["nll"] - theirs["nll"]) - 1.0),
        "top1_agreement": measured["top1_agreement"],
        "mean_kl": measured["mean_kl"], "max_kl": measured["max_kl"],
        "max_abs_logit_diff": float((ours[:-1] - reference[:-1]).abs().max()),
    }
    out["within"] = (out["perplexity_rel"] <= TOLERANCES["perplexity_rel"]
                     and out["top1_agreement"] >= TOLERANCES["top1_agreement"]
                     and out["mean_kl"] <= TOLERANCES["mean_kl"])
    return out
