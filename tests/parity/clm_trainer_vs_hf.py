"""Training parity on a causal LM: our Trainer against transformers' Trainer (issue 33, item 2).

A tiny Llama (grouped-query attention, untied head), randomly initialised and saved here with
save_pretrained, trains for 60 optimizer steps on both sides from the same weights, on the same
36 token sequences of ragged lengths (right padding masked and labelled -100) in the same order
(train_sampling_strategy sequential), with gradient accumulation 2 over 9 micro-batches per
epoch (every epoch ends with a window of one micro-batch), AdamW fused with weight decay, linear
warmup and decay, and clipping. transformers 5.24 normalises the causal-LM loss by
num_items_in_batch, the target tokens (labels[..., 1:] not -100) of the whole window; so must we.

Checks, within 1e-4 relative: every step's loss, grad_norm and learning_rate (epoch and step
exactly), and again with label_smoothing_factor 0.1 (HF's LabelSmoother on the shifted labels,
divided by the window's num_items_in_batch) and with neftune_noise_alpha 5 (noise on the input
embeddings drawn from the global generator, as transformers' hook draws it). And that the check can fail: HF's Trainer with model_accepts_loss_kwargs = False
(each micro-batch's own mean, divided by the accumulation steps: the normalisation of
classifiers) logs losses that differ from ours beyond the tolerance on most steps.
"""
import json
import math
import os
import sys
import tempfile

import torch
import transformers
from safetensors.torch import save_file
from transformers import (LlamaConfig, LlamaForCausalLM, Trainer, TrainingArguments,
                          default_data_collator)

from parity_support import RowDataset, binary, fail_if, run

RTOL = 1e-4
THREADS = 2
N_EXAMPLES, LENGTH, VOCAB = 36, 16, 64
MAX_STEPS = 60
SHARED = dict(per_device_train_batch_size=4, gradient_accumulation_steps=2, max_steps=MAX_STEPS,
              learning_rate=3e-3, weight_decay=0.01, warmup_steps=5, lr_scheduler_type="linear",
              optim="adamw_torch_fused", max_grad_norm=2.0, train_sampling_strategy="sequential",
              logging_steps=1, save_strategy="no", report_to="none", seed=42)


def make_model(folder):
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=VOCAB, hidden_size=32, intermediate_size=48,
                         num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                         max_position_embeddings=32, tie_word_embeddings=False)
    LlamaForCausalLM(config).save_pretrained(folder)


def make_rows():
    generator = torch.Generator().manual_seed(1)
    lengths = torch.randint(3, LENGTH + 1, (N_EXAMPLES,), generator=generator)
    ids = torch.randint(1, VOCAB, (N_EXAMPLES, LENGTH), generator=generator)
    mask = torch.arange(LENGTH).unsqueeze(0) < lengths.unsqueeze(1)
    ids = ids.masked_fill(~mask, 0)
    return {"input_ids": ids, "attention_mask": mask.long(),
            "labels": ids.masked_fill(~mask, -100)}


def hf_trainer(init, output_dir, rows, **settings):
    args = TrainingArguments(output_dir=output_dir, use_cpu=True, disable_tqdm=True,
                             dataloader_num_workers=0, **SHARED, **settings)
    model = LlamaForCausalLM.from_pretrained(init)
    return Trainer(model=model, args=args, train_dataset=RowDataset(rows),
                   data_collator=default_data_collator)


def flag_list(settings):
    flags = []
    for key, value in settings.items():
        flags += [f"--{key}", str(value)]
    return flags


def step_entries(log_history):
    return [entry for entry in log_history if "loss" in entry]


def relative(a, b):
    return abs(a - b) / max(abs(b), 1e-12)


def train_ours(tmp, init, data, tag, settings=None):
    log = os.path.join(tmp, f"{tag}.json")
    run([binary("ctrainer_parity_train_lm"), "--model_dir", init, "--data", data,
         "--log_history_file", log, "--output_dir", os.path.join(tmp, tag),
         "--use_cpu", "true", "--disable_tqdm", "true"] + flag_list({**SHARED, **(settings or {})}),
        env=dict(os.environ, OMP_NUM_THREADS=str(THREADS)))
    with open(log) as f:
        return step_entries(json.load(f))


def compare_steps(what, ours, theirs):
    """Every step's epoch and step exactly, loss, grad_norm and learning_rate within RTOL."""
    differences = []
    if len(ours) != MAX_STEPS or len(theirs) != MAX_STEPS:
        differences.append(f"{what}logged steps: ours {len(ours)}, HF {len(theirs)}, "
                           f"expected {MAX_STEPS}")
    for mine, hf in zip(ours, theirs):
        for key in ("epoch", "step"):
            if mine.get(key) != hf.get(key):
                differences.append(f"{what}step {hf['step']}: {key} {mine.get(key)} != "
                                   f"{hf.get(key)}")
        for key in ("loss", "grad_norm", "learning_rate"):
            if key not in mine or relative(mine[key], hf[key]) > RTOL:
                differences.append(f"{what}step {hf['step']}: {key} {mine.get(key)} != {hf[key]}")
    worst = max((relative(mine[key], hf[key]) for mine, hf in zip(ours, theirs)
                 for key in ("loss", "grad_norm") if key in mine), default=math.nan)
    clipped = sum(e["grad_norm"] > SHARED["max_grad_norm"] for e in theirs)
    print(f"parity: {what}largest relative difference of loss and grad_norm: {worst:.2e}; "
          f"{len(theirs)} steps, {clipped} clipped; first loss ours "
          f"{ours[0]['loss'] if ours else math.nan:.6f}, HF "
          f"{theirs[0]['loss'] if theirs else math.nan:.6f}")
    return differences


def main():
    torch.set_num_threads(THREADS)
    transformers.logging.set_verbosity_warning()
    differences = []
    with tempfile.TemporaryDirectory(prefix="ctrainer_parity_clm_") as tmp:
        init = os.path.join(tmp, "init")
        make_model(init)
        rows = make_rows()
        data = os.path.join(tmp, "rows.safetensors")
        save_file({k: v.contiguous() for k, v in rows.items()}, data)

        ours = train_ours(tmp, init, data, "ours")
        trainer = hf_trainer(init, os.path.join(tmp, "hf"), rows)
        if not trainer.model_accepts_loss_kwargs:
            sys.exit("parity: transformers no longer passes num_items_in_batch to Llama")
        trainer.train()
        differences += compare_steps("", ours, step_entries(trainer.state.log_history))

        # Label smoothing: HF's LabelSmoother on the shifted labels, over the window's tokens.
        smoothing = {"label_smoothing_factor": 0.1}
        smoothed = train_ours(tmp, init, data, "ours_smoothed", smoothing)
        smoothed_hf = hf_trainer(init, os.path.join(tmp, "hf_smoothed"), rows, **smoothing)
        smoothed_hf.train()
        differences += compare_steps("label smoothing 0.1: ", smoothed,
                                     step_entries(smoothed_hf.state.log_history))
        if all(relative(a["loss"], b["loss"]) <= RTOL for a, b in zip(smoothed, ours)):
            differences.append("label smoothing 0.1 left the losses unchanged")

        # NEFTune: uniform noise on the input embeddings in training, from the global generator.
        neftune = {"neftune_noise_alpha": 5.0}
        noisy = train_ours(tmp, init, data, "ours_neftune", neftune)
        noisy_hf = hf_trainer(init, os.path.join(tmp, "hf_neftune"), rows, **neftune)
        # torch's DataLoader draws its workers' base seed from the global generator each time an
        # epoch's iterator starts (one int64 draw, even with no workers); ours has no worker seed
        # to draw. The reference loader draws it from a generator of its own, so that the global
        # stream NEFTune's noise comes from is the same on both sides.
        make_loader = noisy_hf.get_train_dataloader

        def loader_with_its_own_generator():
            loader = make_loader()  # accelerate's DataLoaderShard around torch's DataLoader
            getattr(loader, "base_dataloader", loader).generator = torch.Generator().manual_seed(0)
            return loader

        noisy_hf.get_train_dataloader = loader_with_its_own_generator
        noisy_hf.train()
        differences += compare_steps("neftune_noise_alpha 5: ", noisy,
                                     step_entries(noisy_hf.state.log_history))
        if all(relative(a["loss"], b["loss"]) <= RTOL for a, b in zip(noisy, ours)):
            differences.append("neftune_noise_alpha 5 left the losses unchanged")

        # The guard: the normalisation by micro-batch means trains differently.
        per_batch = hf_trainer(init, os.path.join(tmp, "hf_per_batch"), rows)
        per_batch.model_accepts_loss_kwargs = False
        per_batch.train()
        apart = sum(relative(mine["loss"], other["loss"]) > RTOL
                    for mine, other in zip(ours, step_entries(per_batch.state.log_history)))
        print(f"parity: per-micro-batch means differ from ours on {apart} of {len(ours)} steps")
        if apart < len(ours) // 2:
            differences.append(f"the rows are not ragged enough: per-micro-batch means differ "
                               f"beyond {RTOL} on only {apart} steps")
    fail_if(differences, f"{MAX_STEPS} steps of a tiny Llama against HF Trainer")


if __name__ == "__main__":
    main()
