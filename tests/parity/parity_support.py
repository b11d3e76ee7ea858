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


# folder -> (text_a column, text_b column or None); CoLA has no header: its columns are
# source, label, original_label, sentence (glue_task.cpp's headerless_columns).
GLUE_TASKS = {
    "CoLA": ("sentence", None),
    "SST-2": ("sentence", None),
    "MRPC": ("#1 String", "#2 String"),
    "RTE": ("sentence1", "sentence2"),
    "STS-B": ("sentence1", "sentence2"),
    "WNLI": ("sentence1", "sentence2"),
}
COLA_COLUMNS = ["source", "label", "original_label", "sentence"]
GLUE_SPLITS = ("train", "dev")


def read_glue_task(folder, split):
    """The (text_a, text_b) rows of examples/data/glue/<folder>/<split>.tsv as our readers see them:
    UTF-8 (BOM dropped), one record per line, split on tabs, no quoting."""
    text_a, text_b = GLUE_TASKS[folder]
    path = os.path.join(EXAMPLES_DATA, "glue", folder, f"{split}.tsv")
    with open(path, encoding="utf-8-sig", newline="") as f:
        lines = f.read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    lines = [line[:-1] if line.endswith("\r") else line for line in lines]
    if folder == "CoLA":
        header = COLA_COLUMNS
    else:
        header, lines = lines[0].split("\t"), lines[1:]
    a, b = header.index(text_a), header.index(text_b) if text_b else None
    rows = []
    for number, line in enumerate(lines, start=1 if folder == "CoLA" else 2):
        fields = line.split("\t")
        if len(fields) != len(header):
            sys.exit(f"parity: {path}:{number}: {len(fields)} columns, expected {len(header)}")
        rows.append((fields[a], fields[b] if b is not None else None))
    return rows
