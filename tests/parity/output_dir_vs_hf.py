"""A run_glue output_dir is a transformers model (issue 14, item 4d(ii)).

run_glue trains a small BERT from scratch on an MRPC slice (our own initialisation and
config.json), evaluates on a dev slice and predicts a test slice (predict_results_mrpc.txt). Then
transformers loads that folder with AutoModelForSequenceClassification and AutoTokenizer, exactly
as a user would, and must:

- load every weight (no missing, unexpected or mismatched keys);
- predict, on the same test slice tokenized by the AutoTokenizer of the folder (HF run_glue's
  preprocessing: pairs, truncation to 128), the labels predict_results_mrpc.txt holds, row by
  row (GLUE's submission format: `index<TAB>0|1`, see README);
- reproduce eval_results.json on the dev slice: accuracy and F1 exactly, eval_loss within 1e-4
  relative.

The predictions must contain both classes, so that agreeing on them means something.
"""
import json
import os
import sys
import tempfile
import time

import torch
import transformers
from transformers import AutoModelForSequenceClassification, AutoTokenizer

from parity_support import EXAMPLES_DATA, binary, fail_if, run

RTOL = 1e-4
MRPC = os.path.join(EXAMPLES_DATA, "glue", "MRPC")
THREADS = 2
N_TRAIN, N_EVAL, N_PREDICT = 512, 200, 300
MRPC_LABEL_NAMES = ["not_equivalent", "equivalent"]  # GLUE label value = position


def read_tsv(split, limit, text_columns, label_column):
    rows = []
    with open(os.path.join(MRPC, split + ".tsv"), encoding="utf-8-sig") as f:
        next(f)
        for line in f:
            cols = line.rstrip("\n").split("\t")
            rows.append((cols[text_columns[0]], cols[text_columns[1]], cols[label_column]))
            if len(rows) == limit:
                break
    return rows


@torch.no_grad()
def logits_of(model, tokenizer, rows, batch_size=32):
    out = []
    for first in range(0, len(rows), batch_size):
        chunk = rows[first:first + batch_size]
        enc = tokenizer([r[0] for r in chunk], [r[1] for r in chunk], truncation=True,
                        max_length=128, padding=True, return_tensors="pt")
        out.append(model(**enc).logits)
    return torch.cat(out)


def main():
    torch.set_num_threads(THREADS)
    transformers.logging.set_verbosity_error()
    differences = []
    with tempfile.TemporaryDirectory(prefix="ctrainer_parity_output_dir_") as tmp:
        out = os.path.join(tmp, "out")
        started = time.monotonic()
        run([binary("run_glue"), "--task_name", "mrpc", "--data_dir", MRPC,
             "--config_name", os.path.join(EXAMPLES_DATA, "configs", "bert-tiny.json"),
             "--tokenizer_name", os.path.join(EXAMPLES_DATA, "vocab", "bert-base-uncased-vocab.txt"),
             "--output_dir", out, "--cache_dir", os.path.join(tmp, "cache"),
             "--do_train", "--do_eval", "--do_predict", "--max_train_samples", str(N_TRAIN),
             "--max_eval_samples", str(N_EVAL), "--max_predict_samples", str(N_PREDICT),
             "--max_seq_length", "128", "--pad_to_max_length", "false",
             "--per_device_train_batch_size", "16", "--per_device_eval_batch_size", "64",
             "--learning_rate", "1e-3", "--num_train_epochs", "3", "--warmup_steps", "10",
             "--weight_decay", "0.01", "--save_strategy", "no", "--logging_steps", "20",
             "--seed", "7", "--use_cpu", "--report_to", "none", "--disable_tqdm"],
            env=dict(os.environ, OMP_NUM_THREADS=str(THREADS)))
        print(f"parity: run_glue train + eval + predict {time.monotonic() - started:.1f} s")

        model, info = AutoModelForSequenceClassification.from_pretrained(
            out, output_loading_info=True)
        model.eval()
        for kind in ("missing_keys", "unexpected_keys", "mismatched_keys", "error_msgs"):
            if info.get(kind):
                differences.append(f"from_pretrained({out}): {kind} {info[kind]}")
        tokenizer = AutoTokenizer.from_pretrained(out)
        to_glue = [MRPC_LABEL_NAMES.index(model.config.id2label[i].lower())
                   for i in range(model.config.num_labels)]

        # predict_results_mrpc.txt against the transformers model's predictions.
        test = read_tsv("test", N_PREDICT, (3, 4), 0)
        predicted = [to_glue[i] for i in logits_of(model, tokenizer, test).argmax(-1).tolist()]
        with open(os.path.join(out, "predict_results_mrpc.txt")) as f:
            lines = f.read().splitlines()
        if lines[0] != "index\tprediction":
            differences.append(f"predict_results_mrpc.txt header {lines[0]!r}")
        expected = [f"{i}\t{label}" for i, label in enumerate(predicted)]
        if len(lines) - 1 != len(expected):
            differences.append(f"predict_results_mrpc.txt has {len(lines) - 1} rows, "
                               f"expected {len(expected)}")
        for ours, theirs in zip(lines[1:], expected):
            if ours != theirs:
                differences.append(f"prediction: ours {ours!r} vs transformers {theirs!r}")
        counts = [predicted.count(c) for c in (0, 1)]
        print(f"parity: test predictions per class {counts}")
        if min(counts) == 0:
            differences.append(f"the model predicts one class only ({counts}): the comparison "
                               "is too weak; train longer or change the slice")

        # eval_results.json against the transformers model on the dev slice.
        dev = read_tsv("dev", N_EVAL, (3, 4), 0)
        logits = logits_of(model, tokenizer, dev)
        labels = torch.tensor([int(r[2]) for r in dev])
        glue_ids = torch.tensor([to_glue[i] for i in logits.argmax(-1).tolist()])
        model_labels = torch.tensor([to_glue.index(int(r[2])) for r in dev])
        eval_loss = torch.nn.functional.cross_entropy(logits, model_labels).item()
        tp = int(((glue_ids == 1) & (labels == 1)).sum())
        fp = int(((glue_ids == 1) & (labels == 0)).sum())
        fn = int(((glue_ids == 0) & (labels == 1)).sum())
        from sklearn.metrics import f1_score
        theirs = {"eval_accuracy": float((glue_ids == labels).double().mean()),
                  "eval_f1": float(f1_score(labels.numpy(), glue_ids.numpy()))}
        with open(os.path.join(out, "eval_results.json")) as f:
            ours = json.load(f)
        for key, value in theirs.items():
            if ours.get(key) != value:
                differences.append(f"{key}: ours {ours.get(key)!r} vs transformers {value!r}")
        relative = abs(ours["eval_loss"] - eval_loss) / abs(eval_loss)
        print(f"parity: eval_loss ours {ours['eval_loss']:.8f} transformers {eval_loss:.8f} "
              f"(relative {relative:.3g}); tp {tp} fp {fp} fn {fn}")
        if not relative <= RTOL:
            differences.append(f"eval_loss: ours {ours['eval_loss']!r} vs transformers "
                               f"{eval_loss!r} (relative {relative:.3g})")
    fail_if(differences, "a run_glue output_dir loaded by transformers")


if __name__ == "__main__":
    sys.exit(main())
