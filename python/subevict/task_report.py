"""The task loop's report (docs/tasks.md): results.json (every run, the aggregates, provenance),
report.md and figures (gnuplot: accuracy heatmaps over depth x length per protocol, cache and
budget; accuracy against the budget per cache with Clopper-Pearson intervals). Written as the
closed loop's report is: every file under a temporary name and renamed, results.json last.

Aggregates: a sample is answered when its generated text contains every answer (RULER's string
match at 1). Per protocol, the full cache's accuracy per (task, length); a (task, length) where
the full cache answers fewer than FULL_MODEL_FLOOR of its samples is reported as failed by the
full model and left out of every cache comparison. Over the rest, per (protocol, task, cache,
budget) and over all tasks: accuracy with its 95% Clopper-Pearson interval, exact match, mean
string match and mean answer log-probability."""

from __future__ import annotations

import os
import shutil
import subprocess

from . import _subevict
from . import closed_loop_report
from .closed_loop_report import COLOURS, POINT_TYPES, _write_atomic, output_problem, spearman

FULL_MODEL_FLOOR = 0.5
CONFIDENCE = 0.95

__all__ = ["aggregate", "output_problem", "results_json", "write"]


def _accuracy(runs):
    answered = sum(r["correct"] for r in runs)
    lower, upper = _subevict.clopper_pearson(answered, len(runs), CONFIDENCE)
    return {"samples": len(runs), "answered": answered, "accuracy": answered / len(runs),
            "interval": [lower, upper],
            "exact_match": sum(r["exact_match"] for r in runs) / len(runs),
            "string_match": sum(r["string_match"] for r in runs) / len(runs),
            "answer_logprob": sum(r["answer_logprob"] for r in runs) / len(runs)}


def _key(run, sample):
    return (run["protocol"], sample["task"], sample["length"])


def aggregate(runs, samples):
    """The aggregates of the module's docstring from the JSON runs and samples."""
    full_cells = {}
    for r in runs:
        if r["cache"] == "full":
            full_cells.setdefault(_key(r, samples[r["sample"]]), []).append(r)
    full = [dict(protocol=p, task=t, length=n, **_accuracy(cell),
                 failed_by_full_model=_accuracy(cell)["accuracy"] < FULL_MODEL_FLOOR)
            for (p, t, n), cell in sorted(full_cells.items())]
    failed = {(c["protocol"], c["task"], c["length"]) for c in full if c["failed_by_full_model"]}
    kept = [r for r in runs if r["cache"] != "full" and _key(r, samples[r["sample"]]) not in failed]
    cells = {}
    for r in kept:
        sample = samples[r["sample"]]
        for task in (sample["task"], "all"):
            cells.setdefault((r["protocol"], task, r["cache"], r["budget_size_label"]), []).append(r)
    per_cache = [dict(protocol=p, task=t, cache=c, budget=b, **_accuracy(cell))
                 for (p, t, c, b), cell in cells.items()]
    heat = {}
    for r in kept:
        sample = samples[r["sample"]]
        heat.setdefault((r["protocol"], r["cache"], r["budget_size_label"], sample["depth"], sample["length"]),
                        []).append(r)
    heatmap = [dict(protocol=p, cache=c, budget=b, depth=d, length=n, **_accuracy(cell))
               for (p, c, b, d, n), cell in heat.items()]
    return {"full_model": full, "per_cache": per_cache, "heatmap": heatmap,
            "perplexity_vs_accuracy": _perplexity_vs_accuracy(runs, per_cache)}


def _perplexity_vs_accuracy(runs, per_cache):
    """Per protocol: Spearman over (cache, budget) of the streaming runs' mean prompt log-perplexity
    (the closed loop's measure, on the samples' own prompts) against the protocol's accuracy over
    all kept tasks (higher perplexity should go with lower accuracy: a negative rho)."""
    nll = {}
    for r in runs:
        if r["prompt_nll"] is not None and r["cache"] != "full":
            nll.setdefault((r["cache"], r["budget_size_label"]), []).append(r["prompt_nll"])
    out = {}
    for protocol in sorted({c["protocol"] for c in per_cache}):
        points = [(sum(nll[(c["cache"], c["budget"])]) / len(nll[(c["cache"], c["budget"])]), c["accuracy"])
                  for c in per_cache if c["protocol"] == protocol and c["task"] == "all"
                  and (c["cache"], c["budget"]) in nll]
        out[protocol] = spearman(points)
    return out


def results_json(result, settings):
    """The JSON form of closed_loop_tasks' result with `settings` (provenance as the caller gives
    it: model file and its SHA-256, ...)."""
    samples = [{"task": s.task, "haystack": s.haystack, "length": s.length, "depth": s.depth, "seed": s.seed,
                "prompt_tokens": len(s.ids), "answer": s.answer, "answers": list(s.answers),
                "answer_ids": list(s.answer_ids), "sha256": s.sha256, "spans": {k: list(v) for k, v in s.spans.items()}}
               for s in result["samples"]]
    runs = [{"sample": r.sample, "protocol": r.protocol, "cache": r.cache, "budget": r.budget,
             "budget_size": r.budget_size, "budget_size_label": str(r.budget),
             "generated": r.generated, "text": r.text, "exact_match": r.exact_match,
             "string_match": r.string_match, "correct": r.correct, "answer_logprob": r.answer_logprob,
             "first_wrong": r.first_wrong, "prompt_nll": r.prompt_nll, "seconds": r.seconds}
            for r in result["runs"]]
    return {"settings": settings, "samples": samples, "runs": runs, "aggregates": aggregate(runs, samples)}


def _fmt(x, digits=2):
    return "–" if x is None else f"{x:.{digits}f}"


def markdown(results):
    """report.md: the full model per task and length, then per protocol the accuracy of every cache
    at every budget over the kept tasks (with intervals) and the answer log-probabilities."""
    a = results["aggregates"]
    s = results["settings"]
    lines = ["# Tasks in the closed loop", "",
             f"Model {s.get('model')} ({s.get('gguf')}, sha256 {s.get('gguf_sha256', '')[:16]}…); "
             f"tasks {s.get('tasks')}, lengths {s.get('lengths')}, depths {s.get('depths')}, "
             f"{s.get('samples')} sample(s) each; protocols {s.get('protocols')}; budgets {s.get('budgets')} "
             "(ratios of each sample's prompt, or sizes).", "",
             "## The full cache", "", "| protocol | task | length | answered | accuracy | 95% interval |",
             "|---|---|---:|---:|---:|---|"]
    for c in a["full_model"]:
        mark = " (full model fails: left out)" if c["failed_by_full_model"] else ""
        lines.append(f"| {c['protocol']} | {c['task']} | {c['length']} | {c['answered']}/{c['samples']} | "
                     f"{_fmt(c['accuracy'])}{mark} | [{_fmt(c['interval'][0])}, {_fmt(c['interval'][1])}] |")
    for protocol in dict.fromkeys(c["protocol"] for c in a["per_cache"]):
        cells = [c for c in a["per_cache"] if c["protocol"] == protocol and c["task"] == "all"]
        budgets = list(dict.fromkeys(c["budget"] for c in cells))
        caches = list(dict.fromkeys(c["cache"] for c in cells))
        lines += ["", f"## {protocol}: accuracy over the kept tasks (95% Clopper-Pearson interval)", "",
                  "| cache | " + " | ".join(f"budget {b}" for b in budgets) + " |",
                  "|---|" + "---:|" * len(budgets)]
        for cache in caches:
            row = []
            for b in budgets:
                c = next((x for x in cells if x["cache"] == cache and x["budget"] == b), None)
                row.append("–" if c is None else
                           f"{_fmt(c['accuracy'])} [{_fmt(c['interval'][0])}, {_fmt(c['interval'][1])}]")
            lines.append(f"| {cache} | " + " | ".join(row) + " |")
        lines += ["", f"Mean answer log-probability ({protocol}):", "",
                  "| cache | " + " | ".join(f"budget {b}" for b in budgets) + " |", "|---|" + "---:|" * len(budgets)]
        for cache in caches:
            row = [next((_fmt(x["answer_logprob"]) for x in cells if x["cache"] == cache and x["budget"] == b), "–")
                   for b in budgets]
            lines.append(f"| {cache} | " + " | ".join(row) + " |")
        rho = a["perplexity_vs_accuracy"].get(protocol)
        lines += ["", f"Spearman over (cache, budget) of the streaming prompt log-perplexity against "
                      f"{protocol} accuracy: " + ("not computable (fewer than 3 points or a constant)"
                                                  if rho is None else
                                                  f"rho {rho['rho']:.3f} (p {rho['p_value']:.3g}, {rho['points']} points)")]
    lines += ["", "Figures: accuracy_vs_budget_<protocol>.svg; heatmap_<protocol>.svg (accuracy over depth x "
              "length, one panel per cache and budget).", ""]
    return "\n".join(lines)


def _gnuplot(out, name, body, size="1000,560"):
    for terminal, ext in ((f"pngcairo size {size}", "png"), (f"svg size {size}", "svg")):
        script = f"set terminal {terminal}\nset output '{name}.{ext}.tmp'\nset grid\n{body}"
        subprocess.run(["gnuplot"], input=script, text=True, cwd=out, check=True, capture_output=True)
        os.replace(os.path.join(out, f"{name}.{ext}.tmp"), os.path.join(out, f"{name}.{ext}"))


def figures(results, out):
    """The figures of the module's docstring (skipped, with a note, when gnuplot is missing)."""
    if shutil.which("gnuplot") is None:
        return ["gnuplot not found: no figures"]
    a = results["aggregates"]
    for protocol in dict.fromkeys(c["protocol"] for c in a["per_cache"]):
        cells = [c for c in a["per_cache"] if c["protocol"] == protocol and c["task"] == "all"]
        caches = list(dict.fromkeys(c["cache"] for c in cells))
        budgets = list(dict.fromkeys(c["budget"] for c in cells))
        data = []
        for cache in caches:
            data.append(f"# {cache}")
            for i, b in enumerate(budgets):
                c = next((x for x in cells if x["cache"] == cache and x["budget"] == b), None)
                if c:
                    data.append(f"{i} {c['accuracy']:.6g} {c['interval'][0]:.6g} {c['interval'][1]:.6g}")
            data += ["", ""]
        _write_atomic(os.path.join(out, f"accuracy_{protocol}.dat"), "\n".join(data) + "\n")
        tics = ", ".join(f"'{b}' {i}" for i, b in enumerate(budgets))
        plots = ", ".join(
            f"'accuracy_{protocol}.dat' index {i} using ($1+{(i - len(caches) / 2) * 0.03:.3f}):2:3:4 with "
            f"yerrorlines lw 2 lc rgb '{COLOURS[i % len(COLOURS)]}' pt {POINT_TYPES[i % len(POINT_TYPES)]} "
            f"title '{cache}'" for i, cache in enumerate(caches))
        _gnuplot(out, f"accuracy_vs_budget_{protocol}",
                 f"set title 'accuracy against the budget ({protocol}, 95% Clopper-Pearson)' noenhanced\n"
                 f"set key outside right noenhanced\nset xtics ({tics})\nset xlabel 'budget'\n"
                 f"set ylabel 'accuracy'\nset yrange [-0.05:1.05]\nset xrange [-0.5:{len(budgets) - 0.5}]\n"
                 f"plot {plots}\n")
        heat = [h for h in a["heatmap"] if h["protocol"] == protocol]
        depths = sorted({h["depth"] for h in heat})
        lengths = sorted({h["length"] for h in heat})
        panels = [(c, b) for b in budgets for c in caches]
        columns = len(caches)
        rows = max(1, len(budgets))
        body = [f"set multiplot layout {rows},{columns} title 'accuracy over depth x length ({protocol})' noenhanced",
                "set cbrange [0:1]", "set palette defined (0 '#b2182b', 0.5 '#f7f7f7', 1 '#2166ac')",
                "unset key", f"set xtics ({', '.join(repr(str(n)) + f' {i}' for i, n in enumerate(lengths))}) font ',7'",
                f"set ytics ({', '.join(repr(str(d)) + f' {i}' for i, d in enumerate(depths))}) font ',7'"]
        # One box per (length, depth) cell, coloured by accuracy (boxes, not `with image`: an image
        # needs two cells along each axis, and one length or one depth is a common grid); the
        # panels are the blocks of one data file.
        body += [f"set xrange [-0.5:{len(lengths) - 0.5}]", f"set yrange [-0.5:{len(depths) - 0.5}]"]
        name, blocks = f"heat_{protocol}.dat", []
        for index, (cache, b) in enumerate(panels):
            grid = []
            for di, d in enumerate(depths):
                for li, n in enumerate(lengths):
                    h = next((x for x in heat if x["cache"] == cache and x["budget"] == b and x["depth"] == d
                              and x["length"] == n), None)
                    grid.append(f"{li} {di} {'nan' if h is None else format(h['accuracy'], '.6g')}")
            blocks.append(f"# {cache} {b}\n" + "\n".join(grid))
            body.append(f"set title '{cache} {b}' noenhanced font ',8'")
            body.append(f"plot '{name}' index {index} using 1:2:(0.5):(0.5):3 with boxxyerror fs solid 1.0 noborder "
                        "lc palette")
        _write_atomic(os.path.join(out, name), "\n\n\n".join(blocks) + "\n")
        body.append("unset multiplot")
        _gnuplot(out, f"heatmap_{protocol}", "\n".join(body) + "\n",
                 size=f"{max(600, 220 * columns)},{max(400, 200 * rows)}")
    return []


def write(results, out):
    """Writes report.md, the figures and results.json (last) into directory `out` (created)."""
    closed_loop_report.write(results, out, markdown, figures)
