"""--report_to tensorboard writes event files that TensorBoard itself reads (issue 18, item 1).

run_glue trains a tiny BERT on an MRPC slice with --report_to tensorboard, logging and
evaluating every few steps and evaluating once more after training (a second event file in the
same folder, as HF's callback reopens its writer). Then:

- every record of every event file has a valid length and masked CRC-32C (checked here with
  TensorBoard's own masked_crc32c), and the first record is the "brain.Event:2" version;
- TensorBoard's EventAccumulator (the reader behind its UI) finds, for every scalar tag, exactly
  the (step, value) pairs of the run's logs (output_dir/trainer_log.jsonl) under HF's tag names
  (train/loss, train/learning_rate, train/grad_norm, train/epoch, eval/loss, eval/accuracy, ...),
  values equal as float32;
- the "args" text is our training_args.json, and "model_config" the model's config.json values;
- with --logging_dir unset, TENSORBOARD_LOGGING_DIR chooses the folder, and without it the
  folder is output_dir/runs/<Mon DD_HH-MM-SS>_<hostname> (HF's default_logdir).
"""
import glob
import json
import os
import re
import socket
import struct
import sys
import tempfile

import numpy as np
from tensorboard.backend.event_processing import event_accumulator
from tensorboard.compat.proto import event_pb2
from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c

from parity_support import EXAMPLES_DATA, binary, fail_if, run

MRPC = os.path.join(EXAMPLES_DATA, "glue", "MRPC")


def run_glue(out, extra, env=None):
    run([binary("run_glue"), "--task_name", "mrpc", "--data_dir", MRPC,
         "--config_name", os.path.join(EXAMPLES_DATA, "configs", "bert-tiny.json"),
         "--tokenizer_name", os.path.join(EXAMPLES_DATA, "vocab", "bert-base-uncased-vocab.txt"),
         "--output_dir", out, "--do_train", "--do_eval", "--max_train_samples", "96",
         "--max_eval_samples", "32", "--max_seq_length", "64",
         "--per_device_train_batch_size", "8", "--learning_rate", "1e-3", "--max_steps", "12",
         "--logging_steps", "3", "--eval_strategy", "steps", "--eval_steps", "6",
         "--save_strategy", "no", "--seed", "3", "--use_cpu", "--disable_tqdm",
         "--report_to", "tensorboard"] + extra,
        env=dict(os.environ, OMP_NUM_THREADS="2", **(env or {})))


def records(path):
    """The records of one TFRecord file, checking every length and CRC."""
    problems, out = [], []
    data = open(path, "rb").read()
    at = 0
    while at < len(data):
        header = data[at:at + 8]
        (length,) = struct.unpack("<Q", header)
        (header_crc,) = struct.unpack("<I", data[at + 8:at + 12])
        if header_crc != masked_crc32c(header):
            problems.append(f"{path}@{at}: length CRC {header_crc:#x} != {masked_crc32c(header):#x}")
        record = data[at + 12:at + 12 + length]
        (record_crc,) = struct.unpack("<I", data[at + 12 + length:at + 16 + length])
        if len(record) != length or record_crc != masked_crc32c(record):
            problems.append(f"{path}@{at}: record CRC or length wrong")
        out.append(record)
        at += 16 + length
    return out, problems


def check_files(folder):
    files = sorted(glob.glob(os.path.join(folder, "events.out.tfevents.*")))
    problems = []
    if len(files) != 2:
        problems.append(f"expected 2 event files (training, then the final evaluation), got {files}")
    name = re.compile(r"events\.out\.tfevents\.\d{10}\." + re.escape(socket.gethostname()) + r"\.\d+\.\d+$")
    for path in files:
        if not name.search(os.path.basename(path)):
            problems.append(f"{path}: not torch's event file name")
        recs, bad = records(path)
        problems += bad
        first = event_pb2.Event.FromString(recs[0]) if recs else None
        if first is None or first.file_version != "brain.Event:2":
            problems.append(f"{path}: first record is not the brain.Event:2 version")
    return problems


def expected_scalars(out):
    # Every log of the run, the final evaluation after training included (trainer_state.json's
    # log_history is saved when training ends, before it, as in HF).
    history = [json.loads(line) for line in open(os.path.join(out, "trainer_log.jsonl"))]
    expected = {}
    for entry in history:
        for key, value in entry.items():
            if key == "step" or not isinstance(value, (int, float)):
                continue
            tag = ("eval/" + key[5:] if key.startswith("eval_")
                   else "test/" + key[5:] if key.startswith("test_") else "train/" + key)
            expected.setdefault(tag, []).append((entry["step"], float(np.float32(value))))
    return expected


def check_scalars(folder, out):
    acc = event_accumulator.EventAccumulator(folder, size_guidance={"scalars": 0, "tensors": 0})
    acc.Reload()
    expected = expected_scalars(out)
    got = {tag: [(e.step, e.value) for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}
    problems = []
    for tag in sorted(set(expected) | set(got)):
        if expected.get(tag) != got.get(tag):
            problems.append(f"{tag}: log_history {expected.get(tag)} != TensorBoard {got.get(tag)}")
    for tag in ["train/loss", "train/learning_rate", "train/grad_norm", "train/epoch",
                "eval/loss", "eval/accuracy", "eval/f1", "train/train_loss"]:
        if tag not in got:
            problems.append(f"{tag}: missing (tags: {sorted(got)})")
    texts = {tag: acc.Tensors(tag) for tag in acc.Tags()["tensors"]}
    args_text = texts.get("args/text_summary")
    if not args_text:
        problems.append(f"no args text (tensor tags: {sorted(texts)})")
    else:
        logged = json.loads(args_text[0].tensor_proto.string_val[0].decode())
        written = json.load(open(os.path.join(out, "training_args.json")))
        if logged != written:
            problems.append("the args text differs from training_args.json")
    config_text = texts.get("model_config/text_summary")
    if not config_text:
        problems.append("no model_config text")
    else:
        logged = json.loads(config_text[0].tensor_proto.string_val[0].decode())
        saved = json.load(open(os.path.join(out, "config.json")))
        # problem_type is set by the first forward (as in transformers), after the text was
        # logged at train begin.
        differing = [k for k in logged
                     if k in saved and logged[k] != saved[k] and k != "problem_type"]
        if "hidden_size" not in logged or differing:
            problems.append(f"model_config text vs config.json: differing {differing}")
    return problems, sum(len(v) for v in got.values()), sorted(got)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        out, folder = os.path.join(tmp, "out"), os.path.join(tmp, "tb")
        run_glue(out, ["--logging_dir", folder])
        fail_if(check_files(folder), "event file framing (lengths, masked CRC-32C, version record)")
        problems, count, tags = check_scalars(folder, out)
        fail_if(problems, f"{count} scalars of {len(tags)} tags read by TensorBoard vs log_history")

        env_out, env_folder = os.path.join(tmp, "env_out"), os.path.join(tmp, "from_env")
        run_glue(env_out, ["--max_steps", "3", "--eval_strategy", "no"],
                 env={"TENSORBOARD_LOGGING_DIR": env_folder})
        default_out = os.path.join(tmp, "default_out")
        run_glue(default_out, ["--max_steps", "3", "--eval_strategy", "no"])
        runs = glob.glob(os.path.join(default_out, "runs", "*"))
        stamp = re.compile(r"^[A-Z][a-z]{2}\d{2}_\d{2}-\d{2}-\d{2}_" + re.escape(socket.gethostname()) + "$")
        fail_if([p for p in [
            None if glob.glob(os.path.join(env_folder, "events.out.tfevents.*"))
            else f"TENSORBOARD_LOGGING_DIR: no event file in {env_folder}",
            None if not os.path.exists(os.path.join(env_out, "runs"))
            else "TENSORBOARD_LOGGING_DIR set, yet output_dir/runs was written",
            None if len(runs) == 1 and stamp.match(os.path.basename(runs[0]))
            else f"default folder: expected output_dir/runs/<Mon DD_HH-MM-SS>_<host>, got {runs}",
        ] if p], "the logging folder's choice (--logging_dir, TENSORBOARD_LOGGING_DIR, default)")


if __name__ == "__main__":
    sys.exit(main())
