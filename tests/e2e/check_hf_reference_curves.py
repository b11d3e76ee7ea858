#!/usr/bin/env python3
"""benchmarks/reference/hf_trainer_glue.py --logging_steps 1 for 3 steps on a 64-row MRPC slice:
its result JSON must hold HF's log_history with the loss, grad_norm and learning_rate of steps 1,
2 and 3 (the curves ctrainer-plot draws beside run_glue's, see benchmarks/results/vs_hf.md).
Exit status 0 when it does, 1 with the reason. Run by the tests' venv Python (transformers).

Usage: check_hf_reference_curves.py SOURCE_DIR RESULT_JSON
"""
import json
import pathlib
import subprocess
import sys


def main():
    source, result = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
    data = source / "examples" / "data"
    command = [sys.executable, str(source / "benchmarks" / "reference" / "hf_trainer_glue.py"),
               "--task_name", "mrpc", "--data_dir", str(data / "glue" / "MRPC"),
               "--config_name", str(data / "configs" / "bert-h128-l2-a4.json"),
               "--tokenizer_name", str(data / "vocab" / "bert-base-uncased-vocab.txt"),
               "--max_seq_length", "32", "--max_train_samples", "64", "--max_eval_samples", "16",
               "--per_device_train_batch_size", "8", "--max_steps", "3", "--logging_steps", "1",
               "--threads", "1", "--output_dir", str(result.parent / "hf_reference_curves"),
               "--result_json", str(result)]
    run = subprocess.run(command, capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit(f"{' '.join(command)} failed ({run.returncode}):\n{run.stderr[-3000:]}")
    history = json.loads(result.read_text())["log_history"]
    keys = ("loss", "grad_norm", "learning_rate", "step")
    steps = [entry["step"] for entry in history if all(key in entry for key in keys)]
    if steps != [1, 2, 3]:
        sys.exit(f"{result}: log_history logs the loss at steps {steps}, expected [1, 2, 3]")
    print(f"{result}: log_history holds the loss, grad_norm and learning_rate of steps 1-3")


if __name__ == "__main__":
    main()
