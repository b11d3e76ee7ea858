"""Helpers of the BERT model parity tests: run our ctrainer_parity_bert_dump on a model folder and
a batch, run the transformers model on the same batch, and compare the results.

Both sides run in fp32 on the CPU in eval mode (dropout off); results must agree within TOLERANCE
(absolute) element by element.
"""
import json
import os

import torch
from safetensors.torch import load_file, safe_open, save_file

from parity_support import binary, run

TOLERANCE = 1e-5
DUMP = "ctrainer_parity_bert_dump"


def ours(model_dir, batch, scratch, tag):
    """Our outputs for `batch` (dict of tensors) with the model in `model_dir`: a dict of tensors
    (last_hidden_state, pooler_output, logits and, with labels, loss and grad.<name>) and the load
    report {"missing_keys": [...], "unexpected_keys": [...], "problem_type": str}."""
    inputs = os.path.join(scratch, f"{tag}-inputs.safetensors")
    output = os.path.join(scratch, f"{tag}-ours.safetensors")
    save_file({k: v.contiguous() for k, v in batch.items()}, inputs)
    run([binary(DUMP), "--model", model_dir, "--inputs", inputs, "--output", output])
    with safe_open(output, "pt") as f:
        metadata = f.metadata()
    report = {"missing_keys": json.loads(metadata["missing_keys"]),
              "unexpected_keys": json.loads(metadata["unexpected_keys"]),
              "problem_type": metadata["problem_type"]}
    return load_file(output), report


def theirs(model, batch):
    """The same outputs from a transformers BertForSequenceClassification (eval mode, fp32)."""
    model.eval()
    model.zero_grad(set_to_none=True)
    features = {k: v for k, v in batch.items() if k != "labels"}
    out = {}
    with torch.no_grad():
        base = model.bert(**features)
        out["last_hidden_state"] = base.last_hidden_state
        out["pooler_output"] = base.pooler_output
    result = model(**batch)
    out["logits"] = result.logits.detach()
    if "labels" in batch:
        result.loss.backward()
        out["loss"] = result.loss.detach()
        for name, parameter in model.named_parameters():
            out["grad." + name] = (parameter.grad if parameter.grad is not None
                                   else torch.zeros_like(parameter))
    return out


def compare(what, mine, reference, attention_mask, keys=None, tolerance=TOLERANCE):
    """Differences (strings) between two dicts of tensors: keys present on one side only, shape
    mismatches and values further apart than `tolerance`. `keys` restricts the comparison.

    last_hidden_state is compared at the attended positions of `attention_mask` only: the rows of
    padding tokens are never used (the pooler reads [CLS], losses ignore them) and are badly
    conditioned in fp32 (for all-MiniLM-L6-v2, transformers' own sdpa and eager attention differ
    by 6e-5 there, both 1e-4 from an fp64 run, against 3e-6 at real tokens)."""
    differences = []
    names = sorted(set(mine) | set(reference)) if keys is None else keys
    for name in names:
        if name not in mine or name not in reference:
            side = "ours" if name not in mine else "transformers"
            differences.append(f"{what}: {name} missing from {side}")
            continue
        a, b = mine[name].float(), reference[name].float()
        if a.shape != b.shape:
            differences.append(f"{what}: {name} shape {list(a.shape)} (ours) vs "
                               f"{list(b.shape)} (transformers)")
            continue
        if name == "last_hidden_state":
            keep = attention_mask.to(torch.bool).unsqueeze(-1).expand_as(a)
            a, b = a[keep], b[keep]
        if a.numel() == 0:
            continue
        error = (a - b).abs().max().item()
        if not error <= tolerance:  # NaN fails too
            index = int((a - b).abs().flatten().argmax())
            differences.append(f"{what}: {name} max |ours - transformers| = {error:.3g} > "
                               f"{tolerance:g} (at flat index {index}: {a.flatten()[index].item():.8g}"
                               f" vs {b.flatten()[index].item():.8g}; max |value| "
                               f"{b.abs().max().item():.3g})")
    return differences


def perturb_parameters(model, scale, seed):
    """Adds N(0, scale) noise to every parameter, so that biases and LayerNorm parameters (zero
    and one after HF's initialisation) are distinct and a mixed-up key would show."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.add_(torch.randn(parameter.shape, generator=generator) * scale)
