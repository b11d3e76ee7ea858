#!/usr/bin/env python3
"""Derives examples/data/seq2seq/translation_en_de/{train,validation,test}.json: English -> German
sentence pairs taken from the German gettext message catalogs (.mo) that Debian 12 ships for eight
GNU programs, all GPL-3+ (see examples/data/seq2seq/README.md for the packages, versions and
licence).

Each output line is one JSON object in the format Hugging Face's run_translation reads:
    {"translation": {"en": "...", "de": "..."}}

What is kept, per catalog (read with the standard library's gettext.GNUTranslations):
  * singular messages only (plural entries are skipped), no msgid with a msgctxt ("\\x04"),
    not the header entry; msgfmt leaves fuzzy and untranslated messages out of a .mo already;
  * both sides normalised: every run of whitespace (newlines of --help blocks included) becomes
    one space, surrounding whitespace is stripped;
  * dropped: a side with fewer than 3 letters or over 200 characters, a side whose non-space
    characters are less than half letters once printf directives (%s, %-10lu, %1$s, %.*s ...)
    are removed, a translation identical to its source, a source already taken from an earlier
    catalog (catalogs are read in the order of DOMAINS, messages in sorted order).
Then the pairs, sorted by source, are shuffled with random.Random(SEED) and split 85 / 7.5 / 7.5 %
into train / validation / test; train is capped at MAX_TRAIN pairs (it is not reached with
these catalogs: the cap keeps the three files under ~1 MB should the catalogs grow).

Usage (stdlib only; any Python 3.8+ gives the same files):
    python scripts/derive_translation_pairs.py [--root /] [--out examples/data/seq2seq/translation_en_de]
--root is the directory that holds usr/share/locale/de/LC_MESSAGES/*.mo: "/" for the installed
packages, or a folder into which the .deb files were unpacked with `dpkg-deb -x`.
Running it again on the same catalogs writes byte-identical files.
"""
import argparse
import gettext
import json
import os
import random
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_OUT = os.path.join(ROOT, "examples", "data", "seq2seq", "translation_en_de")

# gettext domain -> Debian package shipping usr/share/locale/de/LC_MESSAGES/<domain>.mo
DOMAINS = [
    ("coreutils", "coreutils"),
    ("grep", "grep"),
    ("diffutils", "diffutils"),
    ("sed", "sed"),
    ("tar", "tar"),
    ("bash", "bash"),
    ("make", "make"),
    ("gettext-tools", "gettext"),
]
SEED = 1234
MIN_LETTERS = 3
MAX_CHARS = 200
MAX_TRAIN = 6000

# printf-style conversions: %%, %s, %-10lu, %1$s, %.*s, %'d, %zu, %jd, %<PRIuMAX> ...
DIRECTIVE = re.compile(r"%(?:%|<[A-Za-z0-9_]+>|(?:\d+\$)?[-+ #0']*(?:\*|\d+)?(?:\.(?:\*|\d+))?"
                       r"(?:hh|h|ll|l|L|q|j|z|t)?[diouxXeEfFgGaAcspnm])")


def normalise(text):
    return " ".join(text.split())


def acceptable(text):
    if len(text) > MAX_CHARS:
        return False
    letters = sum(ch.isalpha() for ch in text)
    if letters < MIN_LETTERS:
        return False
    rest = "".join(DIRECTIVE.sub("", text).split())
    return sum(ch.isalpha() for ch in rest) * 2 >= len(rest)


def read_catalog(path):
    with open(path, "rb") as f:
        catalog = gettext.GNUTranslations(f)
    return catalog, {k: v for k, v in catalog._catalog.items()
                     if isinstance(k, str) and k and "\x04" not in k}


def derive(root):
    pairs, seen, stats = [], set(), []
    for domain, package in DOMAINS:
        path = os.path.join(root, "usr", "share", "locale", "de", "LC_MESSAGES", domain + ".mo")
        catalog, messages = read_catalog(path)
        kept = 0
        for msgid in sorted(messages):
            en, de = normalise(msgid), normalise(messages[msgid])
            if not acceptable(en) or not acceptable(de) or en == de or en in seen:
                continue
            seen.add(en)
            pairs.append((en, de))
            kept += 1
        stats.append((domain, package, catalog.info().get("project-id-version", "?"),
                      len(messages), kept))
    return pairs, stats


def split(pairs):
    pairs = sorted(pairs)
    random.Random(SEED).shuffle(pairs)
    n_val = round(len(pairs) * 0.075)
    n_test = round(len(pairs) * 0.075)
    validation, test = pairs[:n_val], pairs[n_val:n_val + n_test]
    train = pairs[n_val + n_test:][:MAX_TRAIN]
    return {"train": train, "validation": validation, "test": test}


def write_jsonl(path, pairs):
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for en, de in pairs:
            f.write(json.dumps({"translation": {"en": en, "de": de}}, ensure_ascii=False) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", default="/")
    parser.add_argument("--out", default=DEFAULT_OUT)
    args = parser.parse_args()
    pairs, stats = derive(args.root)
    os.makedirs(args.out, exist_ok=True)
    for name, part in split(pairs).items():
        write_jsonl(os.path.join(args.out, name + ".json"), part)
        print(f"{name}.json: {len(part)} pairs")
    for domain, package, version, total, kept in stats:
        print(f"  {domain}.mo ({package}, {version}): {total} singular messages, {kept} kept")


if __name__ == "__main__":
    main()
