"""AutoTokenizer parity: model folders as users have them, read by ctrainer-tokenize
--tokenizer_name and by transformers' AutoTokenizer.from_pretrained, must encode alike.

Folders (tokenizers trained in the test on the bundled GLUE text):
- GPT-2 as its old checkpoints ship it: vocab.json + merges.txt + tokenizer_config.json naming
  GPT2Tokenizer (and add_prefix_space true in a second folder), no tokenizer.json;
- RoBERTa the same way (RobertaTokenizer: its post-processor and special tokens);
- a tokenizer.json without a post-processor whose tokenizer_config.json says add_bos_token and
  add_eos_token (transformers 5 leaves them unapplied for a loaded file of this class) and names
  a pad token the file lacks (transformers adds it as a new special token);
- each folder saved again by ctrainer-tokenize --save_to, which transformers must load back with
  the same ids (save_pretrained parity).
input_ids, token_type_ids, attention_mask and offsets (characters) are compared on the MRPC dev
pairs, the SST-2 dev sentences and edge cases.
"""
import json
import os
import subprocess
import sys
import tempfile

from parity_support import binary, fail_if, read_glue_task

from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import AutoTokenizer

EDGE_CASES = ["", "  spaced  out  ", "Hello, World! It's 3.14 — café 中文 😀", "<|endoftext|> <s> </s>",
              "<mask> masked <pad> pad"]


def rows():
    out = [(a, b) for a, b in read_glue_task("MRPC", "dev")]
    out += [(a, None) for a, _ in read_glue_task("SST-2", "dev")]
    out += [(t, None) for t in EDGE_CASES] + [(EDGE_CASES[2], EDGE_CASES[1])]
    return out


def train_bpe(specials):
    texts = [a for a, _ in read_glue_task("SST-2", "train")][::3]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(texts, trainers.BpeTrainer(
        vocab_size=2500, special_tokens=specials, show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    return tok


def write_bpe_files(tok, folder, config):
    os.makedirs(folder, exist_ok=True)
    model = json.loads(tok.to_str())["model"]
    with open(os.path.join(folder, "vocab.json"), "w", encoding="utf-8") as f:
        json.dump(model["vocab"], f, ensure_ascii=False)
    with open(os.path.join(folder, "merges.txt"), "w", encoding="utf-8") as f:
        f.write("#version: 0.2\n")
        for m in model["merges"]:
            f.write((" ".join(m) if isinstance(m, list) else m) + "\n")
    with open(os.path.join(folder, "tokenizer_config.json"), "w") as f:
        json.dump(config, f)


def folders(scratch):
    gpt2 = train_bpe(["<|endoftext|>"])
    made = {}
    made["gpt2_files"] = os.path.join(scratch, "gpt2_files")
    write_bpe_files(gpt2, made["gpt2_files"], {"tokenizer_class": "GPT2Tokenizer"})
    made["gpt2_files_prefix_space"] = os.path.join(scratch, "gpt2_files_prefix_space")
    write_bpe_files(gpt2, made["gpt2_files_prefix_space"],
                    {"tokenizer_class": "GPT2Tokenizer", "add_prefix_space": True,
                     "pad_token": "<|endoftext|>"})
    roberta = train_bpe(["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
    made["roberta_files"] = os.path.join(scratch, "roberta_files")
    write_bpe_files(roberta, made["roberta_files"],
                    {"tokenizer_class": "RobertaTokenizer",
                     "mask_token": {"content": "<mask>", "lstrip": True, "rstrip": False,
                                    "normalized": False, "special": True, "__type": "AddedToken"}})
    bos_eos = train_bpe(["<s>", "</s>"])
    bos_eos.post_processor = None
    made["bos_eos_flags"] = os.path.join(scratch, "bos_eos_flags")
    os.makedirs(made["bos_eos_flags"])
    bos_eos.save(os.path.join(made["bos_eos_flags"], "tokenizer.json"))
    with open(os.path.join(made["bos_eos_flags"], "tokenizer_config.json"), "w") as f:
        json.dump({"tokenizer_class": "PreTrainedTokenizerFast", "bos_token": "<s>", "eos_token": "</s>",
                   "add_bos_token": True, "add_eos_token": True, "pad_token": "[PAD]"}, f)
    return made


def ours(folder, data, extra=()):
    stdin = "".join(json.dumps([a] if b is None else [a, b]) + "\n" for a, b in data)
    result = subprocess.run([binary("ctrainer-tokenize"), "--tokenizer_name", folder, "--input_format", "jsonl",
                             *extra], input=stdin, capture_output=True, text=True, encoding="utf-8")
    if result.returncode != 0:
        sys.exit(f"parity: ctrainer-tokenize on {folder} failed ({result.returncode}):\n{result.stderr}")
    return [json.loads(line) for line in result.stdout.split("\n")[:-1]]


def theirs(folder, data):
    tok = AutoTokenizer.from_pretrained(folder)
    out = []
    for a, b in data:
        e = tok(a, b, add_special_tokens=True, return_offsets_mapping=True, return_token_type_ids=True)
        out.append({"input_ids": e["input_ids"], "token_type_ids": e["token_type_ids"],
                    "attention_mask": e["attention_mask"], "offsets": [list(o) for o in e["offset_mapping"]]})
    return out, type(tok).__name__


def compare(name, data, mine, ref, differences):
    for row, m, r in zip(data, mine, ref):
        for key in ("input_ids", "token_type_ids", "attention_mask", "offsets"):
            if m.get(key) != r[key]:
                differences.append(f"{name} {row!r:.120}\n      {key}: ours {m.get(key)!r:.300}\n"
                                   f"      {' ' * len(key)}  transformers {r[key]!r:.300}")
                break


def main():
    data = rows()
    differences, cases = [], 0
    with tempfile.TemporaryDirectory() as scratch:
        for name, folder in folders(scratch).items():
            ref, klass = theirs(folder, data)
            saved = os.path.join(scratch, name + "_saved")
            compare(name, data, ours(folder, data, ["--save_to", saved]), ref, differences)
            reloaded, _ = theirs(saved, data)
            compare(name + " saved by ctrainer, read by transformers", data, ours(folder, data), reloaded,
                    differences)
            cases += 2 * len(data)
            print(f"parity: {name}: transformers' {klass}, {len(data)} texts")
    if cases == 0:
        sys.exit("parity: no case was compared")
    fail_if(differences, f"AutoTokenizer folders: {cases} encodings compared")


if __name__ == "__main__":
    main()
