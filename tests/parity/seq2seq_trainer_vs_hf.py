"""Seq2SeqTrainer parity on a tiny T5: ours against transformers' Seq2SeqTrainer (issue 34, item 3).

A random tiny T5 (dropout 0, so training draws no numbers) is saved with save_pretrained (its
generation_config.json included) and trained by both trainers from the same weights, on the same
rows (sources of ragged length, right-padded and masked; targets of ragged length ending in eos,
padded with -100; the target is the source's first tokens, so the model learns something) in the
same order, with AdamW, warmup and decay, and clipping. Then evaluate() with predict_with_generate
(generation_num_beams and generation_max_length from the arguments) and predict() with the call's
own settings (transformers' gen_kwargs). The runs (RUNS): 30 steps with beam search in evaluate;
--generation_config replacing the model's generation config with a shorter max_length (rows that
reach it are not padded, shorter ones are padded to it); our 2 x 2 accumulation against
transformers' batch of 4 (and transformers' own 2 x 2, which is not the large batch for T5).
sortish_sampler is not compared: transformers 5.24 accepts it and ignores it (unit tests check
ours).

Checks: every step's epoch and step exactly and loss, grad_norm and learning_rate within 1e-4
relative; the generated ids (padded as transformers pads them) and the labels exactly; gen_len,
token_accuracy and the predictions' width exactly, eval and test loss within 1e-5 relative (12
evaluation rows: whole batches, see docs/features.md on eval_loss).
"""
import json
import math
import os
import tempfile

import numpy as np
import torch
import transformers
from safetensors.torch import save_file
from transformers import (GenerationConfig, Seq2SeqTrainer, Seq2SeqTrainingArguments, T5Config,
                          T5ForConditionalGeneration, default_data_collator)

from parity_support import RowDataset, binary, fail_if, run

RTOL = 1e-4
THREADS = 2
VOCAB, PAD, EOS = 48, 0, 1
SOURCE_LENGTH, TARGET_LENGTH = 10, 7
MAX_STEPS = 30
SHARED = dict(per_device_train_batch_size=4, per_device_eval_batch_size=4, max_steps=MAX_STEPS,
              learning_rate=1e-2, weight_decay=0.01, warmup_steps=3, lr_scheduler_type="linear",
              optim="adamw_torch_fused", max_grad_norm=1.0, train_sampling_strategy="sequential",
              logging_steps=1, save_strategy="no", report_to="none", seed=42,
              predict_with_generate=True)
RUNS = {
    # evaluate: beam search 2, max_length 12 (padded to the config's 20); predict: greedy,
    # max_new_tokens 5.
    "beams": (dict(generation_num_beams=2, generation_max_length=12), {},
              dict(num_beams=1, max_new_tokens=5)),
    # The model's generation config replaced: max_length 6 pads nothing that reaches 9.
    "generation_config": (dict(generation_max_length=9, max_steps=8), {}, dict(num_beams=3)),
    # Accumulation: our 2 x 2 against transformers' batch of 4. Our T5 loss is token-level over
    # the window (sum / the window's label tokens), so it equals the large batch; transformers
    # 5.24 passes num_items_in_batch to T5 but T5's loss ignores it and the Trainer then skips
    # the division by the accumulation steps, so its own 2 x 2 logs twice the loss (checked).
    "accumulation": (dict(per_device_train_batch_size=2, gradient_accumulation_steps=2,
                          max_steps=12), dict(per_device_train_batch_size=4), {}),
}


def make_model(folder):
    torch.manual_seed(0)
    config = T5Config(vocab_size=VOCAB, d_model=32, d_kv=8, d_ff=48, num_layers=2,
                      num_decoder_layers=2, num_heads=4, relative_attention_num_buckets=8,
                      relative_attention_max_distance=16, dropout_rate=0.0, pad_token_id=PAD,
                      eos_token_id=EOS, decoder_start_token_id=PAD)
    T5ForConditionalGeneration(config).save_pretrained(folder)


def make_rows(count, seed):
    generator = torch.Generator().manual_seed(seed)
    source_lengths = torch.randint(3, SOURCE_LENGTH + 1, (count,), generator=generator)
    ids = torch.randint(2, VOCAB, (count, SOURCE_LENGTH), generator=generator)
    mask = torch.arange(SOURCE_LENGTH).unsqueeze(0) < source_lengths.unsqueeze(1)
    labels = torch.full((count, TARGET_LENGTH), -100)
    for row in range(count):
        # The target repeats the source's first tokens, then eos.
        length = int(torch.randint(1, min(int(source_lengths[row]), TARGET_LENGTH - 1) + 1, (1,),
                                   generator=generator))
        labels[row, :length] = ids[row, :length]
        labels[row, length] = EOS
    return {"input_ids": ids.masked_fill(~mask, PAD), "attention_mask": mask.long(),
            "labels": labels}


def token_metrics(prediction):
    """gen_len, token_accuracy and the predictions' width, as train_seq2seq.cpp computes them."""
    preds = np.asarray(prediction.predictions, dtype=np.int64)
    labels = np.asarray(prediction.label_ids, dtype=np.int64)
    gen_len = float(np.mean(((preds != PAD) & (preds != -100)).sum(axis=1)))
    width = min(labels.shape[1], preds.shape[1] - 1)
    target = labels[:, :width]
    scored = (target != -100) & (target != PAD)
    hits = (preds[:, 1:1 + width] == target) & scored
    return {"gen_len": gen_len, "token_accuracy": float(hits.sum()) / max(1.0, float(scored.sum())),
            "width": float(preds.shape[1])}


def flag_list(settings):
    flags = []
    for key, value in settings.items():
        flags += [f"--{key}", str(value)]
    return flags


def run_ours(tmp, init, train, evaluation, tag, settings, call):
    result = os.path.join(tmp, f"{tag}.json")
    call_flags = []
    for key, value in call.items():
        call_flags += [f"--predict_{key}", str(value)]
    run([binary("ctrainer_parity_train_seq2seq"), "--model_dir", init, "--train_data", train,
         "--eval_data", evaluation, "--result_file", result, "--output_dir",
         os.path.join(tmp, tag), "--use_cpu", "true", "--disable_tqdm", "true"] +
        flag_list(settings) + call_flags, env=dict(os.environ, OMP_NUM_THREADS=str(THREADS)))
    with open(result) as f:
        return json.load(f)


def run_hf(tmp, init, train_rows, eval_rows, tag, settings, call):
    args = Seq2SeqTrainingArguments(output_dir=os.path.join(tmp, f"hf_{tag}"), use_cpu=True,
                                    disable_tqdm=True, dataloader_num_workers=0, **settings)
    model = T5ForConditionalGeneration.from_pretrained(init)
    trainer = Seq2SeqTrainer(model=model, args=args, train_dataset=RowDataset(train_rows),
                             eval_dataset=RowDataset(eval_rows),
                             data_collator=default_data_collator, compute_metrics=token_metrics)
    trainer.train()
    eval_metrics = trainer.evaluate()
    predicted = trainer.predict(RowDataset(eval_rows), **call)
    return {"log_history": trainer.state.log_history, "eval_metrics": eval_metrics,
            "predict_metrics": predicted.metrics,
            "predictions": np.asarray(predicted.predictions).tolist(),
            "label_ids": np.asarray(predicted.label_ids).tolist()}


def relative(a, b):
    return abs(a - b) / max(abs(b), 1e-12)


def compare(tag, steps, ours, theirs):
    differences = []
    mine = [e for e in ours["log_history"] if "loss" in e]
    hf = [e for e in theirs["log_history"] if "loss" in e]
    if len(mine) != steps or len(hf) != steps:
        differences.append(f"{tag}: logged steps ours {len(mine)}, HF {len(hf)}, expected {steps}")
    for a, b in zip(mine, hf):
        for key in ("epoch", "step"):
            if a.get(key) != b.get(key):
                differences.append(f"{tag} step {b['step']}: {key} {a.get(key)} != {b.get(key)}")
        for key in ("loss", "grad_norm", "learning_rate"):
            if key not in a or relative(a[key], b[key]) > RTOL:
                differences.append(f"{tag} step {b['step']}: {key} {a.get(key)} != {b[key]}")
    for which, prefix in (("eval_metrics", "eval"), ("predict_metrics", "test")):
        for key in ("gen_len", "token_accuracy", "width"):
            name = f"{prefix}_{key}"
            if ours[which].get(name) != theirs[which].get(name):
                differences.append(f"{tag}: {name} ours {ours[which].get(name)}, HF "
                                   f"{theirs[which].get(name)}")
        name = f"{prefix}_loss"
        if name not in ours[which] or relative(ours[which][name], theirs[which][name]) > 1e-5:
            differences.append(f"{tag}: {name} ours {ours[which].get(name)}, HF "
                               f"{theirs[which][name]}")
    for key in ("predictions", "label_ids"):
        if ours[key] != theirs[key]:
            differences.append(f"{tag}: {key} differ:\n  ours {ours[key][:3]}\n  HF   "
                               f"{theirs[key][:3]}")
    widths = sorted({len(row) for row in theirs["predictions"]})
    worst = max((relative(a[key], b[key]) for a, b in zip(mine, hf)
                 for key in ("loss", "grad_norm") if key in a), default=math.nan)
    print(f"parity: {tag}: {len(hf)} steps, largest relative difference of loss and grad_norm "
          f"{worst:.2e}; first loss {hf[0]['loss'] if hf else math.nan:.5f}, last "
          f"{hf[-1]['loss'] if hf else math.nan:.5f}; eval {theirs['eval_metrics']}; "
          f"predict {theirs['predict_metrics']}; prediction widths {widths}")
    return differences


def ours_first_loss(tmp):
    with open(os.path.join(tmp, "accumulation.json")) as f:
        return [e["loss"] for e in json.load(f)["log_history"] if "loss" in e][0]


def main():
    torch.set_num_threads(THREADS)
    transformers.logging.set_verbosity_error()
    differences = []
    with tempfile.TemporaryDirectory(prefix="ctrainer_parity_seq2seq_trainer_") as tmp:
        init = os.path.join(tmp, "init")
        make_model(init)
        train_rows, eval_rows = make_rows(24, 1), make_rows(12, 2)
        train = os.path.join(tmp, "train.safetensors")
        evaluation = os.path.join(tmp, "eval.safetensors")
        save_file({k: v.contiguous() for k, v in train_rows.items()}, train)
        save_file({k: v.contiguous() for k, v in eval_rows.items()}, evaluation)
        generation_file = os.path.join(tmp, "short_generation.json")
        config = GenerationConfig(max_length=6, decoder_start_token_id=PAD, pad_token_id=PAD,
                                  eos_token_id=EOS)
        with open(generation_file, "w") as f:
            f.write(config.to_json_string())
        for tag, (settings, hf_only, call) in RUNS.items():
            settings = {**SHARED, **settings}
            if tag == "generation_config":
                settings["generation_config"] = generation_file
            ours = run_ours(tmp, init, train, evaluation, tag, settings, call)
            theirs = run_hf(tmp, init, train_rows, eval_rows, tag,
                            {**settings, "gradient_accumulation_steps": 1, **hf_only}
                            if hf_only else settings, call)
            differences += compare(tag, settings["max_steps"], ours, theirs)
        # transformers' own accumulation of T5 losses is not the large batch (see RUNS).
        settings = {**SHARED, **RUNS["accumulation"][0]}
        accumulated = run_hf(tmp, init, train_rows, eval_rows, "hf_accumulated", settings, {})
        first = [e["loss"] for e in accumulated["log_history"] if "loss" in e][0]
        print(f"parity: transformers' own 2 x 2 accumulation logs a first loss of {first:.5f}")
        if relative(first, ours_first_loss(tmp)) < 0.5:
            differences.append("transformers' T5 accumulation now matches the large batch: "
                               "revisit docs/seq2seq.md")
    fail_if(differences, "Seq2SeqTrainer on a tiny T5 against transformers' Seq2SeqTrainer")


if __name__ == "__main__":
    main()
