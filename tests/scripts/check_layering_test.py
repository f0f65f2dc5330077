#!/usr/bin/env python3
"""Tests of scripts/check_layering: the repository passes, and each kind of breach fails it.

Usage: check_layering_test.py REPOSITORY_ROOT
"""
import pathlib
import subprocess
import sys
import tempfile
import unittest

ROOT = pathlib.Path(sys.argv.pop(1)).resolve() if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parents[2]
CHECKER = ROOT / "scripts" / "check_layering"


def run(root):
    return subprocess.run([sys.executable, str(CHECKER), str(root)], capture_output=True, text=True)


def tree(files):
    """A temporary repository with `files` ({relative path: text})."""
    directory = tempfile.TemporaryDirectory()
    for rel, text in files.items():
        path = pathlib.Path(directory.name) / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return directory


class CheckLayeringTest(unittest.TestCase):
    def test_repository_is_layered(self):
        result = run(ROOT)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)

    def test_downward_include_passes(self):
        with tree({"greedy/eviction/policies/p.hpp": '#include "greedy/functions/f.hpp"\n#include "core/c.hpp"\n',
                   "greedy/functions/f.hpp": "", "core/c.hpp": ""}) as d:
            result = run(d)
            self.assertEqual(result.returncode, 0, result.stdout)

    def test_upward_include_fails(self):
        with tree({"greedy/functions/f.hpp": '#include "greedy/eviction/policies/p.hpp"\n',
                   "greedy/eviction/policies/p.hpp": ""}) as d:
            result = run(d)
            self.assertEqual(result.returncode, 1)
            self.assertIn("greedy/functions/f.hpp", result.stdout)
            self.assertIn("greedy/eviction/policies/p.hpp", result.stdout)

    def test_include_between_rooms_of_one_rank_fails(self):
        with tree({"sweep/s.cpp": '#include "proofs_checks/c.hpp"\n', "proofs_checks/c.hpp": ""}) as d:
            self.assertEqual(run(d).returncode, 1)

    def test_budgets_room_sits_between_evaluation_and_the_command_line(self):
        # The room of budgets may use the simulator below it ...
        with tree({"greedy/eviction/budgets/b.cpp": '#include "greedy/eviction/evaluation/e.hpp"\n',
                   "greedy/eviction/evaluation/e.hpp": ""}) as d:
            self.assertEqual(run(d).returncode, 0, run(d).stdout)
        # ... but neither the simulator nor the room itself may climb out of it.
        with tree({"greedy/eviction/evaluation/e.cpp": '#include "greedy/eviction/budgets/b.hpp"\n',
                   "greedy/eviction/budgets/b.hpp": ""}) as d:
            result = run(d)
            self.assertEqual(result.returncode, 1)
            self.assertIn("greedy/eviction/budgets/b.hpp", result.stdout)
        for upper in ("kernels/k.hpp", "cli/c.hpp", "sweep/s.hpp"):
            with tree({"greedy/eviction/budgets/b.cpp": f'#include "{upper}"\n', upper: ""}) as d:
                result = run(d)
                self.assertEqual(result.returncode, 1, upper)
                self.assertIn("greedy/eviction/budgets/b.cpp", result.stdout)

    def test_core_including_a_module_fails(self):
        with tree({"core/c.cpp": '  #  include "greedy/functions/f.hpp"\n', "greedy/functions/f.hpp": ""}) as d:
            self.assertEqual(run(d).returncode, 1)

    def test_file_outside_every_room_fails(self):
        with tree({"greedy/loose.hpp": ""}) as d:
            result = run(d)
            self.assertEqual(result.returncode, 1)
            self.assertIn("greedy/loose.hpp", result.stdout)


if __name__ == "__main__":
    unittest.main()
