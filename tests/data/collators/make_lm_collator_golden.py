#!/usr/bin/env python3
"""Writes lm_collator_golden.json: what transformers 5's DataCollatorForLanguageModeling returns
for three BERT-tokenized sentences (bundled bert-base-uncased vocabulary), two successive batches
per setting from one collator with seed=42. ctrainer_language_modeling_collator_test replays the
same inputs through ours and must return the same ids and labels.

Run with the tests' venv: python make_lm_collator_golden.py > lm_collator_golden.json
"""
import json
import os
import shutil
import sys
import tempfile

from transformers import AutoTokenizer, DataCollatorForLanguageModeling

HERE = os.path.dirname(os.path.abspath(__file__))
VOCAB = os.path.join(HERE, "..", "..", "..", "examples", "data", "vocab", "bert-base-uncased-vocab.txt")
TEXTS = ["The quick brown fox jumps over the lazy dog.", "Unbelievably, tokenization works!",
         "a b c d e f g h i j k l m n o p"]
SETTINGS = {
    "default": dict(mlm_probability=0.4),
    "pad_to_multiple_of_8": dict(mlm_probability=0.4, pad_to_multiple_of=8, mask_replace_prob=0.5,
                                 random_replace_prob=0.3),
    # HF pads no offset_mapping, so whole-word examples come padded to one length.
    "whole_word_mask": dict(whole_word_mask=True, mlm_probability=0.4),
    "causal": dict(mlm=False),
}


def main():
    folder = tempfile.mkdtemp()
    try:
        shutil.copy(VOCAB, os.path.join(folder, "vocab.txt"))
        with open(os.path.join(folder, "tokenizer_config.json"), "w") as f:
            json.dump({"tokenizer_class": "BertTokenizer", "do_lower_case": True}, f)
        tok = AutoTokenizer.from_pretrained(folder)
    finally:
        shutil.rmtree(folder)
    ragged = [{"input_ids": tok(t)["input_ids"]} for t in TEXTS]
    padded = []
    for t in TEXTS:
        e = tok(t, padding="max_length", max_length=18, return_offsets_mapping=True)
        padded.append({"input_ids": e["input_ids"], "offset_mapping": [list(o) for o in e["offset_mapping"]]})
    out = {"vocabulary_size": len(tok), "mask_token_id": tok.mask_token_id,
           "pad_token_id": tok.pad_token_id, "special_token_ids": tok.all_special_ids,
           "seed": 42, "ragged_examples": ragged, "padded_examples": padded, "settings": {}}
    for name, kwargs in SETTINGS.items():
        collator = DataCollatorForLanguageModeling(tok, seed=42, **kwargs)
        examples = padded if kwargs.get("whole_word_mask") else ragged
        batches = []
        for _ in range(2):
            batch = collator([dict(e) for e in examples])
            batches.append({k: batch[k].tolist() for k in ("input_ids", "labels")})
        out["settings"][name] = {"options": kwargs, "batches": batches}
    json.dump(out, sys.stdout, indent=None, separators=(",", ":"))
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
