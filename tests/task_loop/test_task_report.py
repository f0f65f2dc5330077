"""task_report's heatmap draws one coloured cell per (length, depth) of every panel, also on a grid
with a single length (the common needle test at one context size), where an image plot draws
nothing: the cells' colour in the SVG follows the accuracy they show."""

import re
import shutil

import pytest

from subevict import task_report

# A shape filled with the palette's colour at accuracy 1 (task_report's palette, 1 '#2166ac').
BLUE_FILL = re.compile(r"fill\s*=\s*['\"]rgb\(\s*33,\s*102,\s*172\)")


def results(accuracy_of_b):
    """Aggregates of two caches at one budget, one length, two depths: cache a answers at depth 0.1
    only, cache b at both depths with `accuracy_of_b`."""
    def cell(cache, depth, accuracy):
        return {"protocol": "prefill", "cache": cache, "budget": "0.1", "depth": depth, "length": 4096,
                "samples": 1, "answered": int(accuracy), "accuracy": accuracy, "interval": [0.0, 1.0]}

    heatmap = [cell("a", 0.1, 1.0), cell("a", 0.9, 0.0), cell("b", 0.1, accuracy_of_b), cell("b", 0.9, accuracy_of_b)]
    per_cache = [dict(cell(c, None, 0.5), task="all") for c in ("a", "b")]
    return {"aggregates": {"per_cache": per_cache, "heatmap": heatmap, "full_model": []}, "settings": {}}


def blue_cells(tmp_path, accuracy_of_b):
    out = tmp_path / str(accuracy_of_b)
    out.mkdir()
    assert task_report.figures(results(accuracy_of_b), str(out)) == []
    return len(BLUE_FILL.findall((out / "heatmap_prefill.svg").read_text()))


def test_each_heatmap_cell_is_drawn_in_the_colour_of_its_accuracy(tmp_path):
    if shutil.which("gnuplot") is None:
        pytest.skip("gnuplot is not installed")
    # Cache b's two cells turn from red (0) to blue (1): exactly two more blue fills.
    assert blue_cells(tmp_path, 1.0) - blue_cells(tmp_path, 0.0) == 2
