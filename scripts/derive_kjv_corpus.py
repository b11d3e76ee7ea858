#!/usr/bin/env python3
"""Turns the output of Debian's `bible -l100000 "Gen1:1-Rev22:21"` into examples/data/text/kjv.txt.

Usage: derive_kjv_corpus.py kjv_raw.txt > kjv.txt (see examples/data/text/README.md).
"""
import re
import sys


def derive(raw_lines):
    out = []
    for line in raw_lines:
        line = line.rstrip("\n")
        if not line.strip():
            continue
        verse = re.match(r"^\s+(\d+) (.*)$", line)
        if verse:
            out.append(verse.group(2).rstrip())
        else:  # a chapter heading such as "Genesis 1", after an empty line
            out.append("")
            out.append(line.strip())
    return "\n".join(out[1:]) + "\n"


if __name__ == "__main__":
    with open(sys.argv[1], encoding="ascii") as raw:
        sys.stdout.write(derive(raw))
