#!/usr/bin/env python3
"""Seconds of one task-loop run (subevict.task_loop.run_one) per protocol and cache on one sample,
and where they go: the cache's decisions (the policy's or the optimum's, over every layer), the
token-by-token decode from the first wrong answer token (the policy's state carried), and the
rest (the model's layers and the log-probabilities). The sample's full-cache pass, shared by
every run of a sample, is timed apart.

    .venv/bin/python bench/task_loop_bench.py [--gguf FILE] [--task niah_single] [--length 4096]
        [--runs streaming:h2o,streaming:opt-answer,prefill:h2o,prefill:snapkv] [--budget 0.1]

Prints a Markdown table (bench/results/task_loop.md records one)."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--gguf", default=None, help="default: scripts/setup_model's SmolLM2")
    parser.add_argument("--task", default="niah_single")
    parser.add_argument("--length", type=int, default=4096)
    parser.add_argument("--depth", type=float, default=0.5)
    parser.add_argument("--runs", default="streaming:h2o,streaming:opt-answer,prefill:h2o,prefill:snapkv")
    parser.add_argument("--budget", type=float, default=0.1)
    args = parser.parse_args()
    import torch

    from subevict import _subevict, models, task_loop, tasks
    from subevict.task_forward import full_pass

    path = args.gguf or subprocess.run([os.path.join(ROOT, "scripts", "setup_model")], capture_output=True,
                                       text=True, check=True).stdout.strip().splitlines()[-1]
    model, tokenizer = models.load(path), tasks.tokenizer_of(path)
    sample = tasks.generate(args.task, tokenizer, args.length, args.depth, 0)
    ids = torch.tensor(list(sample.ids) + list(sample.answer_ids))
    start = time.monotonic()
    logp, full = full_pass(model, ids, slice(len(sample.ids) - 1, len(sample.ids)))
    full.last_prompt_logp = logp
    print(f"{args.task}, {len(sample.ids)} prompt tokens + {len(sample.answer_ids)} answer tokens; "
          f"torch threads {torch.get_num_threads()}; full-cache pass {time.monotonic() - start:.1f} s\n")
    print("| protocol | cache | k | seconds | cache decisions | decode (tokens) | model and log-probabilities | answered |")
    print("|---|---|---:|---:|---:|---:|---:|---|")
    k = _subevict.budget_size(args.budget, len(sample.ids), "bench")
    decode = task_loop.decode
    for item in args.runs.split(","):
        protocol, label = item.split(":", 1)
        spent = {"keep": 0.0, "decode": 0.0, "steps": 0}
        make = task_loop.make_cache

        def timed_cache(*a, **kw):
            cache = make(*a, **kw)
            keep, resume = cache.keep, cache.resume

            def timed_keep(*b):
                t = time.monotonic()
                out = keep(*b)
                spent["keep"] += time.monotonic() - t
                return out

            def timed_resume(*b):  # the policy's state rebuilt up to the decode: the cache's work
                t = time.monotonic()
                resume(*b)
                spent["keep"] += time.monotonic() - t

            cache.keep, cache.resume = timed_keep, timed_resume
            return cache

        def timed_decode(*b, **kw):
            t = time.monotonic()
            out = decode(*b, **kw)
            spent["decode"] += time.monotonic() - t
            spent["steps"] += len(out)
            return out

        task_loop.make_cache, task_loop.decode = timed_cache, timed_decode
        try:
            run = task_loop.run_one(model, sample, protocol, label, args.budget, k, full, set(
                layer for layer in range(model.layers) if model.windows[layer] is None), tokenizer, 0)
        finally:
            task_loop.make_cache, task_loop.decode = make, decode
        resumed = spent["decode"]
        rest = run.seconds - spent["keep"] - resumed
        print(f"| {protocol} | {label} | {k} | {run.seconds:.1f} | {spent['keep']:.1f} | {resumed:.1f} "
              f"({spent['steps']}) | {rest:.1f} | {run.correct} |")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
