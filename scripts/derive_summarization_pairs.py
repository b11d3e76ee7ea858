#!/usr/bin/env python3
"""Derives examples/data/seq2seq/summarization/{train,validation,test}.json and validation.csv:
(text, summary) pairs from the Linux man-pages project's manual pages as Debian 12 ships them
(packages manpages and manpages-dev 6.03-2), keeping only the pages under the one licence
Linux-man-pages-copyleft by both accounts: the page's source carries
"SPDX-License-Identifier: Linux-man-pages-copyleft" AND Debian's copyright file
(usr/share/doc/manpages/copyright, machine-readable: the last "Files:" stanza matching the page
counts) gives it exactly "License: Linux-man-pages-copyleft" (see examples/data/seq2seq/README.md).

The demo task: write a man page's one-line NAME description from the opening of its DESCRIPTION.
  text    = the first prose paragraph(s) of the DESCRIPTION section, as groff renders them, each
            paragraph's whitespace collapsed to single spaces and paragraphs joined by one space;
            paragraphs are taken while they are plain prose at the section's base indent (no
            list, bullet, code block or table; a subsection heading that opens the section is
            dropped, the next one ends the text), until the text reaches MIN_TEXT characters;
            one that would take it past MAX_TEXT is left out, and a first paragraph longer than
            MAX_TEXT is cut after its last full sentence that fits (pages where nothing fits,
            or whose text is under 40 characters, are skipped);
  summary = the NAME line after its " - " ("read - read from a file descriptor" gives
            "read from a file descriptor").
Pages that are only a ".so" link to another page, or that have no DESCRIPTION, are skipped; a
text already taken (by an earlier page in sorted path order) is not taken again.

Each page is rendered with groff 1.22.4 (Debian package groff-base 1.22.4-10):
    groff -k -K utf-8 -t -man -Tutf8 -rLL=4000n -rHY=0 -P-cbou < page
(a very long line length, so that a paragraph is one line; no hyphenation, no overstriking;
the same as `man -P cat` followed by `col -b`, without the line breaking).

The pairs, sorted by page path, are shuffled with random.Random(SEED) and split 85 / 7.5 / 7.5 %
into train / validation / test. Output: JSON lines {"text": ..., "summary": ...} as HF's
run_summarization reads them, plus validation.csv (header text,summary, written by Python's csv
module: RFC 4180 quoting, CRLF line ends), and ACKNOWLEDGEMENTS.txt: the licence's permission
notice and, for every page used, the copyright and author lines of its source, as the licence asks
of processed versions ("must acknowledge the copyright and authors of this work").

Usage (stdlib + groff):
    python scripts/derive_summarization_pairs.py [--root /] [--out examples/data/seq2seq/summarization]
--root "/" reads the installed packages' pages (the list comes from `dpkg-query -L manpages
manpages-dev`); any other --root is a folder into which manpages_*.deb and manpages-dev_*.deb were
unpacked with `dpkg-deb -x`, and every usr/share/man/man*/ page under it is read.
Running it again with the same packages and groff writes byte-identical files.
"""
import argparse
import csv
import glob
import gzip
import json
import os
import random
import re
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_OUT = os.path.join(ROOT, "examples", "data", "seq2seq", "summarization")
LICENSE = "Linux-man-pages-copyleft"
SEED = 1234
MIN_TEXT = 300
MAX_TEXT = 1200
GROFF = ["groff", "-k", "-K", "utf-8", "-t", "-man", "-Tutf8", "-rLL=4000n", "-rHY=0", "-P-cbou"]
BASE_INDENT = 7
SUBSECTION_INDENT = 3


def page_paths(root):
    if os.path.abspath(root) == "/":
        listed = subprocess.run(["dpkg-query", "-L", "manpages", "manpages-dev"], check=True,
                                capture_output=True, text=True).stdout.split("\n")
        paths = [p for p in listed if re.match(r"^/usr/share/man/man\d/[^/]+\.gz$", p)]
    else:
        paths = glob.glob(os.path.join(root, "usr", "share", "man", "man*", "*.gz"))
    return sorted(p for p in paths if not os.path.islink(p))


def licence_of(source):
    m = re.search(r"^\.\\\"\s*SPDX-License-Identifier:\s*(\S+)", source, re.M)
    return m.group(1) if m else None


def debian_licences(root):
    """Debian's machine-readable copyright file of manpages (manpages-dev ships the same one) as
    [(file patterns, licence)], in file order: for a file, the last stanza matching it counts."""
    path = os.path.join(root, "usr", "share", "doc", "manpages", "copyright")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    stanzas = []
    for paragraph in text.split("\n\n"):
        files = re.search(r"^Files:(.*?)(?=^\S|\Z)", paragraph, re.S | re.M)
        licence = re.search(r"^License: *(.*)$", paragraph, re.M)
        if files and licence:
            patterns = [re.compile(re.escape(glob_).replace(r"\*", ".*").replace(r"\?", ".") + r"\Z")
                        for glob_ in files.group(1).split()]
            stanzas.append((patterns, licence.group(1).strip()))
    return stanzas


def debian_licence(stanzas, page_path):
    """The licence Debian's copyright file gives the page: usr/share/man/man3/aiocb.3type.gz is
    man3type/aiocb.3type in the man-pages source tree."""
    name = os.path.basename(page_path)[:-len(".gz")]
    source_path = "man" + name.rsplit(".", 1)[1] + "/" + name
    licence = None
    for patterns, stanza_licence in stanzas:
        if any(p.match(source_path) for p in patterns):
            licence = stanza_licence
    return licence


def copyright_header(source):
    """The page's leading comment lines before its SPDX line: its copyright and author notices."""
    lines = source.split("\n")
    end = next(i for i, line in enumerate(lines) if "SPDX-License-Identifier" in line)
    head = [re.sub(r'^\.\\"\s?', "", line).rstrip() for line in lines[:end]
            if line.startswith('.\\"')]
    return [line for line in head if line.strip()]


def render(source):
    out = subprocess.run(GROFF, input=source.encode("utf-8"), check=True, capture_output=True,
                         env=dict(os.environ, LC_ALL="C.UTF-8")).stdout.decode("utf-8")
    return re.sub(".\b", "", out)  # any overstrike left


def sections(rendered):
    """Heading -> list of lines, headings being the lines that start in column 0."""
    result, current = {}, None
    for line in rendered.split("\n")[1:]:  # the first line is the page header
        if line and not line[0].isspace():
            current = line.strip()
            result.setdefault(current, [])
        elif current is not None:
            result[current].append(line.rstrip())
    return result


def blocks(lines):
    block = []
    for line in lines + [""]:
        if line.strip():
            block.append(line)
        elif block:
            yield block
            block = []


def indent(line):
    return len(line) - len(line.lstrip(" "))


def clean(text):
    return " ".join(text.replace("\u00ad", "").split())


def cut_at_sentence(text, limit):
    cut = [m.end() for m in re.finditer(r"[.!?](?=\s)", text[:limit + 1])]
    return text[:cut[-1]] if cut else ""


def description_text(lines):
    paragraphs = []
    for block in blocks(lines):
        if not paragraphs and len(block) > 1 and indent(block[0]) == SUBSECTION_INDENT:
            block = block[1:]  # DESCRIPTION opens with a subsection: take its heading away
        if len(block) != 1 or indent(block[0]) != BASE_INDENT or block[0].lstrip()[0] in "\u2022*-":
            break  # a (bulleted) list, a code example or a table: prose is over
        paragraphs.append(clean(block[0]))
    text = ""
    for paragraph in paragraphs:
        candidate = (text + " " + paragraph).strip()
        if len(candidate) > MAX_TEXT:
            if not text:
                text = cut_at_sentence(paragraph, MAX_TEXT)
            break
        text = candidate
        if len(text) >= MIN_TEXT:
            break
    return text


def derive(root):
    pairs, seen, skipped = [], set(), {}
    stanzas = debian_licences(root)
    for path in page_paths(root):
        with gzip.open(path, "rt", encoding="utf-8") as f:
            source = f.read()
        if licence_of(source) != LICENSE:
            skipped["SPDX line names another licence or none"] = \
                skipped.get("SPDX line names another licence or none", 0) + 1
            continue
        if debian_licence(stanzas, path) != LICENSE:
            skipped["Debian's copyright file says otherwise"] = \
                skipped.get("Debian's copyright file says otherwise", 0) + 1
            continue
        if re.match(r"^\.so\s", source.lstrip(), re.M) and len(source.split("\n")) < 5:
            skipped[".so link"] = skipped.get(".so link", 0) + 1
            continue
        parts = sections(render(source))
        name = clean(" ".join(parts.get("NAME", [])))
        summary = name.split(" - ", 1)[1].strip() if " - " in name else ""
        text = description_text(parts.get("DESCRIPTION", []))
        if not summary or len(text) < 40:
            skipped["no NAME/DESCRIPTION prose"] = skipped.get("no NAME/DESCRIPTION prose", 0) + 1
            continue
        if text in seen:
            skipped["duplicate text"] = skipped.get("duplicate text", 0) + 1
            continue
        seen.add(text)
        pairs.append((os.path.relpath(path, root), text, summary, copyright_header(source)))
    return pairs, skipped


def split(pairs):
    pairs = sorted(pairs)
    random.Random(SEED).shuffle(pairs)
    n_val = round(len(pairs) * 0.075)
    n_test = round(len(pairs) * 0.075)
    return {"train": pairs[n_val + n_test:], "validation": pairs[:n_val],
            "test": pairs[n_val:n_val + n_test]}


NOTICE = """\
The texts and summaries in train.json, validation.json, validation.csv and test.json are excerpts
of the manual pages listed below, from the Linux man-pages project (https://www.kernel.org/pub/linux/docs/man-pages/)
as Debian 12 ships them in the packages manpages and manpages-dev 6.03-2, processed by
scripts/derive_summarization_pairs.py. Each page is under the licence that Debian's copyright file
(/usr/share/doc/manpages/copyright) and the page itself (SPDX-License-Identifier) call
Linux-man-pages-copyleft:

  Permission is granted to make and distribute verbatim copies of this manual
  provided the copyright notice and this permission notice are preserved on
  all copies.

  Permission is granted to copy and distribute modified versions of this
  manual under the conditions for verbatim copying, provided that the entire
  resulting derived work is distributed under the terms of a permission notice
  identical to this one.

  Since the Linux kernel and libraries are constantly changing, this manual
  page may be incorrect or out-of-date. The author(s) assume no responsibility
  for errors or omissions, or for damages resulting from the use of the
  information contained herein. The author(s) may not have taken the same
  level of care in the production of this manual, which is licensed free of
  charge, as they might when working professionally.

  Formatted or processed versions of this manual, if unaccompanied by the
  source, must acknowledge the copyright and authors of this work.

The copyright and authors of each page, as its source states them (the comment lines before its
SPDX line, verbatim):
"""


def write_acknowledgements(path, pairs):
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write(NOTICE)
        for page, _, _, header in sorted(pairs):
            f.write("\n" + page + "\n")
            f.write("".join("    " + line + "\n" for line in header))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", default="/")
    parser.add_argument("--out", default=DEFAULT_OUT)
    args = parser.parse_args()
    pairs, skipped = derive(args.root)
    os.makedirs(args.out, exist_ok=True)
    for name, part in split(pairs).items():
        with open(os.path.join(args.out, name + ".json"), "w", encoding="utf-8", newline="\n") as f:
            for _, text, summary, _ in part:
                f.write(json.dumps({"text": text, "summary": summary}, ensure_ascii=False) + "\n")
        if name == "validation":
            with open(os.path.join(args.out, "validation.csv"), "w", encoding="utf-8",
                      newline="") as f:
                writer = csv.writer(f)
                writer.writerow(["text", "summary"])
                writer.writerows((text, summary) for _, text, summary, _ in part)
        print(f"{name}.json: {len(part)} pairs")
    write_acknowledgements(os.path.join(args.out, "ACKNOWLEDGEMENTS.txt"), pairs)
    print("skipped:", ", ".join(f"{k}: {v}" for k, v in sorted(skipped.items())))


if __name__ == "__main__":
    main()
