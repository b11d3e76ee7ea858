"""Shared helpers of the parity tests (tests/parity/CMakeLists.txt runs each script).

The references (transformers, tokenizers, safetensors, torch) come from the tests' Python
environment; our programs are found through CTRAINER_BIN_<TARGET> environment variables.
"""
import os
import subprocess
import sys

try:
    import torch  # noqa: F401
    import transformers  # noqa: F401
except ImportError as error:  # a clear message instead of a traceback
    sys.exit(f"parity: {error}. Install the tests' references with scripts/install-deps.sh --tests "
             "and configure with -DCTRAINER_PYTHON=$(scripts/install-deps.sh --print-venv)/bin/python")

SOURCE_DIR = os.environ["CTRAINER_SOURCE_DIR"]
EXAMPLES_DATA = os.path.join(SOURCE_DIR, "examples", "data")


def binary(target):
    """Path of one of our programs (a DEPENDS target of ctrainer_add_parity_test)."""
    var = "CTRAINER_BIN_" + target.upper().replace("-", "_")
    if var not in os.environ:
        sys.exit(f"parity: {var} is not set: add {target} to DEPENDS in tests/parity/CMakeLists.txt")
    return os.environ[var]


def run(command, **kwargs):
    """Runs one of our programs; on failure prints its output and exits non-zero."""
    result = subprocess.run(command, capture_output=True, text=True, **kwargs)
    if result.returncode != 0:
        sys.exit(f"parity: {' '.join(map(str, command))} failed ({result.returncode}):\n"
                 f"{result.stdout}\n{result.stderr}")
    return result


def fail_if(differences, what, limit=20):
    """Prints up to `limit` differences and exits non-zero when there are any."""
    if differences:
        print(f"parity: {len(differences)} difference(s) in {what}:")
        for line in differences[:limit]:
            print("  " + line)
        sys.exit(1)
    print(f"parity: {what}: no difference")


class RowDataset(torch.utils.data.Dataset):
    """Examples as rows of named tensors sharing their first dimension (a TensorDataset for HF's
    Trainer, the same rows our programs read from a safetensors file)."""

    def __init__(self, rows):
        self.rows = rows

    def __len__(self):
        return len(self.rows["input_ids"])

    def __getitem__(self, i):
        return {key: value[i] for key, value in self.rows.items()}


# The GLUE text as our readers see it: benchmarks/reference/glue_text.py (torch-free, shared with
# the tokenizer benchmark).
sys.path.insert(0, os.path.join(SOURCE_DIR, "benchmarks", "reference"))
import glue_text  # noqa: E402

GLUE_TASKS, GLUE_SPLITS = glue_text.GLUE_TASKS, glue_text.GLUE_SPLITS


def read_glue_task(folder, split):
    """The (text_a, text_b) rows of examples/data/glue/<folder>/<split>.tsv; exits on a bad row."""
    try:
        return glue_text.read_glue_task(EXAMPLES_DATA, folder, split)
    except ValueError as error:
        sys.exit(f"parity: {error}")
