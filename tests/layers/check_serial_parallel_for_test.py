#!/usr/bin/env python3
"""scripts/check_serial_parallel_for.py: the repository passes; a call of at::parallel_for in a
layer or a test fails; comments and ctrainer::parallel_for pass."""
import pathlib
import sys
import unittest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from fake_tree import REPO, run_checker as run_script  # noqa: E402

CHECKER = REPO / "scripts" / "check_serial_parallel_for.py"


def run_checker(files):
    """The checker on a fake tree ({relative path: text}), or on the repository (None)."""
    return run_script(CHECKER, files)


class CheckSerialParallelForTest(unittest.TestCase):
    def test_the_repository_calls_no_aten_openmp_template(self):
        result = run_checker(None)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)

    def test_calls_in_a_layer_and_a_test_are_found(self):
        result = run_checker({
            "models/dropout.cpp": "void f() {\n  at::parallel_for(0, n, 1, body);\n}\n",
            "tests/unit/x_test.cpp": "auto s = at::parallel_reduce (0, n, 1, 0.0, f, g);\n",
        })
        self.assertEqual(result.returncode, 1, result.stdout + result.stderr)
        self.assertIn("models/dropout.cpp:2: at::parallel_for", result.stdout)
        self.assertIn("tests/unit/x_test.cpp:1: at::parallel_reduce", result.stdout)

    def test_comments_and_our_own_parallel_for_pass(self):
        result = run_checker({
            "core/parallel_for.h": "// Why not at::parallel_for(...): see below.\n"
                                   "/* at::parallel_for(0, n, 1, f) */\n",
            "models/a.cpp": "ctrainer::parallel_for(0, n, 1, body);\n",
        })
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)


if __name__ == "__main__":
    unittest.main()
