#!/usr/bin/env python3
"""Eviction inside a real model's forward: perplexity, KL and top-1 agreement beside retained mass
against the exact optimum, for every (policy, budget) and the reference caches opt and topk
(subevict.closed_loop; docs/closed_loop.md).

Usage:
    closed_loop.py --gguf FILE --text-file FILE --tokens N [--policies LIST] [--budgets LIST]
                   [--layers all|0,3,5] [--seed S] [--workers W] -o DIR

Writes DIR/results.json (every number, with the model's, text's and token ids' SHA-256),
DIR/report.md and figures. Progress goes to stderr. Needs the project's .venv (scripts/setup_model)
with the subevict package installed (scripts/python_package). Bad input exits 2 with one line.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys

sys.dont_write_bytecode = True


class UsageError(Exception):
    pass


def parse_layers(text, count):
    if text.strip().lower() == "all":
        return None
    layers = []
    for item in text.split(","):
        if not item.strip().isdigit() or int(item) >= count:
            raise UsageError(f"--layers: expected 'all' or layer indices in [0, {count}), got "
                             f"{item!r}")
        layers.append(int(item))
    return layers


def main(argv=None):
    parser = argparse.ArgumentParser(prog="closed_loop.py", description=__doc__.split("\n")[0])
    parser.add_argument("--gguf", required=True, help="the .gguf model file")
    parser.add_argument("--text-file", required=True, help="a UTF-8 text")
    parser.add_argument("--tokens", type=int, required=True, help="its first N tokens")
    parser.add_argument("--policies", default="h2o,tova,snapkv,streamingllm,l2norm,local,random,"
                        "opt,topk", help="policy specs as simulate's, and the references opt, topk")
    parser.add_argument("--budgets", default="0.05,0.1,0.2,0.5",
                        help="ratios in (0, 1) of the tokens or integer sizes")
    parser.add_argument("--layers", default="all", help="the layers that evict ('all' or 0,3,5)")
    parser.add_argument("--seed", type=int, default=0, help="seed of randomized policies")
    parser.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1),
                        help="processes running (policy, budget) pairs side by side, one thread "
                             "and one copy of the model each (default: 2, or 1 on one core)")
    parser.add_argument("-o", "--output", required=True, help="the report directory")
    args = parser.parse_args(argv)
    try:
        import subevict
        from subevict import closed_loop_report, evicted_forward, models
    except ImportError as error:
        print(f"closed_loop: error: {error} (run with the project's .venv/bin/python after "
              "scripts/python_package)", file=sys.stderr)
        return 2
    try:
        if args.workers < 1:
            raise UsageError(f"--workers: expected an integer >= 1, got {args.workers}")
        if args.tokens < 2:
            raise UsageError(f"--tokens: expected at least 2, got {args.tokens}")
        budgets = subevict.parse_budgets(args.budgets, "closed_loop", "--budgets")
        evicted_forward.caches_of(args.policies)
        problem = closed_loop_report.output_problem(args.output)
        if problem:
            raise UsageError(f"-o {args.output}: {problem}")
        try:
            with open(args.text_file, encoding="utf-8") as stream:
                text = stream.read()
        except (OSError, UnicodeDecodeError) as error:
            raise UsageError(f"--text-file {args.text_file}: cannot read UTF-8 text: {error}") \
                from None
        reader = models.open_gguf(args.gguf)
        layers = parse_layers(args.layers, models.config_of(reader)["num_hidden_layers"])
        ids = models.tokenize(reader, text, args.tokens)[0]
        print(f"closed_loop: loading {args.gguf}", file=sys.stderr, flush=True)
        model = models.load(args.gguf)
        result = subevict.closed_loop(model, ids, args.policies, budgets, layers, seed=args.seed,
                                       workers=args.workers)
    except (UsageError, models.ModelError, subevict.InputError) as error:
        message = str(error).removeprefix("closed_loop: ")  # the library's errors name their source
        print(f"closed_loop: error: {message}", file=sys.stderr)
        return 2
    settings = {
        "model": str(models.field(reader, "general.name", os.path.basename(args.gguf),
                                  required=False)),
        "gguf": os.path.basename(args.gguf), "gguf_sha256": models.file_sha256(args.gguf),
        "text_file": args.text_file,
        "text_sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
        "token_ids_sha256": models.token_ids_sha256(ids),
        "policies": args.policies, "budgets": budgets,
        "layers": "all" if layers is None else layers, "seed": args.seed,
    }
    closed_loop_report.write(evicted_forward.results_json(result, settings), args.output)
    print(f"closed_loop: wrote {args.output}/{{results.json,report.md,perplexity.svg,"
          "mass_vs_perplexity.svg}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
