#!/usr/bin/env python3
"""Long-context tasks in the closed loop: whether the model still answers with each cache, in the
streaming and the prefill protocols, beside the full cache, the exact mass optimum and the
question-aware optimum (subevict.closed_loop_tasks; docs/tasks.md).

Usage:
    closed_loop_tasks.py --gguf FILE [--tasks niah_single,vt] [--lengths 1024,4096]
                         [--depths 0.1,0.5,0.9] [--samples N] [--protocol streaming,prefill]
                         [--policies LIST] [--budgets LIST] [--haystack NAME] [--seed S]
                         [--max-new-tokens N] -o DIR

Writes DIR/results.json (every run and aggregate, with the model's SHA-256 and every sample's
haystack and token-id SHA-256), DIR/report.md and figures. Progress goes to stderr. While it
runs, every finished run is appended to DIR/runs.partial.jsonl: the same command run again after
a kill takes those runs from there instead of running them again (the file is removed once
results.json is written; one written for another model, layer set or seed is refused). Needs the
project's .venv (scripts/setup_model) with the subevict package installed
(scripts/python_package). Bad input exits 2 with one line, before any model work.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from types import SimpleNamespace

sys.dont_write_bytecode = True

PROG = "closed_loop_tasks"
CHECKPOINT = "runs.partial.jsonl"  # every finished run, while the study runs; removed once results.json is written


class UsageError(Exception):
    pass


def parse_list(text, option, convert, what):
    items = [x.strip() for x in text.split(",") if x.strip()]
    if not items:
        raise UsageError(f"{option}: expected {what}, got {text!r}")
    out = []
    for item in items:
        try:
            out.append(convert(item))
        except ValueError:
            raise UsageError(f"{option}: expected {what}, got {item!r}") from None
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(prog="closed_loop_tasks.py", description=__doc__.split("\n")[0])
    parser.add_argument("--gguf", required=True, help="the .gguf model file")
    parser.add_argument("--tasks", default="niah_single", help="task names (subevict.tasks.names())")
    parser.add_argument("--lengths", default="1024", help="prompt lengths in tokens")
    parser.add_argument("--depths", default="0.5", help="needle depths in [0, 1]")
    parser.add_argument("--samples", type=int, default=1, help="samples (seeds) per task, length and depth")
    parser.add_argument("--protocol", default="streaming,prefill",
                        help="streaming, prefill and/or prefill-question")
    parser.add_argument("--policies", default="h2o,tova,snapkv,streamingllm,knorm,local,random,"
                        "expected_attention,keydiff,opt,opt-answer,topk",
                        help="policy specs as simulate's and the references opt, opt-answer, topk (the full "
                             "cache always runs)")
    parser.add_argument("--budgets", default="0.05,0.1,0.2,0.5",
                        help="ratios in (0, 1) of each sample's prompt, or integer sizes")
    parser.add_argument("--haystack", default=None, help="the haystack (default: each task's)")
    parser.add_argument("--layers", default="all", help="the layers that evict ('all': every global layer, or 0,3,5)")
    parser.add_argument("--seed", type=int, default=0, help="the first sample seed, and randomized policies' seed")
    parser.add_argument("--max-new-tokens", type=int, default=None,
                        help="tokens to generate when more than the answer's (RULER's limit), stopping after the "
                             "model's end-of-sequence token past the answer's length (default: the answer's tokens)")
    parser.add_argument("-o", "--output", required=True, help="the report directory")
    args = parser.parse_args(argv)
    try:
        import subevict
        from subevict import models, task_loop, task_report, tasks
    except ImportError as error:
        print(f"{PROG}: error: {error} (run with the project's .venv/bin/python after scripts/python_package)",
              file=sys.stderr)
        return 2
    try:
        if args.samples < 1:
            raise UsageError(f"--samples: expected an integer >= 1, got {args.samples}")
        if args.seed < 0:
            raise UsageError(f"--seed: expected an integer >= 0, got {args.seed}")
        if args.max_new_tokens is not None and args.max_new_tokens < 1:
            raise UsageError(f"--max-new-tokens: expected an integer >= 1, got {args.max_new_tokens}")
        task_names = parse_list(args.tasks, "--tasks", str, "task names")
        lengths = parse_list(args.lengths, "--lengths", int, "integer lengths in tokens")
        depths = parse_list(args.depths, "--depths", float, "depths in [0, 1]")
        protocols = parse_list(args.protocol, "--protocol", str, "protocol names")
        for p in protocols:
            if p not in task_loop.PROTOCOLS:
                raise UsageError(f"--protocol: expected of {', '.join(task_loop.PROTOCOLS)}, got {p!r}")
        budgets = subevict.parse_budgets(args.budgets, PROG, "--budgets")
        labels = task_loop.cache_labels(args.policies)
        problem = task_report.output_problem(args.output)
        if problem:
            raise UsageError(f"-o {args.output}: {problem}")
        reader = models.open_gguf(args.gguf)
        config = models.config_of(reader)
        layers = None
        if args.layers.strip().lower() != "all":
            layers = parse_list(args.layers, "--layers", int, "'all' or layer indices")
        tokenizer = tasks.tokenizer_of(args.gguf)
        context = int(config["max_position_embeddings"])
        samples = []
        for task in task_names:
            for length in lengths:
                for depth in depths:
                    samples += tasks.samples(task, tokenizer, length, depth, args.samples, args.seed,
                                             args.haystack, limit=context)
        longest = max(len(s.ids) for s in samples)
        if args.max_new_tokens is not None and longest + args.max_new_tokens > context:
            raise UsageError(f"--max-new-tokens: a {longest}-token prompt and {args.max_new_tokens} generated tokens "
                             f"exceed the model's context of {context} tokens")
        shape = SimpleNamespace(q_heads=config["num_attention_heads"], kv_heads=config["num_key_value_heads"],
                                head_dim=config["head_dim"], score_scale=1.0 / config["head_dim"] ** 0.5)
        sizes = [(k, len(s.ids) + len(s.answer_ids)) for s in samples
                 for k in task_loop.budget_sizes(budgets, len(s.ids))]
        task_loop.check_caches(labels, sizes, shape, args.seed)
        print(f"{PROG}: {len(samples)} samples; loading {args.gguf}", file=sys.stderr, flush=True)
        model = models.load(args.gguf)
        from subevict.evicted_forward import evicting_layers

        evicting_layers(model, layers)
        os.makedirs(args.output, exist_ok=True)
        checkpoint = os.path.join(args.output, CHECKPOINT)
        if os.path.exists(checkpoint):
            print(f"{PROG}: resuming from {checkpoint} (the runs finished there are not run again)", file=sys.stderr)
        start = time.monotonic()
        result = task_loop.closed_loop_tasks(model, samples, labels, budgets, protocols, layers, args.seed,
                                             tokenizer, checkpoint=checkpoint, max_new_tokens=args.max_new_tokens)
    except (UsageError, models.ModelError, subevict.InputError) as error:
        message = str(error).removeprefix(f"{PROG}: ")
        print(f"{PROG}: error: {message}", file=sys.stderr)
        return 2
    settings = {
        "model": str(models.field(reader, "general.name", os.path.basename(args.gguf), required=False)),
        "gguf": os.path.basename(args.gguf), "gguf_sha256": models.file_sha256(args.gguf),
        "tasks": task_names, "lengths": lengths, "depths": depths, "samples": args.samples,
        "protocols": protocols, "policies": labels, "budgets": budgets, "haystack": args.haystack,
        "layers": "all" if layers is None else layers, "seed": args.seed, "max_new_tokens": args.max_new_tokens,
        "seconds": time.monotonic() - start,
    }
    task_report.write(task_report.results_json(result, settings), args.output)
    os.remove(checkpoint)
    print(f"{PROG}: wrote {args.output}/{{results.json,report.md,figures}}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
