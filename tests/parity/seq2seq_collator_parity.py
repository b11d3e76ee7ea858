"""DataCollatorForSeq2Seq against transformers 5: the same examples (source ids with an attention
mask, target labels of other lengths) through transformers' DataCollatorForSeq2Seq, with a
tokenizer whose pad id is not 0 and tiny BART and T5 models for decoder_input_ids, and through
ours (ctrainer_parity_seq2seq_collator), for each padding setting: the batches must be equal
key for key, value for value. Settings that make transformers' batch fail (a sequence longer
than max_length) must be refused by ours.
"""
import json
import os
import tempfile

import torch
from safetensors.torch import load_file, save_file
from tokenizers import Tokenizer, models
from transformers import (BartConfig, BartForConditionalGeneration, DataCollatorForSeq2Seq,
                          PreTrainedTokenizerFast, T5Config, T5ForConditionalGeneration)

from parity_support import binary, fail_if, run

DUMP = binary("ctrainer_parity_seq2seq_collator")
VOCAB = 32
SPECIALS = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3}

BART = BartForConditionalGeneration(BartConfig(
    vocab_size=VOCAB, d_model=8, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
    decoder_attention_heads=2, encoder_ffn_dim=8, decoder_ffn_dim=8, max_position_embeddings=64,
    pad_token_id=1, bos_token_id=0, eos_token_id=2, decoder_start_token_id=2))
T5 = T5ForConditionalGeneration(T5Config(
    vocab_size=VOCAB, d_model=8, d_kv=4, d_ff=8, num_layers=1, num_heads=2, pad_token_id=0,
    eos_token_id=1, decoder_start_token_id=0))

# (name, collator settings, padding side, model, with labels)
CASES = [
    ("longest, right, BART", {}, "right", "bart", True),
    ("longest, left", {}, "left", "bart", True),
    ("pad_to_multiple_of 8", {"pad_to_multiple_of": 8}, "right", "bart", True),
    ("max_length 16", {"padding": "max_length", "max_length": 16}, "right", "bart", True),
    ("max_length 16, multiple of 5, left", {"padding": "max_length", "max_length": 16,
                                             "pad_to_multiple_of": 5}, "left", "bart", True),
    ("label_pad_token_id 7", {"label_pad_token_id": 7}, "right", "bart", True),
    ("T5's shift", {}, "right", "t5", True),
    ("no model: no decoder_input_ids", {}, "right", None, True),
    ("no labels", {}, "right", "bart", False),
]


def tokenizer(padding_side):
    vocab = dict(SPECIALS)
    for i in range(len(SPECIALS), VOCAB):
        vocab[f"w{i}"] = i
    backend = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    return PreTrainedTokenizerFast(tokenizer_object=backend, pad_token="<pad>", bos_token="<s>",
                                   eos_token="</s>", unk_token="<unk>", padding_side=padding_side)


def features(generator, count=5):
    out = []
    for _ in range(count):
        source = int(torch.randint(2, 12, (1,), generator=generator))
        target = int(torch.randint(1, 9, (1,), generator=generator))
        out.append({"input_ids": torch.randint(4, VOCAB, (source,), generator=generator).tolist(),
                    "attention_mask": [1] * source,
                    "labels": torch.randint(4, VOCAB, (target,), generator=generator).tolist()})
    return out


def our_options(settings, padding_side, model_name):
    options = {"pad_token_id": SPECIALS["<pad>"], "pad_left": padding_side == "left"}
    for key in ("max_length", "pad_to_multiple_of", "label_pad_token_id"):
        if key in settings:
            options[key] = settings[key]
    model = {"bart": BART, "t5": T5}.get(model_name)
    if model is not None:
        options["decoder_start_token_id"] = model.config.decoder_start_token_id
        options["decoder_pad_token_id"] = model.config.pad_token_id
    return options


def main():
    differences = []
    generator = torch.Generator().manual_seed(1202)
    with tempfile.TemporaryDirectory() as tmp:
        cases, expected = [], []
        for index, (name, settings, side, model_name, with_labels) in enumerate(CASES):
            collator = DataCollatorForSeq2Seq(tokenizer(side), model={"bart": BART, "t5": T5}.get(
                model_name), **settings)
            for draw in range(3):
                batch_features = features(generator)
                if not with_labels:
                    for f in batch_features:
                        del f["labels"]
                theirs = collator([dict(f) for f in batch_features])
                tensors = {f"{i}.{key}": torch.tensor(value, dtype=torch.int64)
                           for i, f in enumerate(batch_features) for key, value in f.items()}
                stem = os.path.join(tmp, f"case_{index}_{draw}")
                save_file(tensors, stem + ".in.safetensors")
                cases.append({"examples": stem + ".in.safetensors",
                              "options": our_options(settings, side, model_name),
                              "output": stem + ".out.safetensors"})
                expected.append((f"{name}, draw {draw}",
                                 {k: v for k, v in theirs.items() if v is not None}))
        # transformers cannot make a batch from a source longer than max_length: ours refuses.
        too_long = [{"input_ids": list(range(4, 24)), "attention_mask": [1] * 20,
                     "labels": [5, 6]}]
        try:
            DataCollatorForSeq2Seq(tokenizer("right"), padding="max_length", max_length=16)(
                too_long + features(generator, 1))
            differences.append("transformers batched a source longer than max_length")
        except ValueError:
            pass
        stem = os.path.join(tmp, "too_long")
        save_file({f"0.{k}": torch.tensor(v) for k, v in too_long[0].items()},
                  stem + ".in.safetensors")
        cases.append({"examples": stem + ".in.safetensors",
                      "options": {"pad_token_id": 1, "max_length": 16},
                      "output": stem + ".out.safetensors"})
        expected.append(("a source longer than max_length", None))
        with open(os.path.join(tmp, "cases.json"), "w") as f:
            json.dump(cases, f)
        lines = run([DUMP, "--cases", os.path.join(tmp, "cases.json")]).stdout.splitlines()
        if len(lines) != len(cases):
            differences.append(f"{len(lines)} results for {len(cases)} cases")
        for case, line, (name, theirs) in zip(cases, lines, expected):
            result = json.loads(line)
            if theirs is None:
                if "max_length" not in result.get("error", ""):
                    differences.append(f"{name}: ours did not refuse it naming max_length: "
                                       f"{result}")
                continue
            if "error" in result:
                differences.append(f"{name}: ours refused it: {result['error']}")
                continue
            ours = load_file(case["output"])
            if sorted(ours) != sorted(theirs):
                differences.append(f"{name}: keys {sorted(ours)} vs transformers' {sorted(theirs)}")
                continue
            for key, value in theirs.items():
                if not torch.equal(ours[key], value.to(torch.int64)):
                    differences.append(f"{name}: {key} {ours[key].tolist()} vs transformers' "
                                       f"{value.tolist()}")
        for name, settings, side, model_name, with_labels in CASES:
            print(f"parity: {name}")
    fail_if(differences, f"{len(CASES)} collator settings x 3 batches and a refusal")


if __name__ == "__main__":
    main()
