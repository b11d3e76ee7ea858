"""What the decoder parity tests (GPT-2, Llama) share: ragged batches, our dump through the model
registry, transformers' outputs, and the two directions' loops."""
import inspect
import os
import shutil
import sys

import torch
from safetensors import safe_open
from safetensors.torch import load_file, save_file

import bert_parity
from bert_model_parity import encode, mrpc_pairs
from parity_support import EXAMPLES_DATA, binary, run

DUMP = "ctrainer_parity_model_dump"
TOLERANCE = 1e-5
VOCAB, LENGTH, BATCH, PAD = 97, 12, 4, 0

def make_batch(task, num_labels, seed, left=False, no_mask=False, token_types=False,
               ignore_some=False, packed=False):
    """Ragged sequences padded with PAD (ids never PAD inside a sequence); with `packed`, the
    same sequences as DataCollatorWithFlattening packs them: one row, no padding and no
    attention_mask, position_ids restarting at 0 and label -100 at each sequence's start."""
    if packed:
        padded = make_batch(task, num_labels, seed)
        rows = [padded["input_ids"][r][padded["attention_mask"][r] == 1] for r in range(BATCH)]
        labels = [torch.cat([torch.tensor([-100]), row[1:]]) for row in rows]
        return {"input_ids": torch.cat(rows).unsqueeze(0), "labels": torch.cat(labels).unsqueeze(0),
                "position_ids": torch.cat([torch.arange(len(row)) for row in rows]).unsqueeze(0)}
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
    elif task == "masked_lm":  # a third of the real tokens are targets, as after masking
        keep = (torch.rand(ids.shape, generator=g) < 0.33) & (mask == 1)
        batch["labels"] = ids.masked_fill(~keep, -100)
    elif num_labels == 1:
        batch["labels"] = torch.rand(BATCH, generator=g) * 4
    else:
        batch["labels"] = torch.randint(0, num_labels, (BATCH,), generator=g)
    return batch


def ours(batch, scratch, tag, task, model=None, config=None, save=None, extra=()):
    inputs = os.path.join(scratch, f"{tag}-inputs.safetensors")
    output = os.path.join(scratch, f"{tag}-ours.safetensors")
    save_file({k: v.contiguous() for k, v in batch.items()}, inputs)
    source = ["--model", model] if model else ["--config", config, "--seed", "5", "--save", save]
    run([binary(DUMP), "--task", task, *source, *extra, "--inputs", inputs, "--output", output])
    with safe_open(output, "pt") as f:
        problem_type = f.metadata()["problem_type"]
    return load_file(output), problem_type


def theirs(model, batch):
    model.eval()
    model.zero_grad(set_to_none=True)
    # transformers 5.24 looks for packed rows in position_ids only without a cache, and its
    # default use_cache=True makes one even in training: SDPA then attends across the packed
    # sequences (only the flash-attention kernels read position_ids). DataCollatorWithFlattening's
    # promise, which ours keeps, is what it computes with use_cache=False.
    extra = {"use_cache": False} if "position_ids" in batch else {}
    result = model(**batch, **extra)
    out = {"logits": result.logits.detach(), "loss": result.loss.detach()}
    result.loss.backward()
    for name, parameter in model.named_parameters():
        out["grad." + name] = (parameter.grad if parameter.grad is not None
                               else torch.zeros_like(parameter))
    return out


def loaded_cleanly(auto, folder, what):
    """`auto`.from_pretrained(folder) and the differences its loading info reports (missing,
    unexpected or mismatched keys), named by `what`."""
    model, info = auto.from_pretrained(folder, output_loading_info=True)
    return model, [f"{what}: from_pretrained({folder}) {kind}: {sorted(info[kind])}"
                   for kind in ("missing_keys", "unexpected_keys", "mismatched_keys")
                   if info.get(kind)]


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
        if task == "sequence_classification" and problem_type != model.config.problem_type:
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
        model, problems = loaded_cleanly(auto, folder, tag)
        differences += problems
        if check_loaded:
            differences += check_loaded(tag, model, folder)
        reference = theirs(model, batch)
        differences += bert_parity.compare(f"ours -> transformers, {tag}", mine, reference, None,
                                           tolerance=TOLERANCE)
        compared += len(reference)
        print(f"parity: ours -> transformers, {tag}: loss {reference['loss'].item():.6f} "
              f"(ours {mine['loss'].item():.6f})")
    return differences, compared


def run_glue_to_hf(scratch, tag, config, expected_class):
    """run_glue fine-tunes a sequence classifier of `config` (a transformers config with
    pad_token_id, over the BERT vocabulary) for 3 steps on MRPC; transformers loads its output_dir
    as `expected_class` with no missing / unexpected / mismatched keys and computes the logits,
    loss and gradients ours computes from that folder. Returns (differences, tensors)."""
    config_path = os.path.join(scratch, f"glue-{tag}-config.json")
    config.to_json_file(config_path)
    vocab = os.path.join(EXAMPLES_DATA, "vocab", "bert-base-uncased-vocab.txt")
    output_dir = os.path.join(scratch, f"run_glue-{tag}")
    run([binary("run_glue"), "--task_name", "mrpc",
         "--data_dir", os.path.join(EXAMPLES_DATA, "glue", "MRPC"), "--config_name", config_path,
         "--tokenizer_name", vocab, "--output_dir", output_dir,
         "--cache_dir", os.path.join(scratch, "cache"), "--do_train", "--max_train_samples", "24",
         "--max_steps", "3", "--per_device_train_batch_size", "8", "--max_seq_length", "64",
         "--learning_rate", "1e-3", "--seed", "3", "--save_strategy", "no", "--report_to", "none",
         "--disable_tqdm", "true"])
    from transformers import AutoModelForSequenceClassification, BertTokenizerFast
    model, differences = loaded_cleanly(AutoModelForSequenceClassification, output_dir,
                                        f"run_glue {tag}")
    if type(model).__name__ != expected_class:
        differences.append(f"run_glue {tag}: its folder loads as {type(model).__name__}")
    vocab_dir = os.path.join(scratch, "vocab")
    os.makedirs(vocab_dir, exist_ok=True)
    shutil.copyfile(vocab, os.path.join(vocab_dir, "vocab.txt"))
    tokenizer = BertTokenizerFast.from_pretrained(vocab_dir, do_lower_case=True)
    pairs, labels = mrpc_pairs("dev", 8)
    batch = dict(encode(tokenizer, pairs), labels=torch.tensor(labels))
    # As the Trainer's remove_unused_columns: only what the model's forward takes.
    accepted = inspect.signature(model.forward).parameters
    batch = {k: v for k, v in batch.items() if k in accepted}
    mine, _ = ours(batch, scratch, f"run_glue-{tag}", "sequence_classification",
                   model=output_dir)
    reference = theirs(model, batch)
    differences += bert_parity.compare(f"run_glue's {tag} in transformers", mine, reference,
                                       None, tolerance=TOLERANCE)
    print(f"parity: run_glue's {tag}: loss {reference['loss'].item():.6f} "
          f"(ours {mine['loss'].item():.6f})")
    return differences, len(reference)
