#!/usr/bin/env python3
"""Pins scripts/real_attention_study.py's transfer verdict: the acceptance (90% of the (layer,
budget, policy) cells within 0.05) is decided on the counts, and the printed share never rounds
a miss up to 90%.

    /usr/bin/python3 tests/scripts/transfer_summary_test.py
"""

import importlib.util
import os
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SPEC = importlib.util.spec_from_file_location("study", os.path.join(ROOT, "scripts", "real_attention_study.py"))
study = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(study)


def ratios_with_misses(layers, misses):
    """Real ratio 0.9 in every cell; the twin 0.1 off in the first `misses` cells, 0.01 off elsewhere."""
    real, twin = {}, {}
    cells = [(p, b, l) for b in study.TRANSFER_BUDGETS for p in study.TRANSFER_POLICIES for l in range(layers)]
    for i, cell in enumerate(cells):
        real[cell] = 0.9
        twin[cell] = 0.8 if i < misses else 0.89
    return {"real": real, "twin": twin}, len(cells)


class TransferVerdict(unittest.TestCase):
    def verdict_line(self, misses):
        summary, cells = ratios_with_misses(50, misses)  # 12 x 50 = 600 cells
        self.assertEqual(cells, 600)
        return [line for line in study.transfer_summary(summary).splitlines() if line.startswith("All (layer")][0]

    def test_exactly_ninety_percent_is_met(self):
        self.assertIn("540 of 600 within 0.05 (90.0%; the acceptance asks for 90%: met)", self.verdict_line(60))

    def test_just_below_is_not_met_and_not_rounded_up(self):
        line = self.verdict_line(62)  # 538 of 600 = 89.67%, which rounds to 90% without a decimal
        self.assertIn("538 of 600 within 0.05 (89.7%; the acceptance asks for 90%: not met)", line)


if __name__ == "__main__":
    unittest.main()
