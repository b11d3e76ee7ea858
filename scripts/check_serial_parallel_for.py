#!/usr/bin/env python3
"""Fails when our sources call at::parallel_for or at::parallel_reduce.

Both are header templates whose threads come from an `#pragma omp parallel` that only a
translation unit compiled with -fopenmp sees; ours are not, so there they quietly run every range
on the calling thread (ctrainer::dropout's mask loop used one of two cores that way). Our loops
call ctrainer::parallel_for (core/parallel_for.h), compiled with OpenMP in one file.

Usage: check_serial_parallel_for.py [ROOT]  (default: this script's repository). One line per
call on stdout; exit status 0 (none), 1 (some) or 2 (usage).
"""
import pathlib
import re
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from check_layers import ALLOWED, SOURCE_SUFFIXES, run_check  # noqa: E402

# The layers plus the programs above them; comments are not calls.
FOLDERS = sorted(ALLOWED) + ["examples", "benchmarks", "tests", "fuzz"]
CALL = re.compile(r"\bat::(parallel_for|parallel_reduce)\s*\(")
COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.DOTALL)


def violations(root: pathlib.Path):
    found = []
    for folder in FOLDERS:
        for path in sorted((root / folder).rglob("*")):
            if path.suffix not in SOURCE_SUFFIXES or not path.is_file():
                continue
            text = path.read_text(encoding="utf-8", errors="replace")
            code = COMMENT.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)
            for match in CALL.finditer(code):
                line = code.count("\n", 0, match.start()) + 1
                found.append(f"{path.relative_to(root).as_posix()}:{line}: at::{match.group(1)} "
                             f"runs on the calling thread in our translation units (no -fopenmp); "
                             f"call ctrainer::parallel_for (core/parallel_for.h)")
    return found


def main(argv):
    return run_check(argv, "check_serial_parallel_for", violations,
                     "{count} call(s) of ATen's OpenMP templates (see core/parallel_for.h)")


if __name__ == "__main__":
    sys.exit(main(sys.argv))
