#!/usr/bin/python3
"""Side-by-side peer of greedy/simulator: H2O's own real-drop eviction logic (class
H2OKVCache_LayerWise of FMInference/H2O h2o_hf/utils_real_drop/modify_llama.py), driven step by
step on the CPU, at llama2-7b attention shape (32 heads, head_dim 128).

The class is taken from a checkout given by path (nothing of it is stored in this repository):
the file is parsed and only the class definition is executed, with torch in scope, so the rest
of the module (which imports transformers' Llama internals) is not needed. Each step does what
the H2O model does around the cache per decoded token: append the new key and value, compute the
new query's attention over the cache (scores, softmax; the attention output too with
--with-output), and call the cache with those weights, which accumulates the scores and evicts
the lowest-scoring token outside the recent window once the cache is one over budget.

Rate: token·head steps per second = tokens * heads / seconds (the simulator's items/s).

Usage:
  git --git-dir=/path/H2O.git show HEAD:h2o_hf/utils_real_drop/modify_llama.py > /tmp/modify_llama.py
  /usr/bin/python3 bench/peers/h2o_realdrop_peer.py /tmp/modify_llama.py --tokens 4096 --budget 0.2
"""
import argparse
import ast
import time

import torch


def load_cache_class(path):
    """The H2OKVCache_LayerWise class from the file at `path`, executed alone."""
    with open(path, encoding="utf-8") as f:
        source = f.read()
    tree = ast.parse(source)
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "H2OKVCache_LayerWise":
            module = ast.Module(body=[node], type_ignores=[])
            namespace = {"torch": torch}
            exec(compile(module, path, "exec"), namespace)  # noqa: S102 (the peer's own code)
            return namespace["H2OKVCache_LayerWise"]
    raise SystemExit(f"{path}: no class H2OKVCache_LayerWise")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("modify_llama", help="path to h2o_hf/utils_real_drop/modify_llama.py from a checkout")
    parser.add_argument("--tokens", type=int, default=4096)
    parser.add_argument("--heads", type=int, default=32)
    parser.add_argument("--head-dim", type=int, default=128)
    parser.add_argument("--budget", type=float, default=0.2, help="ratio of --tokens, split evenly")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--with-output", action="store_true", help="also compute the attention output")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-steps", type=int, default=0,
                        help="stop after this many tokens (0: all); the budget stays relative to --tokens")
    args = parser.parse_args()

    torch.set_num_threads(args.threads)
    cache_class = load_cache_class(args.modify_llama)
    n, h, d = args.tokens, args.heads, args.head_dim
    k = round(args.budget * n)
    heavy = k // 2
    recent = k - heavy
    cache = cache_class(hh_size=heavy, recent_size=recent, k_seq_dim=2, v_seq_dim=2)
    gen = torch.Generator().manual_seed(args.seed)
    q = torch.randn(h, n, d, generator=gen)
    keys = torch.randn(h, n, d, generator=gen)
    values = torch.randn(h, n, d, generator=gen)
    scale = d ** -0.5

    steps = n if args.max_steps <= 0 else min(n, args.max_steps)
    past = None
    start = time.perf_counter()
    with torch.no_grad():
        for t in range(steps):
            k_new = keys[:, t].reshape(1, h, 1, d)
            v_new = values[:, t].reshape(1, h, 1, d)
            if past is None:
                k_cache, v_cache = k_new, v_new
            else:
                k_cache = torch.cat([past[0], k_new], dim=2)
                v_cache = torch.cat([past[1], v_new], dim=2)
            query = q[:, t].reshape(1, h, 1, d)
            weights = torch.softmax(torch.matmul(query, k_cache.transpose(2, 3)) * scale, dim=-1)
            if args.with_output:
                torch.matmul(weights, v_cache)
            past = cache((k_cache, v_cache), weights)
    seconds = time.perf_counter() - start
    size = past[0].shape[2]
    print(f"h2o real-drop peer: tokens={n} steps={steps} heads={h} head_dim={d} heavy={heavy} "
          f"recent={recent} threads={args.threads} output={args.with_output} final_cache={size}")
    print(f"seconds={seconds:.3f} token_head_steps_per_s={steps * h / seconds:.1f}")


if __name__ == "__main__":
    main()
