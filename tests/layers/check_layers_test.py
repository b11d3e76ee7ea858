#!/usr/bin/env python3
"""scripts/check_layers.py: the repository passes, and every kind of upward include fails."""
import pathlib
import subprocess
import sys
import tempfile
import unittest

REPO = pathlib.Path(__file__).resolve().parents[2]
CHECKER = REPO / "scripts" / "check_layers.py"


def run_checker(root):
    return subprocess.run([sys.executable, str(CHECKER), str(root)], capture_output=True,
                          text=True, check=False)


class FakeTree:
    """A minimal repository tree: files given as {relative path: text}."""

    def __init__(self, files):
        self._dir = tempfile.TemporaryDirectory()
        self.root = pathlib.Path(self._dir.name)
        (self.root / "trainer").mkdir()
        for name, text in files.items():
            path = self.root / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)

    def __enter__(self):
        return self.root

    def __exit__(self, *exc):
        self._dir.cleanup()


class CheckLayersTest(unittest.TestCase):
    def test_the_repository_has_no_upward_include(self):
        result = run_checker(REPO)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)

    def test_downward_and_sideways_includes_pass(self):
        files = {
            "trainer/core/errors.h": "#include <string>\n",
            "trainer/core/logging.h": "#include <ctrainer/trainer/core/errors.h>\n",
            "integrations/safetensors.h": "#include <ctrainer/trainer/core/errors.h>\n",
            "models/bert/bert.h": "#include <ctrainer/integrations/safetensors.h>\n"
                                  '#include "bert_config.h"\n',
            "models/bert/bert_config.h": "#include <torch/torch.h>\n",
            "distributed/ddp.h": "#include <ctrainer/trainer/core/logging.h>\n",
            "trainer/trainer.h": "#include <ctrainer/distributed/ddp.h>\n"
                                 "#include <ctrainer/models/bert/bert.h>\n",
            "examples/run/run.cpp": "#include <ctrainer/trainer/trainer.h>\n",
            "benchmarks/bench.cpp": '#include "../examples/run/run.cpp"\n',
            "tests/anything_test.cpp": "#include <ctrainer/benchmarks/bench.cpp>\n",
        }
        with FakeTree(files) as root:
            result = run_checker(root)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertEqual(result.stdout, "")

    def test_each_upward_include_is_reported_with_file_and_line(self):
        cases = {
            # the basics include nothing above them
            "trainer/core/batch.h": ("\n#include <ctrainer/trainer/training_args.h>\n",
                                     "trainer/core/batch.h:2: includes ctrainer/trainer/"
                                     "training_args.h (trainer)"),
            # a strategy sees modules, not models/
            "distributed/strategy.h": ("#include <ctrainer/models/model.h>\n",
                                       "distributed/strategy.h:1: includes ctrainer/models/"
                                       "model.h (models)"),
            "models/model.h": ("#  include <ctrainer/distributed/process_group.h>\n",
                               "models/model.h:1: includes ctrainer/distributed/"
                               "process_group.h (distributed)"),
            "integrations/report.h": ("#include <ctrainer/trainer/callbacks/cb.h>\n",
                                      "integrations/report.h:1: includes ctrainer/trainer/"
                                      "callbacks/cb.h (trainer)"),
            "trainer/trainer.cpp": ("#include <ctrainer/examples/run_glue/glue.h>\n",
                                    "trainer/trainer.cpp:1: includes ctrainer/examples/"
                                    "run_glue/glue.h (examples)"),
            # a quoted include is resolved next to the including file
            "trainer/core/grad_clip.cpp": ('#include "../device.h"\n',
                                           "trainer/core/grad_clip.cpp:1: includes ../device.h "
                                           "(trainer)"),
        }
        for name, (text, expected) in cases.items():
            with self.subTest(name=name):
                with FakeTree({name: text}) as root:
                    result = run_checker(root)
                self.assertEqual(result.returncode, 1, result.stdout + result.stderr)
                self.assertIn(expected, result.stdout)
                self.assertEqual(len(result.stdout.splitlines()), 1, result.stdout)

    def test_a_root_without_trainer_is_a_usage_error(self):
        with tempfile.TemporaryDirectory() as empty:
            result = run_checker(empty)
        self.assertEqual(result.returncode, 2)
        self.assertIn("pass the repository root", result.stderr)


if __name__ == "__main__":
    unittest.main()
