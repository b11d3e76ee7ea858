"""SentencePiece parity: model folders with a SentencePiece model and no tokenizer.json, read by
ctrainer-tokenize --tokenizer_name and by transformers' AutoTokenizer.from_pretrained (which
builds the pipeline from the model, class by class), must encode and decode alike.

Models are trained in the test with the `sentencepiece` package on the bundled GLUE text: a
T5-like Unigram (pad 0, eos 1, unk 2, nmt_nfkc character map), a Llama-2-like BPE (byte_fallback,
identity normalization, spaces kept), a Unigram with user-defined and control symbols, and a
BPE with user-defined symbols and whitespace removal. Folders: T5Tokenizer (spiece.model, and
tokenizer.model with extra_ids), LlamaTokenizer (add_bos_token, legacy, add_prefix_space false,
add_eos_token), and the generic path transformers takes without a known class (no config,
PreTrainedTokenizerFast, legacy false). Compared on the MRPC dev pairs, the SST-2 dev sentences
and edge cases (leading and inner whitespace, special and user-defined symbols inside text,
emoji, CJK, tabs): input_ids, token_type_ids, attention_mask, offsets, decode with and without
special tokens; padding to max_length on the class's side; and each folder saved by
ctrainer-tokenize --save_to, which transformers must load back with the same ids.
"""
import json
import os
import subprocess
import sys
import tempfile

from parity_support import binary, fail_if, read_glue_task

import sentencepiece
from transformers import AutoTokenizer

EDGE_CASES = ["", " ", "  leading and   inner  spaces and trailing  ", " Hello", "line one\nline two\ttab",
              "Ünïcödé café naïve ｆｕｌｌｗｉｄｔｈ ①②", "emoji 🤗 and CJK 漢字", "numbers 12345 and 3.14",
              "</s> inside <s> text <unk> here", "▁already▁escaped", "x<sep>y<cls>z [MASK] ok <ctrl1>",
              "sentinel <extra_id_3> and <extra_id_0>"]

MODELS = {
    "t5_unigram": dict(model_type="unigram", vocab_size=800, pad_id=0, eos_id=1, unk_id=2, bos_id=-1),
    "llama_bpe": dict(model_type="bpe", vocab_size=800, byte_fallback=True, normalization_rule_name="identity",
                      remove_extra_whitespaces=False, split_digits=True),
    "unigram_extra": dict(model_type="unigram", vocab_size=800, user_defined_symbols=["<sep>", "<cls>", "[MASK]"],
                          control_symbols=["<ctrl1>"]),
    "bpe_extra": dict(model_type="bpe", vocab_size=800, user_defined_symbols=["<sep>", "[MASK]"]),
}

FOLDERS = [  # (name, model, file name, tokenizer_config.json or None)
    ("t5", "t5_unigram", "spiece.model", {"tokenizer_class": "T5Tokenizer"}),
    ("t5_extra_ids", "unigram_extra", "tokenizer.model", {"tokenizer_class": "T5Tokenizer", "extra_ids": 5}),
    ("llama", "llama_bpe", "tokenizer.model", {"tokenizer_class": "LlamaTokenizer", "add_bos_token": True}),
    ("llama_legacy", "llama_bpe", "tokenizer.model",
     {"tokenizer_class": "LlamaTokenizerFast", "legacy": True, "add_bos_token": True, "add_eos_token": True,
      "pad_token": "<unk>"}),
    ("llama_no_prefix_space", "llama_bpe", "tokenizer.model",
     {"tokenizer_class": "LlamaTokenizer", "add_prefix_space": False, "padding_side": "right"}),
    ("generic_bpe", "llama_bpe", "tokenizer.model", None),
    ("generic_unigram_extra", "unigram_extra", "tokenizer.model", {"add_bos_token": True, "pad_token": "<pad>"}),
    ("generic_bpe_legacy_false", "bpe_extra", "tokenizer.model",
     {"tokenizer_class": "PreTrainedTokenizerFast", "legacy": False, "add_eos_token": True}),
    ("generic_t5_unigram", "t5_unigram", "tokenizer.model", None),
]


def train_models(scratch):
    corpus = os.path.join(scratch, "corpus.txt")
    with open(corpus, "w", encoding="utf-8") as f:
        f.write("\n".join([a for a, _ in read_glue_task("SST-2", "train")][::4]))
    paths = {}
    for name, options in MODELS.items():
        prefix = os.path.join(scratch, name)
        sentencepiece.SentencePieceTrainer.train(input=corpus, model_prefix=prefix, character_coverage=1.0,
                                                 minloglevel=2, **options)
        paths[name] = prefix + ".model"
    return paths


def make_folders(scratch, models):
    made = {}
    for name, model, file_name, config in FOLDERS:
        folder = os.path.join(scratch, name)
        os.makedirs(folder)
        with open(models[model], "rb") as src, open(os.path.join(folder, file_name), "wb") as dst:
            dst.write(src.read())
        if config is not None:
            with open(os.path.join(folder, "tokenizer_config.json"), "w") as f:
                json.dump(config, f)
        made[name] = folder
    return made


def rows():
    out = [(a, b) for a, b in read_glue_task("MRPC", "dev")]
    out += [(a, None) for a, _ in read_glue_task("SST-2", "dev")]
    out += [(t, None) for t in EDGE_CASES] + [(EDGE_CASES[3], EDGE_CASES[2])]
    return out


def ours(folder, data, extra=()):
    stdin = "".join(json.dumps([a] if b is None else [a, b]) + "\n" for a, b in data)
    result = subprocess.run([binary("ctrainer-tokenize"), "--tokenizer_name", folder, "--input_format", "jsonl",
                             "--decode", *extra], input=stdin, capture_output=True, text=True, encoding="utf-8")
    if result.returncode != 0:
        sys.exit(f"parity: ctrainer-tokenize on {folder} failed ({result.returncode}):\n{result.stderr}")
    return [json.loads(line) for line in result.stdout.split("\n")[:-1]]


def theirs(tok, data, padded=False):
    out = []
    for a, b in data:
        options = dict(padding="max_length", max_length=48, truncation=True) if padded else {}
        e = tok(a, b, add_special_tokens=True, return_offsets_mapping=True, return_token_type_ids=True, **options)
        out.append({"input_ids": e["input_ids"], "token_type_ids": e["token_type_ids"],
                    "attention_mask": e["attention_mask"], "offsets": [list(o) for o in e["offset_mapping"]],
                    "decoded": tok.decode(e["input_ids"], skip_special_tokens=False),
                    "decoded_without_special": tok.decode(e["input_ids"], skip_special_tokens=True)})
    return out


def compare(name, data, mine, ref, differences, keys):
    if len(mine) != len(ref):
        differences.append(f"{name}: {len(mine)} encodings from ctrainer-tokenize, {len(ref)} from transformers")
    for row, m, r in zip(data, mine, ref):
        for key in keys:
            if m.get(key) != r[key]:
                differences.append(f"{name} {row!r:.120}\n      {key}: ours {m.get(key)!r:.300}\n"
                                   f"      {' ' * len(key)}  transformers {r[key]!r:.300}")
                break


def main():
    data = rows()
    padded_rows = data[:40] + data[-len(EDGE_CASES) - 1:]
    keys = ("input_ids", "token_type_ids", "attention_mask", "offsets", "decoded", "decoded_without_special")
    differences, cases = [], 0
    with tempfile.TemporaryDirectory() as scratch:
        for name, folder in make_folders(scratch, train_models(scratch)).items():
            tok = AutoTokenizer.from_pretrained(folder)
            saved = os.path.join(scratch, name + "_saved")
            compare(name, data, ours(folder, data, ["--save_to", saved]), theirs(tok, data), differences, keys)
            if tok.pad_token is not None:  # (both refuse to pad without one)
                compare(name + " padded to max_length", padded_rows,
                        ours(folder, padded_rows, ["--max_length", "48", "--padding", "max_length"]),
                        theirs(tok, padded_rows, padded=True), differences, keys[:4])
                cases += len(padded_rows)
            reloaded = theirs(AutoTokenizer.from_pretrained(saved), data)
            compare(name + " saved by ctrainer, read by transformers", data, theirs(tok, data), reloaded,
                    differences, keys[:4])
            cases += 2 * len(data)
            print(f"parity: {name}: transformers' {type(tok).__name__} (padding {tok.padding_side}), "
                  f"{len(data)} texts")
    if cases == 0:
        sys.exit("parity: no case was compared")
    fail_if(differences, f"SentencePiece folders: {cases} encodings compared")


if __name__ == "__main__":
    main()
