#!/usr/bin/env python3
"""The real-attention eviction study of docs/real_attention.md, end to end, for one model.

Steps (each cached in OUT/ and skipped when its output exists, so a rerun resumes):
  1. the real workload: the model (--model smollm2: SmolLM2-135M, the default; gemma3: Gemma 3
     270M, whose sliding-window layers the workload records) on the first TOKENS tokens of
     Debian's GPL-3 text (scripts/real_workload for SmolLM2, scripts/export_gguf.py for Gemma 3),
     and the same model on a held-out text (GFDL-1.3) the twin is not fit to;
  2. the twin: `subevict workload fit` on the GPL-3 workload, then `workload generate --profile`;
     and, for SmolLM2, the generator's llama2-7b preset (per-layer profile) at the same length;
  3. per-layer statistics of all four (`workload inspect --recent-window 64`);
  4. eviction: `subevict simulate --optimum flow` on the real workload and on the twin, every
     layer and KV head, budgets 5%, 10%, 20%, 50%, policies h2o, tova, streamingllm, local,
     l2norm, snapkv, random;
  4b. with --twin-seeds N > 1, the twin generated at the next N - 1 seeds too and simulated at
     the twin's budgets (each generated file removed once simulated): the transfer at every seed;
  5. tables (Markdown, stdout and OUT/tables.md), CSV and gnuplot figures (OUT/*.png, *.svg).

Usage (from the repository root, after scripts/build):
    /usr/bin/python3 scripts/real_attention_study.py [--model smollm2|gemma3] [--out DIR]
        [--tokens 2048] [--threads 2] [--seed 0] [--fit-arg=ARG ...] [--twin-seeds 5]
(--out defaults to build/study for SmolLM2 and build/study-gemma3 for Gemma 3; a twin fitted with
another --fit-arg, e.g. --fit-arg=--low-norm, wants its own --out, since the twin is cached.)
Progress of the long steps comes from subevict on stderr.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SUBEVICT = os.path.join(ROOT, "build", "bin", "subevict")
HELD_OUT_TEXT = "/usr/share/common-licenses/GFDL-1.3"
BUDGETS = ("0.05", "0.1", "0.2", "0.5")
POLICIES = ("h2o", "tova", "streamingllm", "local", "l2norm", "snapkv", "random")
# The policies and budgets whose transfer from real to twin the acceptance measures.
TRANSFER_POLICIES = ("h2o", "tova", "snapkv", "streamingllm", "local", "l2norm")
TRANSFER_BUDGETS = ("0.1", "0.2")
STATISTICS = (("sparsity", "sparsity", 0.03), ("first_token_mass", "first-token mass", 0.08),
              ("received_top_share", "top-10% share", 0.08),
              ("recent_mass", "mass on the 64 most recent", 0.08),
              ("norm_attention_spearman", "Spearman(key norm, received)", 0.15),
              ("wide_recent_mass", "mass on the 256 most recent", 0.05))


def log(message):
    print(f"study: {message}", file=sys.stderr, flush=True)


def run(*args, stdout=None):
    log(" ".join(args))
    return subprocess.run(args, check=True, stdout=stdout, text=True)


def cached(path, make):
    if not os.path.exists(path):
        make()
    return path


# Per model: its name in the tables, the setup_model argument, and whether the study adds the
# generator's llama2-7b preset beside it.
MODELS = {"smollm2": ("SmolLM2-135M", [], True), "gemma3": ("Gemma 3 270M", ["gemma3"], False)}
TEXT = "/usr/share/common-licenses/GPL-3"


def export(gguf, text, tokens, path):
    """Exports `tokens` tokens of `text` through `gguf` to `path` (cached)."""
    return cached(path, lambda: run(
        os.path.join(ROOT, ".venv", "bin", "python"), os.path.join(ROOT, "scripts", "export_gguf.py"),
        "--gguf", gguf, "--text-file", text, "--tokens", str(tokens), "-o", path))


def workloads(out, model, tokens, seed, fit_args=()):
    """Paths of the real, held-out, twin (and, for SmolLM2, preset) workloads and of the twin's
    profile."""
    name, setup_args, with_preset = MODELS[model]
    gguf = subprocess.run([os.path.join(ROOT, "scripts", "setup_model"), *setup_args], check=True,
                          stdout=subprocess.PIPE, text=True).stdout.strip().splitlines()[-1]
    if model == "smollm2":
        real = subprocess.run([os.path.join(ROOT, "scripts", "real_workload"), "--tokens", str(tokens)],
                              check=True, stdout=subprocess.PIPE, text=True).stdout.strip()
    else:
        real = export(gguf, TEXT, tokens, os.path.join(out, "real.safetensors"))
    held_out = export(gguf, HELD_OUT_TEXT, tokens, os.path.join(out, "held_out.safetensors"))
    profile = cached(os.path.join(out, "twin.toml"), lambda: run(
        SUBEVICT, "workload", "fit", real, "-o", os.path.join(out, "twin.toml"), "--seed", str(seed),
        "--json", os.path.join(out, "fit.json"), "--name", f"{name} twin (GPL-3 text)", *fit_args))
    twin = cached(os.path.join(out, "twin.safetensors"), lambda: run(
        SUBEVICT, "workload", "generate", "--profile", profile, "--tokens", str(tokens), "--seed",
        str(seed), "-o", os.path.join(out, "twin.safetensors")))
    paths = {"real": real, "held_out": held_out, "twin": twin}
    if with_preset:
        paths["preset"] = cached(os.path.join(out, "preset.safetensors"), lambda: run(
            SUBEVICT, "workload", "generate", "--preset", "llama2-7b", "--layers", "0", "--tokens",
            str(tokens), "--seed", str(seed), "-o", os.path.join(out, "preset.safetensors")))
    return paths, profile


def twin_ratios_at_seed(out, profile, tokens, seed, threads, budgets):
    """The twin generated from `profile` with `seed`, simulated as the study's twin (cached in
    OUT/simulate_twin_seedN/); the generated workload is removed once simulated."""
    name = f"twin_seed{seed}"
    path = os.path.join(out, f"{name}.safetensors")
    if not os.path.exists(os.path.join(out, f"simulate_{name}", "summary.csv")):
        run(SUBEVICT, "workload", "generate", "--profile", profile, "--tokens", str(tokens), "--seed", str(seed),
            "-o", path)
    ratios = simulate(out, name, path, threads, seed, budgets)
    if os.path.exists(path):
        os.remove(path)
    return ratios


def inspect(out, name, path):
    report = os.path.join(out, f"inspect_{name}.json")
    cached(report, lambda: run(SUBEVICT, "workload", "inspect", path, "--recent-window", "64",
                               "--json", report, stdout=subprocess.DEVNULL))
    with open(report) as stream:
        doc = json.load(stream)
    return {row["layer"]: dict(row["mean"], sink_head_rate=row["sink_head_rate"], window=row["window"])
            for row in doc["layers"]}


def simulate(out, name, path, threads, seed, budgets):
    directory = os.path.join(out, f"simulate_{name}")
    cached(os.path.join(directory, "summary.csv"), lambda: run(
        SUBEVICT, "simulate", "--workload", path, "--layers", "all", "--budget", budgets[0],
        *(("--budgets", ",".join(budgets[1:])) if len(budgets) > 1 else ()),
        "--policies", ",".join(POLICIES), "--optimum", "flow",
        "--threads", str(threads), "--seed", str(seed), "--no-plots", "-o", directory,
        stdout=subprocess.DEVNULL))
    # (policy, budget, layer) -> mean over the layer's KV heads of policy / OPT; None where the
    # policy kept the whole cache (l2norm leaves layers 0 and 1 uncompressed, as its paper does):
    # such a run is not held to the budget, so it has no ratio to the budget's optimum.
    per_head = {}
    with open(os.path.join(directory, "results.json")) as stream:
        for head in json.load(stream)["heads"]:
            for policy, run_ in head["policies"].items():
                key = (policy, f"{float(head['budget']):g}", int(head["layer"]))
                ratio = run_["total_retained_mass"] / head["optimum"]["total"] if run_["compressed"] else None
                per_head.setdefault(key, []).append(ratio)
    return {key: None if None in values else statistics.fmean(values) for key, values in per_head.items()}


def layer_mean(ratios, policy, budget, layers):
    """Mean over the layers where the policy was held to the budget; None when there are none."""
    values = [ratios[(policy, budget, l)] for l in layers if ratios[(policy, budget, l)] is not None]
    return statistics.fmean(values) if values else None


def fmt(value):
    return f"{value:.3f}"


def mask_text(window):
    return "global" if window == 0 else f"window {window}"


def statistics_table(stats, names, layers=None):
    """Per layer (`layers`, default all of the real workload's): the layer's attention mask, then
    each statistic for each workload in `names`."""
    layers = sorted(stats["real"]) if layers is None else layers
    header = "| layer | mask | " + " | ".join(f"{label} ({', '.join(names)})" for _, label, _ in STATISTICS)
    lines = [header + " | sink-head rate (" + ", ".join(names) + ") |",
             "|---" * (len(STATISTICS) + 3) + "|"]
    for layer in layers:
        cells = []
        for key, _, _ in STATISTICS + (("sink_head_rate", "", 0),):
            cells.append(" / ".join(fmt(stats[n][layer][key]) if layer in stats[n] else "–"
                                    for n in names))
        lines.append(f"| {layer} | {mask_text(stats['real'][layer]['window'])} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def fit_summary(stats, against):
    """Per statistic: layers of the twin within tolerance of `against`, and the largest gap."""
    lines = ["| statistic | tolerance | layers within | largest gap (layer) |", "|---|---|---|---|"]
    layers = sorted(stats[against])
    for key, label, tolerance in STATISTICS:
        gaps = [(abs(stats["twin"][l][key] - stats[against][l][key]), l) for l in layers]
        within = sum(gap <= tolerance for gap, _ in gaps)
        worst = max(gaps)
        lines.append(f"| {label} | {tolerance} | {within} of {len(layers)} | {fmt(worst[0])} "
                     f"({worst[1]}) |")
    return "\n".join(lines)


def eviction_table(ratios, budget, names, stats):
    layers = sorted({layer for (_, _, layer) in ratios[names[0]]})
    lines = ["| layer | mask | " + " | ".join(POLICIES) + " |", "|---" * (len(POLICIES) + 2) + "|"]
    for layer in layers + ["mean"]:
        cells = []
        for policy in POLICIES:
            values = []
            for n in names:
                if (policy, budget, layers[0]) not in ratios[n]:
                    values.append("–")  # budget not simulated on this workload
                else:
                    v = (layer_mean(ratios[n], policy, budget, layers) if layer == "mean"
                         else ratios[n][(policy, budget, layer)])
                    values.append("all" if v is None else fmt(v))
            cells.append(" / ".join(values))
        mask = "" if layer == "mean" else mask_text(stats["real"][layer]["window"])
        lines.append(f"| {layer} | {mask} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def transfer_cells(real, twin):
    """(cells within 0.05, cells) over the acceptance's (layer, budget, policy) cells where both
    workloads held the policy to the budget."""
    within = cells = 0
    for key, value in real.items():
        if key[0] in TRANSFER_POLICIES and key[1] in TRANSFER_BUDGETS and value is not None \
                and twin.get(key) is not None:
            cells += 1
            within += abs(twin[key] - value) <= 0.05
    return within, cells


def transfer_verdict(within, cells):
    """The share to one decimal and the verdict from the counts, so 89.6% never reads as 90%."""
    met = 10 * within >= 9 * cells
    return met, f"{100.0 * within / max(1, cells):.1f}%", "met" if met else "not met"


def ranking(ratios, budget, layers):
    """The acceptance's policies by mean ratio over `layers` at `budget`, best first."""
    mean = {p: layer_mean(ratios, p, budget, layers) for p in TRANSFER_POLICIES}
    return sorted(mean, key=lambda p: -1 if mean[p] is None else mean[p], reverse=True)


def transfer_summary(ratios):
    """Per (policy, budget) of the acceptance: layers whose twin ratio is within 0.05 of the
    real one, the largest gap; then the policy ranking by mean ratio on each."""
    layers = sorted({layer for (_, _, layer) in ratios["real"]})
    lines = ["| policy | budget | layers within 0.05 | largest gap (layer) | mean real | mean twin |",
             "|---|---|---|---|---|---|"]
    for budget in TRANSFER_BUDGETS:
        for policy in TRANSFER_POLICIES:
            held = [l for l in layers if ratios["real"][(policy, budget, l)] is not None
                    and ratios["twin"][(policy, budget, l)] is not None]
            gaps = [(abs(ratios["twin"][(policy, budget, l)] - ratios["real"][(policy, budget, l)]), l)
                    for l in held]
            worst = max(gaps)
            means = [layer_mean(ratios[n], policy, budget, held) for n in ("real", "twin")]
            lines.append(f"| {policy} | {budget} | {sum(g <= 0.05 for g, _ in gaps)} of {len(held)} | "
                         f"{fmt(worst[0])} ({worst[1]}) | {fmt(means[0])} | {fmt(means[1])} |")
    lines.append("")
    within, cells = transfer_cells(ratios["real"], ratios["twin"])
    _, share, verdict = transfer_verdict(within, cells)
    lines.append(f"All (layer, budget, policy) cells: {within} of {cells} within 0.05 "
                 f"({share}; the acceptance asks for 90%: {verdict}).")
    lines.append("")
    for budget in TRANSFER_BUDGETS:
        for n in ("real", "twin"):
            lines.append(f"- budget {budget}, {n}: " + " > ".join(ranking(ratios[n], budget, layers)))
    return "\n".join(lines)


def seed_transfer_summary(real, twins):
    """The acceptance at every seed: per seed of `twins` ({seed: ratios}), the cells within 0.05
    and whether the ranking at each budget is the real one; then the verdict over all seeds (met
    only where every seed reaches 90% with the real ranking)."""
    layers = sorted({layer for (_, _, layer) in real})
    lines = ["| seed | cells within 0.05 | share | " + " | ".join(f"ranking at {b}" for b in TRANSFER_BUDGETS)
             + " |", "|---" * (3 + len(TRANSFER_BUDGETS)) + "|"]
    failed = []
    for seed, twin in sorted(twins.items()):
        within, cells = transfer_cells(real, twin)
        met, share, _ = transfer_verdict(within, cells)
        same = [ranking(twin, b, layers) == ranking(real, b, layers) for b in TRANSFER_BUDGETS]
        if not (met and all(same)):
            failed.append(seed)
        lines.append(f"| {seed} | {within} of {cells} | {share} | "
                     + " | ".join("real" if s else "differs" for s in same) + " |")
    lines.append("")
    lines.append(f"At every seed ({len(twins)}): " + ("met" if not failed else
                 "not met (seeds " + ", ".join(str(s) for s in failed) + ")")
                 + "; the acceptance asks for 90% of the cells and the real ranking at each seed.")
    return "\n".join(lines)


def write_figures(out, stats, ratios, model):
    """Per-layer statistics (real, twin, held out, and preset where measured) and policy / OPT per
    layer at 20% (real, twin)."""
    scripts = []
    short = MODELS[model][0].split("-")[0].split(" 270M")[0]
    titles = {"real": f"{short}, GPL-3 (real)", "twin": "twin", "held_out": f"{short}, GFDL (held out)",
              "preset": "llama2-7b preset"}
    names = [n for n in ("real", "twin", "held_out", "preset") if n in stats]
    for key, label, _ in STATISTICS:
        data = os.path.join(out, f"layers_{key}.dat")
        with open(data, "w") as stream:
            stream.write("# layer " + " ".join(names) + "\n")
            for layer in range(max(len(stats[n]) for n in names)):
                row = [stats[n][layer][key] if layer in stats[n] else float("nan") for n in names]
                stream.write(f"{layer} " + " ".join(f"{v:.6g}" for v in row) + "\n")
        scripts.append((f"layers_{key}", f"{label} by layer", "layer", label,
                        [(f"layers_{key}.dat", 2 + c, titles[n]) for c, n in enumerate(names)]))
    layers = sorted({layer for (_, _, layer) in ratios["real"]})
    for budget in ("0.2", "0.1"):
        data = os.path.join(out, f"eviction_{budget}.dat")
        with open(data, "w") as stream:
            stream.write("# layer " + " ".join(f"{p}_real {p}_twin" for p in POLICIES) + "\n")
            for layer in layers:
                stream.write(f"{layer} " + " ".join(
                    " ".join("nan" if ratios[n][(p, budget, layer)] is None else
                             f"{ratios[n][(p, budget, layer)]:.6g}" for n in ("real", "twin"))
                    for p in POLICIES) + "\n")
        series = []
        for k, policy in enumerate(POLICIES):
            if policy in TRANSFER_POLICIES:
                series.append((f"eviction_{budget}.dat", 2 + 2 * k, f"{policy} real"))
                series.append((f"eviction_{budget}.dat", 3 + 2 * k, f"{policy} twin"))
        scripts.append((f"eviction_{budget}", f"policy / OPT by layer, budget {float(budget):.0%}",
                        "layer", "policy / OPT", series))
    def mean_or_nan(name, policy, budget):
        if (policy, budget, layers[0]) not in ratios[name]:
            return float("nan")
        mean = layer_mean(ratios[name], policy, budget, layers)
        return float("nan") if mean is None else mean

    data = os.path.join(out, "budget_curve.dat")
    with open(data, "w") as stream:
        stream.write("# budget " + " ".join(f"{p}_real {p}_twin" for p in POLICIES) + "\n")
        for budget in BUDGETS:
            stream.write(f"{budget} " + " ".join(
                f"{mean_or_nan('real', p, budget):.6g} {mean_or_nan('twin', p, budget):.6g}"
                for p in POLICIES) + "\n")
    scripts.append(("budget_curve", "mean policy / OPT over layers against the budget",
                    "budget (share of the 2048 tokens)", "policy / OPT",
                    [("budget_curve.dat", 2 + 2 * k + side, f"{p} {('real', 'twin')[side]}")
                     for k, p in enumerate(POLICIES) for side in (0, 1)]))
    for name, title, x_label, y_label, series in scripts:
        plot = ", ".join(
            f"'{path}' using 1:{column} with linespoints dt {1 if 'twin' not in title_ else 2} "
            f"lc {index // (2 if name.startswith(('eviction', 'budget')) else 1) + 1} "
            f"title '{title_}'"
            for index, (path, column, title_) in enumerate(series))
        gp = (f"set title '{title}' noenhanced\nset xlabel '{x_label}' noenhanced\n"
              f"set ylabel '{y_label}' noenhanced\nset key outside right noenhanced\nset grid\n"
              + ("set logscale x\n" if name == "budget_curve" else "")
              + f"set terminal pngcairo size 1000,520\nset output '{name}.png'\nplot {plot}\n"
              f"set terminal svg size 1000,520\nset output '{name}.svg'\nreplot\n")
        with open(os.path.join(out, f"{name}.gp"), "w") as stream:
            stream.write(gp)
        subprocess.run(["gnuplot", f"{name}.gp"], cwd=out, check=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", choices=sorted(MODELS), default="smollm2")
    parser.add_argument("--out", default=None)
    parser.add_argument("--tokens", type=int, default=2048)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--fit-arg", action="append", default=[], metavar="ARG",
                        help="one more argument for workload fit (repeatable), e.g. --fit-arg=--low-norm")
    parser.add_argument("--twin-budgets", default=",".join(BUDGETS),
                        help="budgets simulated on the twin (the acceptance needs 0.1,0.2)")
    parser.add_argument("--twin-seeds", type=int, default=1,
                        help="also generate the twin at the next N-1 seeds and report the transfer at every seed "
                             "(the acceptance asks for 5)")
    args = parser.parse_args()
    if args.twin_seeds < 1:
        parser.error(f"--twin-seeds: expected a count >= 1, got {args.twin_seeds}")
    twin_budgets = tuple(f"{float(b):g}" for b in args.twin_budgets.split(","))
    args.out = args.out or os.path.join(ROOT, "build", "study" if args.model == "smollm2" else f"study-{args.model}")
    os.makedirs(args.out, exist_ok=True)
    paths, profile = workloads(args.out, args.model, args.tokens, args.seed, args.fit_arg)
    stats = {name: inspect(args.out, name, path) for name, path in paths.items()}
    ratios = {"real": simulate(args.out, "real", paths["real"], args.threads, args.seed, BUDGETS),
              "twin": simulate(args.out, "twin", paths["twin"], args.threads, args.seed, twin_budgets)}
    twins = {args.seed: ratios["twin"]}
    for seed in range(args.seed + 1, args.seed + args.twin_seeds):
        twins[seed] = twin_ratios_at_seed(args.out, profile, args.tokens, seed, args.threads, twin_budgets)
    write_figures(args.out, stats, ratios, args.model)
    names = tuple(n for n in ("real", "twin", "held_out", "preset") if n in stats)
    title = " / ".join({"real": "real", "twin": "twin", "held_out": "held-out text",
                        "preset": "llama2-7b preset"}[n] for n in names)
    by_mask = {}
    for layer, row in sorted(stats["real"].items()):
        by_mask.setdefault(mask_text(row["window"]), []).append(layer)
    sections = [f"## Per-layer statistics ({mask} layers): {title}\n\n" + statistics_table(stats, names, layers)
                for mask, layers in sorted(by_mask.items())] + [
        "## Twin against the text it was fit to (GPL-3)\n\n" + fit_summary(stats, "real"),
        "## Twin against real attention on a held-out text (GFDL-1.3)\n\n"
        + fit_summary(stats, "held_out"),
        "## Transfer of eviction results from real to twin\n\n" + transfer_summary(ratios),
    ] + ([f"## Transfer at every seed of the twin ({args.seed}-{args.seed + args.twin_seeds - 1})\n\n"
          + seed_transfer_summary(ratios["real"], twins)] if args.twin_seeds > 1 else []) + [f"## policy / OPT per layer at budget {float(b):.0%}: real / twin\n\n"
         + eviction_table(ratios, b, ("real", "twin"), stats) for b in BUDGETS]
    text = "\n\n".join(sections) + "\n"
    with open(os.path.join(args.out, "tables.md"), "w") as stream:
        stream.write(text)
    print(text)


if __name__ == "__main__":
    main()
