"""Tokenizer parity: ctrainer-tokenize against transformers' BertTokenizerFast (the Rust tokenizers).

Every sentence and sentence pair of the bundled GLUE train and dev files (the text columns our
readers in examples/glue/ and HF's GLUE processors use: single sentences for CoLA and SST-2,
pairs for MRPC, RTE, STS-B and WNLI), plus a few hand-written edge cases, is encoded by both sides
with the uncased vocabulary (do_lower_case true) and the cased one (do_lower_case false),
truncated longest_first to 128 and to 32 tokens with the special tokens. input_ids and
token_type_ids must be equal; every difference is printed with the text and both id lists.

Each (vocabulary, max_length) is one ctrainer-tokenize process fed every line on stdin.
"""
import json
import os
import shutil
import sys
import tempfile
import time

from parity_support import EXAMPLES_DATA, GLUE_TASKS, GLUE_SPLITS, binary, fail_if, read_glue_task, run

from transformers import BertTokenizerFast

VOCABS = (  # (file, do_lower_case)
    ("bert-base-uncased-vocab.txt", True),
    ("bert-base-cased-vocab.txt", False),
)
MAX_LENGTHS = (128, 32)

# Inputs where the Rust normaliser and pre-tokenizer differ from HF's Python BertTokenizer (casing
# rules, whitespace and control classes) or that exercise rare paths (added special tokens in the
# text, over-long words, CJK). A pair is written as (a, b).
EDGE_CASES = [
    "ΣΑΣ ΟΔΥΣΣΕΥΣ σας",                      # final sigma: Rust lower-cases Σ to σ everywhere
    "İstanbul İİ KELVİN",                     # U+0130 lower-cases to i + U+0307
    "ﬁne ﬂour straße ǅemal",                  # ligatures, ß, title-case digraph
    "a\u00a0b\u2028c\u2029d\u1680e\u3000f",   # Zs / Zl / Zp whitespace
    "a\u0085b\u200bc\ufeffd\u00ade",           # NEL (Cc), zero-width space, BOM, soft hyphen (Cf)
    "x\u180ey\u2060z",                         # Mongolian vowel separator, word joiner
    "café naïve Ångström e\u0301\u0327",      # precomposed and combining accents
    "[CLS] [SEP] [PAD] [MASK] [UNK] [cls] [Sep]x[SEP]y",
    "a" * 99 + " " + "b" * 100 + " " + "c" * 101,
    "中文字符 日本語テキスト 한국어",
    "emoji 😀👍🏽 and symbols ™ © ° ± µ ½ → ∞",
    "quotes “double” ‘single’ «guillemets» — dash – en … ellipsis",
    ("Short one.", "A much longer second sentence with many more words than the first one."),
    ("", "empty first"),
]


def hf_tokenizer(vocab_file, do_lower_case, scratch):
    """BertTokenizerFast.from_pretrained of a folder holding only the vocabulary, as a user gets it."""
    folder = os.path.join(scratch, os.path.splitext(vocab_file)[0])
    os.makedirs(folder, exist_ok=True)
    shutil.copyfile(os.path.join(EXAMPLES_DATA, "vocab", vocab_file), os.path.join(folder, "vocab.txt"))
    tok = BertTokenizerFast.from_pretrained(folder, do_lower_case=do_lower_case)
    normalizer = tok.backend_tokenizer.normalizer
    if normalizer.lowercase != do_lower_case or len(tok) < 28000:
        sys.exit(f"parity: transformers built an unexpected tokenizer from {vocab_file}: "
                 f"{normalizer}, {len(tok)} tokens")
    return tok


def hf_encode(tok, rows, max_length):
    """(input_ids, token_type_ids) per row; singles and pairs in separate batched calls."""
    out = [None] * len(rows)
    for paired in (False, True):
        index = [i for i, row in enumerate(rows) if (row[1] is not None) == paired]
        if not index:
            continue
        first = [rows[i][0] for i in index]
        second = [rows[i][1] for i in index] if paired else None
        enc = tok(first, second, truncation=True, max_length=max_length, add_special_tokens=True)
        for k, i in enumerate(index):
            out[i] = (enc["input_ids"][k], enc["token_type_ids"][k])
    return out


def our_encode(vocab_file, do_lower_case, rows, max_length):
    stdin = "".join(a + ("\t" + b if b is not None else "") + "\n" for a, b in rows)
    result = run([binary("ctrainer-tokenize"), "--vocab", os.path.join(EXAMPLES_DATA, "vocab", vocab_file),
                  "--do_lower_case", "true" if do_lower_case else "false",
                  "--max_length", str(max_length)], input=stdin, encoding="utf-8")
    lines = result.stdout.splitlines()
    if len(lines) != len(rows):
        sys.exit(f"parity: ctrainer-tokenize printed {len(lines)} lines for {len(rows)} inputs")
    return [(obj["input_ids"], obj["token_type_ids"]) for obj in map(json.loads, lines)]


def main():
    sources = []  # (name, rows)
    for folder in GLUE_TASKS:
        for split in GLUE_SPLITS:
            sources.append((f"{folder}/{split}", read_glue_task(folder, split)))
    sources.append(("edge cases", [row if isinstance(row, tuple) else (row, None) for row in EDGE_CASES]))
    rows = [row for _, row_list in sources for row in row_list]
    names = [name for name, row_list in sources for _ in row_list]
    print(f"parity: {len(rows)} texts ({sum(r[1] is not None for r in rows)} pairs) from "
          f"{len(sources) - 1} GLUE files + edge cases")

    differences = []
    with tempfile.TemporaryDirectory() as scratch:
        for vocab_file, do_lower_case in VOCABS:
            tok = hf_tokenizer(vocab_file, do_lower_case, scratch)
            for max_length in MAX_LENGTHS:
                start = time.time()
                ours = our_encode(vocab_file, do_lower_case, rows, max_length)
                middle = time.time()
                theirs = hf_encode(tok, rows, max_length)
                print(f"parity: {vocab_file} max_length {max_length}: ours {middle - start:.1f} s, "
                      f"transformers {time.time() - middle:.1f} s")
                for name, row, mine, ref in zip(names, rows, ours, theirs):
                    if mine != ref:
                        differences.append(
                            f"{name} {vocab_file} max_length={max_length} text={row!r}\n"
                            f"    ours         input_ids={mine[0]} token_type_ids={mine[1]}\n"
                            f"                 tokens={tok.convert_ids_to_tokens(mine[0])}\n"
                            f"    transformers input_ids={ref[0]} token_type_ids={ref[1]}\n"
                            f"                 tokens={tok.convert_ids_to_tokens(ref[0])}")
    fail_if(differences, f"tokenization of {len(rows)} texts x {len(VOCABS)} vocabularies x "
                         f"{len(MAX_LENGTHS)} max_lengths")


if __name__ == "__main__":
    main()
