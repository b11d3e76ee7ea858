"""What the two reference sides of `ctrainer-bench vs_hf` share (benchmark-only Python).

hf_trainer_glue.py (transformers' Trainer, the run_glue.py recipe) and torch_loop_glue.py (a
plain PyTorch loop) read the same GLUE TSVs the same way our run_glue reads them, tokenize with
BertTokenizerFast as HF's run_glue.py does, build the same model, compute the dev metrics as
run_glue.py's `evaluate.load("glue", task)` does and write one result JSON. Both take run_glue's
flag names, so the bench builds one argument list for all three sides.

Only SST-2 and MRPC are needed by the bench; the table below says where their columns are.
"""
import argparse
import csv
import json
import math
import os
import shutil
import sys
import tempfile

import torch
from transformers import (AutoTokenizer, BertConfig, BertForSequenceClassification,
                          BertTokenizerFast, set_seed)

# The GLUE layouts our reader uses (examples/glue/glue_task.cpp): text columns and label column
# by header name; labels "0"/"1" are class ids 0/1 (run_glue's label_list, sorted).
TASKS = {
    "sst2": {"text": ("sentence",), "label": "label", "f1": False},
    "mrpc": {"text": ("#1 String", "#2 String"), "label": "Quality", "f1": True},
}
# datasets.map(batched=True)'s default batch: run_glue.py tokenizes 1000 rows per call.
TOKENIZE_BATCH = 1000
# English GLUE text with the BERT uncased vocabulary: well under 1% [UNK] (SST-2 train: 0.0%).
MAX_UNKNOWN_SHARE = 0.05


def fail(message):
    """Exit 2 with an error naming the input and the fix (the bench shows stderr's tail)."""
    print(f"error: {message}", file=sys.stderr)
    sys.exit(2)


def str_to_bool(value):
    if value.lower() in ("true", "1", "yes"):
        return True
    if value.lower() in ("false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got '{value}'")


def add_common_arguments(parser):
    """run_glue's flags that the bench passes to every side (same names, same defaults)."""
    a = parser.add_argument
    a("--task_name", required=True, choices=sorted(TASKS))
    a("--data_dir", required=True, help="the task's folder with train.tsv and dev.tsv")
    a("--model_name_or_path", default="", help="pretrained folder (config, weights, vocab)")
    a("--config_name", default="", help="config.json to train from scratch")
    a("--tokenizer_name", default="", help="vocab.txt when training from scratch")
    a("--max_seq_length", type=int, default=128)
    a("--pad_to_max_length", type=str_to_bool, default=True,
      help="run_glue.py's default true; false pads each batch to its longest example")
    a("--max_train_samples", type=int, default=None)
    a("--max_eval_samples", type=int, default=None)
    a("--per_device_train_batch_size", type=int, default=8)
    a("--per_device_eval_batch_size", type=int, default=8)
    a("--learning_rate", type=float, default=5e-5)
    a("--weight_decay", type=float, default=0.0)
    a("--warmup_ratio", type=float, default=0.0)
    a("--num_train_epochs", type=float, default=3.0)
    a("--max_steps", type=int, default=-1)
    a("--max_grad_norm", type=float, default=1.0)
    a("--seed", type=int, default=42)
    a("--optim", default="adamw_torch_fused", choices=["adamw_torch", "adamw_torch_fused"])
    a("--threads", type=int, default=2, help="torch.set_num_threads (intra-op threads)")
    a("--device", default="cpu", choices=["cpu", "cuda"])
    a("--bf16", type=str_to_bool, default=False, help="bf16 autocast (HF's --bf16)")
    a("--output_dir", required=True)
    a("--result_json", required=True, help="where the result JSON goes")


def check_arguments(args):
    if not args.model_name_or_path and not (args.config_name and args.tokenizer_name):
        fail("give --model_name_or_path (a pretrained folder), or --config_name and "
             "--tokenizer_name to train from scratch")
    for split in ("train", "dev"):
        path = os.path.join(args.data_dir, split + ".tsv")
        if not os.path.isfile(path):
            fail(f"--data_dir {args.data_dir}: {path} does not exist (expected the GLUE task "
                 "folder, e.g. examples/data/glue/SST-2)")
    if args.device == "cuda" and not torch.cuda.is_available():
        fail("--device cuda: torch.cuda.is_available() is false in this Python; run on a GPU "
             "machine with a CUDA build of torch")
    torch.set_num_threads(args.threads)


def read_glue_tsv(path, task):
    """(texts, label) of every row, as our reader reads them: tab-separated, no quoting (MRPC
    has unbalanced '"'), MRPC's BOM dropped, columns found by header name."""
    spec = TASKS[task]
    rows = []
    with open(path, encoding="utf-8-sig", newline="") as f:
        reader = csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
        header = next(reader)
        try:
            text_at = [header.index(name) for name in spec["text"]]
            label_at = header.index(spec["label"])
        except ValueError:
            fail(f"{path}: the header {header} lacks a column of GLUE task {task} "
                 f"({list(spec['text']) + [spec['label']]}); is --data_dir the {task} folder?")
        for line, fields in enumerate(reader, start=2):
            if len(fields) != len(header):
                fail(f"{path}:{line}: {len(fields)} tab-separated columns, expected "
                     f"{len(header)}")
            rows.append(([fields[i] for i in text_at], int(fields[label_at])))
    return rows


def load_tokenizer(args):
    """BertTokenizerFast, as run_glue.py's AutoTokenizer gives for a BERT folder; from scratch,
    from the vocabulary file (lower-casing, as our run_glue with no tokenizer_config.json)."""
    if args.model_name_or_path:
        return AutoTokenizer.from_pretrained(args.model_name_or_path)
    # transformers 5's BertTokenizerFast(vocab_file=...) ignores the file and maps every word to
    # [UNK]; from_pretrained of a folder holding the file as vocab.txt reads it (as the parity
    # tests and a user with a vocabulary folder do).
    folder = tempfile.mkdtemp(prefix="ctrainer_vocab_")
    try:
        shutil.copyfile(args.tokenizer_name, os.path.join(folder, "vocab.txt"))
        return BertTokenizerFast.from_pretrained(folder, do_lower_case=True)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def check_vocabulary_coverage(features, tokenizer, what):
    """Fails when most tokens are [UNK]: a tokenizer that did not load its vocabulary trains on
    nothing (the dev metrics then stay at the majority class) while still looking fine."""
    special = {tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.pad_token_id}
    tokens = [t for f in features for t in f["input_ids"] if t not in special]
    unknown = sum(t == tokenizer.unk_token_id for t in tokens)
    if tokens and unknown > MAX_UNKNOWN_SHARE * len(tokens):
        sys.exit(f"error: {unknown} of {len(tokens)} tokens of {what} are [UNK]: the tokenizer "
                 "did not load its vocabulary (check --tokenizer_name / the model folder)")


def tokenize(rows, tokenizer, max_seq_length, pad_to_max_length):
    """run_glue.py's preprocess_function over datasets.map(batched=True): truncation to
    max_seq_length, padding to it when pad_to_max_length. Features are Python lists, as a
    datasets.Dataset without a format returns them."""
    padding = "max_length" if pad_to_max_length else False
    features = []
    for start in range(0, len(rows), TOKENIZE_BATCH):
        chunk = rows[start:start + TOKENIZE_BATCH]
        texts = list(zip(*[texts for texts, _ in chunk]))
        encoded = tokenizer(*texts, padding=padding, max_length=max_seq_length, truncation=True)
        for i, (_, label) in enumerate(chunk):
            feature = {key: values[i] for key, values in encoded.items()}
            feature["labels"] = label
            features.append(feature)
    return features


def load_splits(args, tokenizer):
    """Tokenized train and dev splits. As run_glue.py (and our run_glue) does, the whole split
    is tokenized first and the first max_train_samples / max_eval_samples examples are kept
    afterwards (its map() comes before select(range(n))), so every side does the same work."""
    splits = []
    for split, limit in (("train", args.max_train_samples), ("dev", args.max_eval_samples)):
        rows = read_glue_tsv(os.path.join(args.data_dir, split + ".tsv"), args.task_name)
        features = tokenize(rows, tokenizer, args.max_seq_length, args.pad_to_max_length)
        check_vocabulary_coverage(features, tokenizer, f"{args.task_name} {split}")
        splits.append(features[:limit] if limit is not None else features)
    return splits


class ListDataset(torch.utils.data.Dataset):
    """A list of feature dicts (what a datasets.Dataset yields item by item)."""

    def __init__(self, features):
        self.features = features

    def __len__(self):
        return len(self.features)

    def __getitem__(self, i):
        return self.features[i]


def build_model(args):
    """Seeds first (run_glue.py's set_seed before the model), then the pretrained folder with a
    new 2-label head, or a new model from the config JSON."""
    set_seed(args.seed)
    if args.model_name_or_path:
        config = BertConfig.from_pretrained(args.model_name_or_path, num_labels=2,
                                            finetuning_task=args.task_name)
        return BertForSequenceClassification.from_pretrained(args.model_name_or_path,
                                                             config=config)
    config = BertConfig.from_json_file(args.config_name)
    config.num_labels = 2
    config.finetuning_task = args.task_name
    return BertForSequenceClassification(config)


def num_train_samples(args, dataset_size):
    """HF's count behind train_samples_per_second (ours uses the same): max_steps x global batch
    when max_steps is set, else dataset size x epochs."""
    if args.max_steps > 0:
        return args.max_steps * args.per_device_train_batch_size
    return dataset_size * args.num_train_epochs


def glue_metrics(task, predictions, labels):
    """evaluate's GLUE metric: accuracy, plus binary F1 of class 1 for MRPC (sklearn's
    f1_score formula; 0 when there is no true or predicted positive), and run_glue.py's
    combined_score (their mean) when there are two."""
    predictions = [int(p) for p in predictions]
    labels = [int(y) for y in labels]
    n = len(labels)
    result = {"accuracy": sum(p == y for p, y in zip(predictions, labels)) / n if n else 0.0}
    if TASKS[task]["f1"]:
        tp = sum(p == 1 and y == 1 for p, y in zip(predictions, labels))
        fp = sum(p == 1 and y == 0 for p, y in zip(predictions, labels))
        fn = sum(p == 0 and y == 1 for p, y in zip(predictions, labels))
        result["f1"] = 2 * tp / (2 * tp + fp + fn) if tp else 0.0
        result["combined_score"] = (result["accuracy"] + result["f1"]) / 2
    return result


def write_result(args, side, train_metrics, eval_metrics, first_step_time, extra=None):
    """The result JSON the bench reads. Missing or non-finite numbers are an error of the side
    (the bench reports the stderr tail), so they are checked here."""
    result = {
        "side": side,
        "train_samples_per_second": float(train_metrics["train_samples_per_second"]),
        "train_runtime": float(train_metrics["train_runtime"]),
        "train_loss": float(train_metrics["train_loss"]),
        "first_optimizer_step_unix_time": first_step_time,
        "eval": {key: float(value) for key, value in eval_metrics.items()},
        "torch_version": torch.__version__,
        "threads": torch.get_num_threads(),
        "device": args.device,
        "bf16": args.bf16,
        "optim": args.optim,
    }
    if args.device == "cuda":
        result["gpu"] = torch.cuda.get_device_name(0)
    result.update(extra or {})
    if first_step_time is None:
        fail(f"{side}: no optimizer step was taken (is the training set empty?)")
    if not math.isfinite(result["train_loss"]):
        fail(f"{side}: train_loss is {result['train_loss']}")
    os.makedirs(os.path.dirname(os.path.abspath(args.result_json)), exist_ok=True)
    with open(args.result_json, "w") as f:
        json.dump(result, f, indent=2)
    print(json.dumps(result))
