"""The closed loop's report: results.json (every number of the report, with provenance), report.md
and figures (gnuplot: perplexity against the budget per cache, Delta log-perplexity against the mean
retained-mass ratio to the optimum). Every file is written under a temporary name and renamed, and
results.json last, so a directory with results.json is complete."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess


COLOURS = ("#000000", "#e41a1c", "#377eb8", "#4daf4a", "#984ea3", "#ff7f00", "#a65628",
           "#f781bf", "#999999", "#66c2a5", "#bcbd22", "#17becf")
POINT_TYPES = (7, 5, 9, 11, 13, 1, 2, 3, 4, 6, 8, 10)


def spearman(points):
    """{"rho", "p_value", "points"} of Spearman's correlation over (x, y) points, or None for fewer
    than 3 points or a constant coordinate."""
    from scipy.stats import spearmanr

    if len(points) < 3:
        return None
    xs, ys = zip(*points)
    if len(set(xs)) < 2 or len(set(ys)) < 2:
        return None
    rho, p = spearmanr(xs, ys)
    return {"rho": float(rho), "p_value": float(p), "points": len(points)}


def analysis(runs):
    """Spearman of mean retained mass / OPT against Delta log-perplexity over (cache, budget)
    points, overall and per budget; per budget the best policy by perplexity and how far it trails
    opt; and the mass-order check (LayerRecord.order_violations, per layer and KV head)."""
    def point(run):
        return (run["mean_ratio_to_opt"], run["delta_log_perplexity"])

    usable = [r for r in runs if r["mean_ratio_to_opt"] is not None]
    budgets = sorted({r["budget_size"] for r in runs})
    per_budget = {}
    for k in budgets:
        cell = [r for r in runs if r["budget_size"] == k]
        policies = [r for r in cell if r["kind"] == "policy"]
        best = min(policies, key=lambda r: r["perplexity"]) if policies else None
        opt = next((r for r in cell if r["kind"] == "opt"), None)
        per_budget[str(k)] = {
            "spearman_mass_vs_delta_log_perplexity":
                spearman([point(r) for r in usable if r["budget_size"] == k]),
            "best_policy": best and best["policy"],
            "best_policy_perplexity": best and best["perplexity"],
            "opt_perplexity": opt and opt["perplexity"],
            "best_policy_minus_opt_log_perplexity":
                (best["delta_log_perplexity"] - opt["delta_log_perplexity"]) if best and opt else None,
            "opt_beats_every_policy_in_perplexity":
                (all(opt["perplexity"] <= r["perplexity"] for r in policies) if opt and policies
                 else None),
        }
    violations = sum(r["mass_order_violations"] for r in runs)
    return {
        "spearman_mass_vs_delta_log_perplexity": spearman([point(r) for r in usable]),
        "per_budget": per_budget,
        "mass_order": {"outcome": "held" if violations == 0 else "violated",
                       "violations": violations,
                       "claim": "per layer and KV head: opt <= topk, policy mass <= opt where the "
                                "policy compressed the head, opt's replayed mass = opt"},
    }


def _fmt(value, digits=4):
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    return str(value)


def markdown(results):
    s = results["settings"]
    lines = [f"# Closed loop: {s['model']} on {s['tokens']} tokens of {s['text_file']}", "",
             f"Full cache: perplexity {results['full']['perplexity']:.4f}. Evicting layers: "
             f"{s['layers']}. Model sha256 {s['gguf_sha256']}, text sha256 {s['text_sha256']}, "
             f"token ids sha256 {s['token_ids_sha256']}.", ""]
    a = results["analysis"]
    rho = a["spearman_mass_vs_delta_log_perplexity"]
    lines += [f"Mass order (policy <= opt <= topk per layer and KV head): "
              f"**{a['mass_order']['outcome']}** ({a['mass_order']['violations']} violations).",
              "",
              "Spearman rho of mean mass / OPT against Delta log-perplexity, all points: "
              + (f"{rho['rho']:.3f} (p = {rho['p_value']:.2g}, {rho['points']} points)" if rho
                 else "n/a"), ""]
    for k, cell in a["per_budget"].items():
        rows = [r for r in results["runs"] if str(r["budget_size"]) == k]
        rho = cell["spearman_mass_vs_delta_log_perplexity"]
        lines += [f"## Budget k = {k} (given as {rows[0]['budget']})", "",
                  "| cache | perplexity | Δ log-ppl | mean KL | top-1 agreement | mean mass / OPT |",
                  "|---|---|---|---|---|---|"]
        for r in sorted(rows, key=lambda r: r["perplexity"]):
            lines.append(f"| {r['policy']} | {r['perplexity']:.4f} | "
                         f"{r['delta_log_perplexity']:.4f} | {r['mean_kl']:.4f} | "
                         f"{r['top1_agreement']:.4f} | {_fmt(r['mean_ratio_to_opt'])} |")
        lines += ["", f"Spearman rho (mass / OPT vs Δ log-ppl): "
                  + (f"{rho['rho']:.3f} over {rho['points']} points" if rho else "n/a")
                  + f"; best policy {cell['best_policy']} "
                  f"(perplexity {_fmt(cell['best_policy_perplexity'])}), opt "
                  f"{_fmt(cell['opt_perplexity'])}; best policy − opt in log-perplexity: "
                  f"{_fmt(cell['best_policy_minus_opt_log_perplexity'])}.", ""]
    lines += ["Figures: perplexity.svg (perplexity against the budget), mass_vs_perplexity.svg "
              "(Δ log-perplexity against the mean mass / OPT, one point per (cache, budget)).", ""]
    return "\n".join(lines)


def _write_atomic(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as stream:
        stream.write(text)
    os.replace(tmp, path)


def figures(results, out):
    """perplexity.{png,svg} and mass_vs_perplexity.{png,svg} through gnuplot (skipped, with a
    note in the returned list, when gnuplot is missing)."""
    if shutil.which("gnuplot") is None:
        return ["gnuplot not found: no figures"]
    runs = results["runs"]
    labels = list(dict.fromkeys(r["policy"] for r in runs))
    data = []
    for index, label in enumerate(labels):
        data.append(f"# {label}")
        for r in sorted((r for r in runs if r["policy"] == label), key=lambda r: r["budget_size"]):
            data.append(f"{r['budget_size']} {r['perplexity']:.6g} "
                        f"{'nan' if r['mean_ratio_to_opt'] is None else format(r['mean_ratio_to_opt'], '.6g')} "
                        f"{r['delta_log_perplexity']:.6g}")
        data += ["", ""]
    _write_atomic(os.path.join(out, "closed_loop.dat"), "\n".join(data) + "\n")
    full = results["full"]["perplexity"]

    def style(i):  # a distinct colour and point type per cache, however many there are
        return f"lc rgb '{COLOURS[i % len(COLOURS)]}' pt {POINT_TYPES[i % len(POINT_TYPES)]}"

    ppl = ", ".join(f"'closed_loop.dat' index {i} using 1:2 with linespoints lw 2 {style(i)} "
                    f"title '{label}'" for i, label in enumerate(labels))
    mass = ", ".join(f"'closed_loop.dat' index {i} using 3:4 with points ps 1.4 {style(i)} "
                     f"title '{label}'" for i, label in enumerate(labels))
    for name, body in (
            ("perplexity", "set title 'perplexity against the cache budget' noenhanced\n"
                           "set xlabel 'budget k (tokens)'\nset ylabel 'perplexity'\n"
                           "set logscale xy\nset autoscale xfix\nset offsets graph 0.04, graph 0.04\n"
                           f"plot {ppl}, {full} with lines dt 2 lc rgb 'black' title 'full cache'\n"),
            ("mass_vs_perplexity", "set title 'Δ log-perplexity against mean retained mass / OPT' "
                                   "noenhanced\nset xlabel 'mean over compressed layers of mass / OPT'"
                                   "\nset ylabel 'log perplexity − log perplexity (full)'\n"
                                   f"plot {mass}\n")):
        for terminal, ext in (("pngcairo size 1000,560", "png"), ("svg size 1000,560", "svg")):
            script = (f"set terminal {terminal}\nset output '{name}.{ext}.tmp'\nset key outside "
                      f"right noenhanced\nset grid\n{body}")
            subprocess.run(["gnuplot"], input=script, text=True, cwd=out, check=True,
                           capture_output=True)
            os.replace(os.path.join(out, f"{name}.{ext}.tmp"), os.path.join(out, f"{name}.{ext}"))
    return []


def output_problem(out):
    """Why write() could not write its report into directory `out`, in a few words, or None: what
    a command checks before any model work. `out` or the nearest existing folder above it must be
    a directory where a file can be created (tried: a probe file, and any missing folders, are
    made and removed again, so nothing stays behind)."""
    import tempfile

    path = os.path.abspath(out)
    missing = []
    while not os.path.exists(path):
        missing.append(path)
        path = os.path.dirname(path)
    if not os.path.isdir(path):
        return f"{path} is not a directory"
    created = []
    try:
        for folder in reversed(missing):
            os.mkdir(folder)
            created.append(folder)
        descriptor, probe = tempfile.mkstemp(dir=out, prefix=".closed_loop_probe")
        os.close(descriptor)
        os.remove(probe)
    except OSError as error:
        return f"cannot write a report there ({error.strerror or error})"
    finally:
        for folder in reversed(created):
            os.rmdir(folder)
    return None


def write(results, out, markdown_of=None, figures_of=None):
    """Writes report.md, the figures and results.json (last) into directory `out` (created):
    markdown_of(results) and figures_of(results, out) (default this module's; the task loop's
    report passes its own)."""
    os.makedirs(out, exist_ok=True)
    final = os.path.join(out, "results.json")
    if os.path.exists(final):
        os.remove(final)  # a directory with results.json is a complete report
    results["notes"] = (figures_of or figures)(results, out)
    _write_atomic(os.path.join(out, "report.md"), (markdown_of or markdown)(results))
    _write_atomic(final, json.dumps(results, indent=1, allow_nan=False,
                                    default=lambda x: None if isinstance(x, float) and
                                    not math.isfinite(x) else str(x)) + "\n")
