"""BertForSequenceClassification parity with transformers, both directions, fp32, eval mode.

1. transformers -> ours: a small transformers BertForSequenceClassification, randomly initialised
   (then every parameter perturbed, so biases and LayerNorm parameters are not 0 / 1), saved with
   save_pretrained; ours loads the folder as --model_name_or_path does. On a padded batch of real
   MRPC pairs (attention_mask with zeros, token_type_ids 0/1): last_hidden_state, pooler_output,
   logits, loss and every parameter's gradient agree within 1e-5, for each loss: single-label
   classification, regression (num_labels 1) and multi-label classification (problem_type
   inferred from float labels as HF does, and set explicitly), with gelu, gelu_new and relu.
   The folder loads with no missing and no unexpected keys.
2. ours -> transformers: the real run_glue trains a small model for 2 steps on an MRPC slice;
   AutoModelForSequenceClassification.from_pretrained(output_dir, output_loading_info=True) finds
   no missing, unexpected or mismatched keys, AutoTokenizer loads the saved tokenizer, and the
   outputs (logits, loss, gradients) agree within 1e-5.
"""
import os
import shutil
import sys
import tempfile

import torch
from transformers import (AutoModelForSequenceClassification, AutoTokenizer, BertConfig,
                          BertForSequenceClassification, BertTokenizerFast)

import bert_parity
from parity_support import EXAMPLES_DATA, binary, fail_if, run

BATCH = 8
MAX_LENGTH = 64
SMALL = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=96,
             max_position_embeddings=128)
# (tag, num_labels, hidden_act, problem_type in config.json, labels(generator) -> tensor)
CASES = [
    ("single_label", 3, "gelu", None,
     lambda g: torch.randint(0, 3, (BATCH,), generator=g)),
    ("regression", 1, "gelu_new", None,
     lambda g: torch.rand(BATCH, generator=g) * 5),
    ("multi_label_inferred", 4, "relu", None,
     lambda g: torch.randint(0, 2, (BATCH, 4), generator=g).float()),
    ("multi_label_explicit", 4, "gelu", "multi_label_classification",
     lambda g: torch.randint(0, 2, (BATCH, 4), generator=g).float()),
]
EXPECTED_PROBLEM = {"single_label": "single_label_classification", "regression": "regression",
                    "multi_label_inferred": "multi_label_classification",
                    "multi_label_explicit": "multi_label_classification"}


def mrpc_pairs(split, count):
    path = os.path.join(EXAMPLES_DATA, "glue", "MRPC", f"{split}.tsv")
    with open(path, encoding="utf-8-sig", newline="") as f:
        rows = [line.rstrip("\r").split("\t") for line in f.read().split("\n")[1:] if line]
    return [(row[3], row[4]) for row in rows[:count]], [int(row[0]) for row in rows[:count]]


def encode(tokenizer, pairs):
    enc = tokenizer([a for a, _ in pairs], [b for _, b in pairs], truncation=True,
                    max_length=MAX_LENGTH, padding=True, return_tensors="pt")
    batch = {k: enc[k].to(torch.int64) for k in ("input_ids", "attention_mask", "token_type_ids")}
    if batch["attention_mask"].all() or not batch["token_type_ids"].any():
        sys.exit("parity: the test batch must have padding and second segments")
    return batch


def load_report_differences(what, report, expect_missing=()):
    out = []
    if sorted(report["missing_keys"]) != sorted(expect_missing):
        out.append(f"{what}: missing keys {report['missing_keys']}, expected {list(expect_missing)}")
    if report["unexpected_keys"]:
        out.append(f"{what}: unexpected keys {report['unexpected_keys']}")
    return out


def hf_to_ours(scratch, tokenizer, batch):
    differences = []
    for index, (tag, num_labels, act, problem_type, make_labels) in enumerate(CASES):
        torch.manual_seed(100 + index)
        config = BertConfig(vocab_size=len(tokenizer), hidden_act=act, num_labels=num_labels,
                            problem_type=problem_type, **SMALL)
        model = BertForSequenceClassification(config)
        bert_parity.perturb_parameters(model, 0.05, seed=200 + index)
        folder = os.path.join(scratch, f"hf-{tag}")
        model.save_pretrained(folder)
        labelled = dict(batch, labels=make_labels(torch.Generator().manual_seed(300 + index)))
        mine, report = bert_parity.ours(folder, labelled, scratch, tag)
        reference = bert_parity.theirs(model, labelled)
        differences += load_report_differences(f"{tag}: our load of {folder}", report)
        if report["problem_type"] != model.config.problem_type or \
                report["problem_type"] != EXPECTED_PROBLEM[tag]:
            differences.append(f"{tag}: problem_type {report['problem_type']!r} (ours) vs "
                               f"{model.config.problem_type!r} (transformers)")
        grads = [k for k in reference if k.startswith("grad.")]
        if len(grads) != len(list(model.parameters())):
            sys.exit("parity: transformers' gradients were not all collected")
        differences += bert_parity.compare(f"transformers -> ours, {tag}", mine, reference,
                                           batch["attention_mask"])
        print(f"parity: transformers -> ours, {tag}: loss {reference['loss'].item():.6f} "
              f"(ours {mine['loss'].item():.6f}), {len(grads)} gradients compared")
    return differences


def ours_to_hf(scratch, tokenizer):
    config_path = os.path.join(scratch, "small-config.json")
    BertConfig(vocab_size=len(tokenizer), **SMALL).to_json_file(config_path)
    output_dir = os.path.join(scratch, "run_glue-out")
    run([binary("run_glue"), "--task_name", "mrpc",
         "--data_dir", os.path.join(EXAMPLES_DATA, "glue", "MRPC"),
         "--config_name", config_path,
         "--tokenizer_name", os.path.join(EXAMPLES_DATA, "vocab", "bert-base-uncased-vocab.txt"),
         "--output_dir", output_dir, "--cache_dir", os.path.join(scratch, "cache"),
         "--do_train", "--max_train_samples", "32", "--max_steps", "2",
         "--per_device_train_batch_size", "8", "--max_seq_length", str(MAX_LENGTH),
         "--learning_rate", "1e-3", "--seed", "11", "--save_strategy", "no",
         "--report_to", "none", "--disable_tqdm", "true"])

    differences = []
    model, info = AutoModelForSequenceClassification.from_pretrained(
        output_dir, output_loading_info=True)
    for kind in ("missing_keys", "unexpected_keys", "mismatched_keys"):
        if info.get(kind):
            differences.append(f"ours -> transformers: from_pretrained({output_dir}) {kind}: "
                               f"{sorted(info[kind])}")
    if type(model).__name__ != "BertForSequenceClassification":
        differences.append(f"ours -> transformers: loaded as {type(model).__name__}")
    saved_tokenizer = AutoTokenizer.from_pretrained(output_dir)
    pairs, labels = mrpc_pairs("dev", BATCH)
    batch = encode(saved_tokenizer, pairs)
    reference_ids = encode(tokenizer, pairs)["input_ids"]
    if not torch.equal(batch["input_ids"], reference_ids):
        differences.append("ours -> transformers: the saved tokenizer encodes differently from "
                           "the vocabulary it was built from")
    labelled = dict(batch, labels=torch.tensor(labels))
    mine, report = bert_parity.ours(output_dir, labelled, scratch, "run_glue")
    differences += load_report_differences(f"our load of {output_dir}", report)
    reference = bert_parity.theirs(model, labelled)
    differences += bert_parity.compare("ours -> transformers (run_glue output)", mine, reference,
                                       batch["attention_mask"])
    print(f"parity: ours -> transformers: logits {reference['logits'][:2].tolist()} "
          f"(ours {mine['logits'][:2].tolist()})")
    return differences


def main():
    torch.set_num_threads(max(1, min(4, os.cpu_count() or 1)))
    with tempfile.TemporaryDirectory() as scratch:
        vocab_dir = os.path.join(scratch, "vocab")
        os.makedirs(vocab_dir)
        shutil.copyfile(os.path.join(EXAMPLES_DATA, "vocab", "bert-base-uncased-vocab.txt"),
                        os.path.join(vocab_dir, "vocab.txt"))
        tokenizer = BertTokenizerFast.from_pretrained(vocab_dir, do_lower_case=True)
        pairs, _ = mrpc_pairs("train", BATCH)
        batch = encode(tokenizer, pairs)
        differences = hf_to_ours(scratch, tokenizer, batch)
        differences += ours_to_hf(scratch, tokenizer)
    fail_if(differences, "BertForSequenceClassification outputs, losses and gradients "
                         f"(tolerance {bert_parity.TOLERANCE:g})")


if __name__ == "__main__":
    main()
