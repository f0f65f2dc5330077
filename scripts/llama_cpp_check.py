#!/usr/bin/env python3
"""Every model family's forward against llama.cpp, the GGUF format's own implementation.

    .venv/bin/python scripts/llama_cpp_check.py [--models smollm2,gemma3] [--tokens 512]
        [--text-file FILE] [--ablate NAME] [--f32-cache] [-o FILE.md]

For each model (scripts/setup_model installs it; scripts/setup_llama_cpp builds llama.cpp): the
text's first N token ids by subevict's tokenizer (and whether llama.cpp's tokenizer gives the same
ids), the next-token logits of subevict.models' forward and of llama.cpp on those ids, and their
agreement: perplexity within 2%, top-1 agreement >= 95%, mean KL(llama.cpp || ours) <= 0.01
(subevict.models.llama_cpp.TOLERANCES). A markdown table goes to stdout (and -o FILE).

The models: the real files smollm2 (llama) and gemma3, and the small files of the architectures
PyPI ships no model of, llama-tiny, qwen2-tiny, qwen3-tiny and phi3-tiny (tests/models/small_gguf.py
writes them into a temporary directory: 2 layers, random float32 weights, a small vocabulary), on N
random token ids instead of the text (phi3-tiny-window: phi3-tiny with a sliding window of 64 keys,
which llama.cpp ignores).

--ablate runs a deliberately wrong forward instead (gemma3: shift_norms, qk_norm_off, window_off,
swap_rope_bases; qwen2: k_bias_off; qwen3: qk_norm_off; phi3: swap_gate_up; every family:
rope_half_frequency): the check must then fail. --f32-cache keeps llama.cpp's KV cache in float32
(default: its float16).

Exit status: 0 when every model agrees, 1 when one does not, 2 on bad input (one line).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
sys.path.insert(0, os.path.join(ROOT, "tests", "models"))
import checkout_models  # noqa: E402
import small_gguf  # noqa: E402

models = checkout_models.load()  # subevict.models from this checkout
from subevict_models import llama_cpp  # noqa: E402

REAL_MODELS = ("smollm2", "gemma3")
# The small files: name -> (architecture, sliding window).
SMALL_MODELS = {f"{family}-tiny": (family, None) for family in small_gguf.FAMILIES}
SMALL_MODELS["phi3-tiny-window"] = ("phi3", 64)
MODELS = REAL_MODELS + tuple(SMALL_MODELS)
GEMMA3_ABLATIONS = {
    "shift_norms": {"shift_norms": True},
    "qk_norm_off": {"qk_norm": False},
    "window_off": {"window": False},
    "swap_rope_bases": {"swap_rope_bases": True},
}
DEFAULT_TEXT = "/usr/share/common-licenses/GPL-3"


def fail(message):
    print(f"llama_cpp_check: error: {message}", file=sys.stderr)
    sys.exit(2)


def gguf_path(name):
    result = subprocess.run([os.path.join(ROOT, "scripts", "setup_model"), name],
                            stdout=subprocess.PIPE, text=True)
    if result.returncode != 0:
        fail(f"scripts/setup_model {name} failed")
    return result.stdout.strip().splitlines()[-1]


def wrong(model, ablation):
    """The model with the named defect (gemma3's own ablations as Model.ablated makes them, the
    others as tests/models/small_gguf.ablate does)."""
    if hasattr(model, "ablated") and ablation in GEMMA3_ABLATIONS:
        return model.ablated(**GEMMA3_ABLATIONS[ablation])
    if ablation not in small_gguf.ABLATIONS:
        fail(f"--ablate: {ablation} applies to gemma3 only")
    try:
        return small_gguf.ablate(model, ablation)
    except ValueError as error:
        fail(f"--ablate: {error}")


def check(name, text, count, ablation, f32_cache, directory):
    if name in SMALL_MODELS:  # random ids through a small file: no tokenizer to compare
        start = time.monotonic()
        family, window = SMALL_MODELS[name]
        path = small_gguf.write_comparison_file(os.path.join(directory, f"{name}.gguf"), family,
                                                sliding_window=window)
        model = models.load(path)
        ids, same_tokens = small_gguf.random_ids(count), None
    else:
        path = gguf_path(name)
        start = time.monotonic()
        model = models.load(path)
        ids = models.tokenize(model, text, count)[0]
        bos = models.field(model.reader, "tokenizer.ggml.add_bos_token", True, required=False)
        theirs = llama_cpp.tokens(path, text, count, bool(bos))
        same_tokens = [int(t) for t in ids] == [int(t) for t in theirs]
    if ablation:
        model = wrong(model, ablation)
    ours = models.forward(model, ids).numpy()
    reference = llama_cpp.logits(path, ids, f32_cache=f32_cache)
    numbers = llama_cpp.agreement(ours, reference, ids)
    numbers.update(model=name, architecture=models.field(model.reader, "general.architecture"),
                   tokens=count, same_tokens=same_tokens,
                   ablation=(ablation or "none") + (" (f32 KV cache)" if f32_cache else ""),
                   seconds=time.monotonic() - start)
    print(f"llama_cpp_check: {name}: perplexity {numbers['perplexity']:.4f} vs llama.cpp "
          f"{numbers['reference_perplexity']:.4f}, top-1 {numbers['top1_agreement']:.4f}, "
          f"mean KL {numbers['mean_kl']:.2e} ({numbers['seconds']:.0f} s)", file=sys.stderr)
    return numbers


def table(rows):
    t = llama_cpp.TOLERANCES
    lines = [f"| model | architecture | tokens | forward | perplexity (ours) | perplexity (llama.cpp) "
             f"| rel. diff (<= {t['perplexity_rel']:g}) | top-1 agreement (>= {t['top1_agreement']:g}) "
             f"| mean KL (<= {t['mean_kl']:g}) | max KL | max abs logit diff | same token ids "
             f"| within |",
             "|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---|---|"]
    same = {True: "yes", False: "no", None: "random ids"}
    for r in rows:
        lines.append(f"| {r['model']} | {r['architecture']} | {r['tokens']} | {r['ablation']} "
                     f"| {r['perplexity']:.4f} | {r['reference_perplexity']:.4f} "
                     f"| {r['perplexity_rel']:.4f} | {r['top1_agreement']:.4f} | {r['mean_kl']:.2e} "
                     f"| {r['max_kl']:.3g} | {r['max_abs_logit_diff']:.3g} "
                     f"| {same[r['same_tokens']]} | {'yes' if r['within'] else 'NO'} |")
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default=",".join(REAL_MODELS))
    parser.add_argument("--tokens", type=int, default=512)
    parser.add_argument("--text-file", default=DEFAULT_TEXT)
    parser.add_argument("--ablate",
                        choices=sorted(set(GEMMA3_ABLATIONS) | set(small_gguf.ABLATIONS)))
    parser.add_argument("--f32-cache", action="store_true")
    parser.add_argument("-o", "--output")
    args = parser.parse_args()
    names = [m for m in args.models.split(",") if m]
    for name in names:
        if name not in MODELS:
            fail(f"--models: unknown model {name!r} (expected {', '.join(MODELS)})")
    if args.tokens < 2:
        fail(f"--tokens: at least 2, got {args.tokens}")
    try:
        with open(args.text_file, encoding="utf-8") as stream:
            text = stream.read()
    except OSError as error:
        fail(f"--text-file {args.text_file}: {error.strerror}")
    try:
        with tempfile.TemporaryDirectory(prefix="llama_cpp_check.") as directory:
            rows = [check(name, text, args.tokens, args.ablate, args.f32_cache, directory)
                    for name in names]
    except models.ModelError as error:
        fail(str(error))
    report = table(rows)
    sys.stdout.write(report)
    if args.output:
        with open(args.output + ".tmp", "w", encoding="utf-8") as stream:
            stream.write(report)
        os.replace(args.output + ".tmp", args.output)
    return 0 if all(r["within"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
