"""What parity.run_clm_vs_hf and parity.run_mlm_vs_hf compare: our run's output_dir (trainer
state, train and eval results) against HF Trainer's log history and evaluate() metrics."""
import json
import math
import os


def relative(a, b):
    return abs(a - b) / max(abs(b), 1e-12)


def read_our_run(output_dir):
    """(logged steps, eval_results.json, train_results.json) of one of our runs."""
    with open(os.path.join(output_dir, "trainer_state.json")) as f:
        steps = [e for e in json.load(f)["log_history"] if "loss" in e]
    with open(os.path.join(output_dir, "eval_results.json")) as f:
        evaluation = json.load(f)
    with open(os.path.join(output_dir, "train_results.json")) as f:
        train = json.load(f)
    return steps, evaluation, train


def compare_runs(tag, output_dir, trainer, n_train, n_eval, steps, rtol):
    """Differences between our run in `output_dir` and HF's `trainer` (trained, not yet
    evaluated): sample counts, every step's loss / grad_norm / learning_rate, eval_loss and
    perplexity. Prints a summary line."""
    our_steps, our_eval, our_train = read_our_run(output_dir)
    hf_steps = [e for e in trainer.state.log_history if "loss" in e]
    hf_eval = trainer.evaluate()
    hf_eval["perplexity"] = math.exp(hf_eval["eval_loss"])
    differences = []
    if our_train["train_samples"] != n_train:
        differences.append(f"{tag}: train_samples {our_train['train_samples']} != {n_train}")
    if our_eval["eval_samples"] != n_eval:
        differences.append(f"{tag}: eval_samples {our_eval['eval_samples']} != {n_eval}")
    if len(our_steps) != steps or len(hf_steps) != steps:
        differences.append(f"{tag}: logged steps: ours {len(our_steps)}, HF {len(hf_steps)}")
    for mine, hf in zip(our_steps, hf_steps):
        for key in ("loss", "grad_norm", "learning_rate"):
            if key not in mine or relative(mine[key], hf[key]) > rtol:
                differences.append(f"{tag}: step {hf['step']}: {key} {mine.get(key)} != {hf[key]}")
    for key in ("eval_loss", "perplexity"):
        if relative(our_eval[key], hf_eval[key]) > rtol:
            differences.append(f"{tag}: {key} {our_eval[key]} != {hf_eval[key]}")
    print(f"parity: {tag}: {n_train} train / {n_eval} eval examples; loss step 1 "
          f"{hf_steps[0]['loss']:.4f} -> step {steps} {hf_steps[-1]['loss']:.4f} (HF), "
          f"{our_steps[-1]['loss'] if our_steps else math.nan:.4f} (ours); perplexity "
          f"{our_eval['perplexity']:.3f} (ours) {hf_eval['perplexity']:.3f} (HF)")
    return differences
