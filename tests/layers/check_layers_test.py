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
            "core/errors.h": "#include <string>\n",
            "core/logging.h": "#include <ctrainer/core/errors.h>\n",
            "integrations/safetensors.h": "#include <ctrainer/core/errors.h>\n",
            "models/bert/bert.h": "#include <ctrainer/integrations/safetensors.h>\n"
                                  '#include "bert_config.h"\n'
                                  '#include "../model.h"\n'
                                  "#include <ctrainer/models/bert/../model.h>\n",
            "models/bert/bert_config.h": "#include <torch/torch.h>\n#include_next <limits.h>\n",
            "models/model.h": '#include "ctrainer/core/errors.h"\n',
            "models/bert/bert_impl.inl": "#include <ctrainer/core/logging.h>\n",
            "distributed/ddp.h": "#include <ctrainer/core/logging.h>\n",
            "trainer/trainer.h": "#include <ctrainer/distributed/ddp.h>\n"
                                 "#include <ctrainer/models/bert/bert.h>\n",
            "examples/run/run.cpp": "#include <ctrainer/trainer/trainer.h>\n",
            "benchmarks/bench.cpp": '#include "../examples/run/run.cpp"\n',
            "tests/anything_test.cpp": "#include <ctrainer/benchmarks/bench.cpp>\n",
            "fuzz/anything_fuzzer.cpp": "#include <ctrainer/examples/run/run.cpp>\n",
            "scripts/tool.py": "print()\n",
            "build-fuzz/include/x.cpp": "#include <ctrainer/trainer/trainer.h>\n",
        }
        with FakeTree(files) as root:
            result = run_checker(root)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertEqual(result.stdout, "")

    def test_each_upward_include_is_reported_with_file_and_line(self):
        cases = {
            # the basics include nothing above them
            "core/batch.h": ("\n#include <ctrainer/trainer/args/training_args.h>\n",
                             "core/batch.h:2: includes ctrainer/trainer/args/training_args.h "
                             "(trainer)"),
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
            "core/grad_clip.cpp": ('#include "../trainer/device.h"\n',
                                   "core/grad_clip.cpp:1: includes ../trainer/device.h "
                                   "(trainer)"),
            # the five spellings that passed the first version of the check:
            # 1. `..` inside an angle include climbs out of an allowed folder
            "models/bert/bert.h": ("#include <ctrainer/models/../trainer/trainer.h>\n",
                                   "models/bert/bert.h:1: includes ctrainer/models/../trainer/"
                                   "trainer.h (trainer)"),
            # 2. a quoted ctrainer/ path, found through the include directory
            "integrations/tb.cpp": ('#include "ctrainer/trainer/trainer_state.h"\n',
                                    "integrations/tb.cpp:1: includes ctrainer/trainer/"
                                    "trainer_state.h (trainer)"),
            # 3. header-like files with other suffixes
            "models/bert/bert_impl.ipp": ("#include <ctrainer/trainer/trainer.h>\n",
                                          "models/bert/bert_impl.ipp:1: includes ctrainer/"
                                          "trainer/trainer.h (trainer)"),
            "distributed/ring.inl": ("#include <ctrainer/trainer/trainer.h>\n",
                                     "distributed/ring.inl:1: includes"),
            "core/json.tpp": ("#include <ctrainer/models/model.h>\n", "core/json.tpp:1: includes"),
            "integrations/x.hh": ("#include <ctrainer/models/model.h>\n",
                                  "integrations/x.hh:1: includes"),
            # 4. #include_next (and #import)
            "core/compat.h": ("#include_next <ctrainer/trainer/trainer.h>\n",
                              "core/compat.h:1: includes ctrainer/trainer/trainer.h (trainer)"),
            "core/compat2.h": ("#import <ctrainer/trainer/trainer.h>\n",
                               "core/compat2.h:1: includes ctrainer/trainer/trainer.h (trainer)"),
            # 5. a new top-level folder is no hiding place
            "plugins/hook.cpp": ("#include <ctrainer/trainer/trainer.h>\n",
                                 "plugins/: a top-level folder with C++ sources that is no layer"),
            # and a computed include cannot be checked at all
            "models/gen.h": ("#include MODEL_HEADER\n",
                             "models/gen.h:1: #include MODEL_HEADER names no file literally"),
        }
        for name, (text, expected) in cases.items():
            with self.subTest(name=name):
                with FakeTree({name: text}) as root:
                    result = run_checker(root)
                self.assertEqual(result.returncode, 1, result.stdout + result.stderr)
                self.assertIn(expected, result.stdout)
                self.assertEqual(len(result.stdout.splitlines()), 1, result.stdout)

    def test_the_arguments_room_includes_no_other_room_of_trainer(self):
        with FakeTree({
            "trainer/args/training_args.cpp":
                "#include <ctrainer/trainer/args/training_args.h>\n"
                "#include <ctrainer/distributed/fsdp_config.h>\n"
                "#include <ctrainer/trainer/sharding/sharding_config.h>\n",
            "trainer/sharding/sharding_config.cpp": "#include <ctrainer/trainer/args/training_args.h>\n",
        }) as root:
            result = run_checker(root)
        self.assertEqual(result.returncode, 1, result.stdout + result.stderr)
        self.assertEqual(result.stdout.splitlines(), [
            "trainer/args/training_args.cpp:3: includes ctrainer/trainer/sharding/sharding_config.h, "
            "outside trainer/args/: the arguments are a leaf of trainer/ (parser, TrainingArguments, "
            "option specs): move what they need into a lower layer, or the check into its room"])

    def test_a_root_without_trainer_is_a_usage_error(self):
        with tempfile.TemporaryDirectory() as empty:
            result = run_checker(empty)
        self.assertEqual(result.returncode, 2)
        self.assertIn("pass the repository root", result.stderr)


if __name__ == "__main__":
    unittest.main()
