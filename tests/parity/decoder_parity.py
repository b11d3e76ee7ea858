"""What the decoder parity tests (GPT-2, Llama) share: ragged batches, our dump through the model
registry, transformers' outputs, and the two directions' loops."""
import os
import sys

import torch
from safetensors import safe_open
from safetensors.torch import load_file, save_file

import bert_parity
from parity_support import binary, run

DUMP = "ctrainer_parity_model_dump"
TOLERANCE = 1e-5
VOCAB, LENGTH, BATCH, PAD = 97, 12, 4, 0

def make_batch(task, num_labels, seed, left=False, no_mask=False, token_types=False,
               ignore_some=False):
    """Ragged sequences padded with PAD (ids never PAD inside a sequence)."""
    g = torch.Generator().manual_seed(seed)
    lengths = [LENGTH, LENGTH - 3, LENGTH - 7, 5] if not no_mask else [LENGTH] * BATCH
    ids = torch.full((BATCH, LENGTH), PAD, dtype=torch.int64)
    mask = torch.zeros((BATCH, LENGTH), dtype=torch.int64)
    for row, n in enumerate(lengths):
        span = slice(LENGTH - n, LENGTH) if left else slice(0, n)
        ids[row, span] = torch.randint(3, VOCAB, (n,), generator=g)
        mask[row, span] = 1
    batch = {"input_ids": ids}
    if not no_mask:
        batch["attention_mask"] = mask
    if token_types:
        batch["token_type_ids"] = torch.randint(0, 2, (BATCH, LENGTH), generator=g)
    if task == "causal_lm":
        labels = ids.masked_fill(mask == 0, -100)
        if ignore_some:
            labels[:, :3] = -100
        batch["labels"] = labels
    elif num_labels == 1:
        batch["labels"] = torch.rand(BATCH, generator=g) * 4
    else:
        batch["labels"] = torch.randint(0, num_labels, (BATCH,), generator=g)
    return batch


def ours(batch, scratch, tag, task, model=None, config=None, save=None):
    inputs = os.path.join(scratch, f"{tag}-inputs.safetensors")
    output = os.path.join(scratch, f"{tag}-ours.safetensors")
    save_file({k: v.contiguous() for k, v in batch.items()}, inputs)
    source = ["--model", model] if model else ["--config", config, "--seed", "5", "--save", save]
    run([binary(DUMP), "--task", task, *source, "--inputs", inputs, "--output", output])
    with safe_open(output, "pt") as f:
        problem_type = f.metadata()["problem_type"]
    return load_file(output), problem_type


def theirs(model, batch):
    model.eval()
    model.zero_grad(set_to_none=True)
    result = model(**batch)
    out = {"logits": result.logits.detach(), "loss": result.loss.detach()}
    result.loss.backward()
    for name, parameter in model.named_parameters():
        out["grad." + name] = (parameter.grad if parameter.grad is not None
                               else torch.zeros_like(parameter))
    return out


def hf_to_ours(scratch, cases, make_model, prepare_folder=None):
    """transformers -> ours for each (tag, task, config overrides, batch options) of `cases`:
    make_model(task, overrides, index) builds the perturbed transformers model;
    prepare_folder(tag, folder) may rewrite the saved folder. Returns (differences, tensors)."""
    differences, compared = [], 0
    for index, (tag, task, overrides, options) in enumerate(cases):
        model = make_model(task, overrides, index)
        folder = os.path.join(scratch, f"hf-{tag}")
        model.save_pretrained(folder)
        if prepare_folder:
            prepare_folder(tag, folder)
        batch = make_batch(task, model.config.num_labels, seed=80 + index, **options)
        mine, problem_type = ours(batch, scratch, tag, task, model=folder)
        reference = theirs(model, batch)
        if len([k for k in reference if k.startswith("grad.")]) != len(list(model.parameters())):
            sys.exit("parity: transformers' gradients were not all collected")
        if task != "causal_lm" and problem_type != model.config.problem_type:
            differences.append(f"{tag}: problem_type {problem_type!r} (ours) vs "
                               f"{model.config.problem_type!r} (transformers)")
        differences += bert_parity.compare(f"transformers -> ours, {tag}", mine, reference,
                                           None, tolerance=TOLERANCE)
        compared += len(reference)
        print(f"parity: transformers -> ours, {tag}: loss {reference['loss'].item():.6f} "
              f"(ours {mine['loss'].item():.6f}), {len(reference)} tensors compared")
    return differences, compared


def ours_to_hf(scratch, cases, check_loaded=None):
    """ours -> transformers for each (tag, task, transformers config, Auto class) of `cases`: our
    new model of the config, saved, loads with no missing / unexpected / mismatched keys and the
    same outputs; check_loaded(tag, model) may add differences. Returns (differences, tensors)."""
    differences, compared = [], 0
    for tag, task, config, auto in cases:
        config_path = os.path.join(scratch, f"{tag}-config.json")
        config.to_json_file(config_path)
        folder = os.path.join(scratch, f"{tag}-saved")
        batch = make_batch(task, 2, seed=7)
        mine, _ = ours(batch, scratch, tag, task, config=config_path, save=folder)
        model, info = auto.from_pretrained(folder, output_loading_info=True)
        for kind in ("missing_keys", "unexpected_keys", "mismatched_keys"):
            if info.get(kind):
                differences.append(f"{tag}: from_pretrained({folder}) {kind}: {sorted(info[kind])}")
        if check_loaded:
            differences += check_loaded(tag, model, folder)
        reference = theirs(model, batch)
        differences += bert_parity.compare(f"ours -> transformers, {tag}", mine, reference, None,
                                           tolerance=TOLERANCE)
        compared += len(reference)
        print(f"parity: ours -> transformers, {tag}: loss {reference['loss'].item():.6f} "
              f"(ours {mine['loss'].item():.6f})")
    return differences, compared
