#!/usr/bin/env python3
"""scripts/check_include_cycles.py: the repository passes; a cycle between folders fails."""
import pathlib
import sys
import unittest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from fake_tree import REPO, run_checker as run_script  # noqa: E402

CHECKER = REPO / "scripts" / "check_include_cycles.py"


def run_checker(files):
    """The checker on a fake tree ({relative path: text}), or on the repository (None)."""
    return run_script(CHECKER, files)


class CheckIncludeCyclesTest(unittest.TestCase):
    def test_the_repository_has_no_cycle_between_folders(self):
        result = run_checker(None)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)

    def test_the_cycle_issue_31_removed_is_found(self):
        # training_args.cpp -> sharding_config.h -> training_args.h: a cycle of two units.
        result = run_checker({
            "trainer/args/training_args.h": "#pragma once\n",
            "trainer/args/training_args.cpp":
                "#include <ctrainer/trainer/args/training_args.h>\n"
                "#include <ctrainer/trainer/sharding/sharding_config.h>\n",
            "trainer/sharding/sharding_config.h":
                "#pragma once\n#include <ctrainer/trainer/args/training_args.h>\n",
        })
        self.assertEqual(result.returncode, 1, result.stdout + result.stderr)
        self.assertIn("trainer/args/training_args (trainer/args/training_args.cpp:2) -> "
                      "trainer/sharding/sharding_config (trainer/sharding/sharding_config.h:2) -> "
                      "trainer/args/training_args", result.stdout)

    def test_a_longer_cycle_through_quoted_includes_is_found(self):
        result = run_checker({
            "trainer/a/one.h": '#include "../b/two.h"\n',
            "trainer/b/two.h": '#include "ctrainer/trainer/c/three.h"\n',
            "trainer/c/three.h": "#include <ctrainer/trainer/a/one.h>\n",
        })
        self.assertEqual(result.returncode, 1, result.stdout + result.stderr)
        self.assertIn("trainer/a/one", result.stdout)
        self.assertIn("trainer/c/three", result.stdout)

    def test_a_cycle_inside_one_folder_and_a_one_way_include_pass(self):
        result = run_checker({
            "trainer/args/parser.h": "#pragma once\n",
            "trainer/args/parser.cpp": "#include <ctrainer/trainer/args/codec.h>\n",
            "trainer/args/codec.h": "#include <ctrainer/trainer/args/parser.h>\n",
            "trainer/optim/scheduler.h": "#include <ctrainer/trainer/args/parser.h>\n",
        })
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)


if __name__ == "__main__":
    unittest.main()
