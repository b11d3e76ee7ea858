#!/usr/bin/env python3
"""Trains examples/data/text/kjv-bpe-8k: a GPT-2-style byte-level BPE tokenizer (8,192 tokens,
<|endoftext|> as bos/eos/unk) on the training part of kjv.txt (every line after the first 5 %,
the validation split run_clm takes by default), with the `tokenizers` library.

Usage (tests' venv): python scripts/train_kjv_tokenizer.py
"""
import json
import os

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "examples", "data", "text", "kjv.txt")
OUT = os.path.join(ROOT, "examples", "data", "text", "kjv-bpe-8k")
EOS = "<|endoftext|>"


def main():
    with open(CORPUS, encoding="ascii") as f:
        lines = f.read().splitlines(keepends=True)
    train = lines[round(5 * len(lines) / 100):]
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=8192, special_tokens=[EOS],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tokenizer.train_from_iterator(train, trainer=trainer)
    os.makedirs(OUT, exist_ok=True)
    tokenizer.save(os.path.join(OUT, "tokenizer.json"))
    with open(os.path.join(OUT, "tokenizer_config.json"), "w") as f:
        json.dump({"tokenizer_class": "GPT2Tokenizer", "bos_token": EOS, "eos_token": EOS,
                   "unk_token": EOS, "model_max_length": 1024, "add_prefix_space": False}, f,
                  indent=2)
        f.write("\n")


if __name__ == "__main__":
    main()
