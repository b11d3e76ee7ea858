"""What the encoder-decoder parity tests (T5, BART) share: padded source/target batches and the
two directions' loops over our dump (ctrainer_parity_model_dump --task seq2seq_lm)."""
import os
import tempfile

import torch
from transformers import AutoModelForSeq2SeqLM

import bert_parity
from decoder_parity import loaded_cleanly, ours, theirs
from parity_support import fail_if

TOLERANCE = 1e-5


def make_batch(seed, vocab, pad, start, decoder_inputs=False):
    """Four sources of 12, 9, 5 and 12 tokens (padded with `pad`) and targets of 7, 4, 6, 2
    tokens, labels padded with -100 (DataCollatorForSeq2Seq's); with `decoder_inputs` the
    decoder inputs are given (labels shifted right after `start`) with a decoder_attention_mask."""
    g = torch.Generator().manual_seed(seed)
    sources, targets = [12, 9, 5, 12], [7, 4, 6, 2]
    ids = torch.full((4, 12), pad, dtype=torch.int64)
    mask = torch.zeros_like(ids)
    labels = torch.full((4, 7), -100, dtype=torch.int64)
    for row, (n, m) in enumerate(zip(sources, targets)):
        ids[row, :n] = torch.randint(3, vocab, (n,), generator=g)
        mask[row, :n] = 1
        labels[row, :m] = torch.randint(3, vocab, (m,), generator=g)
    batch = {"input_ids": ids, "attention_mask": mask, "labels": labels}
    if decoder_inputs:
        decoder = torch.full_like(labels, pad)
        decoder[:, 0] = start
        decoder[:, 1:] = labels[:, :-1].masked_fill(labels[:, :-1] == -100, pad)
        batch["decoder_input_ids"] = decoder
        batch["decoder_attention_mask"] = (labels != -100).long()
        batch["decoder_attention_mask"][:, 0] = 1
    return batch


def hf_to_ours(scratch, cases, make_model, auto, batch_of):
    """transformers -> ours for each (tag, overrides, untie, batch options) of `cases`:
    make_model(overrides, untie, index) builds the perturbed transformers model, batch_of(seed,
    **options) the batch. Returns (differences, tensors compared)."""
    differences, compared = [], 0
    for index, (tag, overrides, untie, options) in enumerate(cases):
        model = make_model(overrides, untie, index)
        folder = os.path.join(scratch, f"hf-{tag}")
        model.save_pretrained(folder)
        model, problems = loaded_cleanly(auto, folder, tag)
        differences += problems
        if untie and model.get_output_embeddings().weight is model.get_input_embeddings().weight:
            differences.append(f"{tag}: transformers tied the head it was given")
        batch = batch_of(80 + index, **options)
        mine, _ = ours(batch, scratch, tag, "seq2seq_lm", model=folder)
        reference = theirs(model, batch)
        differences += bert_parity.compare(f"transformers -> ours, {tag}", mine, reference, None,
                                           tolerance=TOLERANCE)
        compared += len(reference)
        print(f"parity: transformers -> ours, {tag}: loss {reference['loss'].item():.6f} "
              f"(ours {mine['loss'].item():.6f}), {len(reference)} tensors compared")
    return differences, compared


def ours_to_hf(scratch, configs, auto, batch_of):
    """ours -> transformers for each (tag, transformers config) of `configs`: our new model of
    the config, saved, loads cleanly and gives the same outputs."""
    differences, compared = [], 0
    for tag, config in configs:
        config_path = os.path.join(scratch, f"{tag}-config.json")
        config.to_json_file(config_path)
        folder = os.path.join(scratch, f"{tag}-saved")
        batch = batch_of(7)
        mine, _ = ours(batch, scratch, tag, "seq2seq_lm", config=config_path, save=folder)
        model, problems = loaded_cleanly(auto, folder, tag)
        differences += problems
        reference = theirs(model, batch)
        differences += bert_parity.compare(f"ours -> transformers, {tag}", mine, reference, None,
                                           tolerance=TOLERANCE)
        compared += len(reference)
    return differences, compared


def run(family, cases, make_model, our_configs, batch_of):
    """Both directions for one family: transformers -> ours on `cases`, ours -> transformers on
    `our_configs` ((tag, transformers config) pairs); exits non-zero on any difference."""
    with tempfile.TemporaryDirectory() as scratch:
        differences, compared = hf_to_ours(scratch, cases, make_model, AutoModelForSeq2SeqLM,
                                           batch_of)
        more, count = ours_to_hf(scratch, our_configs, AutoModelForSeq2SeqLM, batch_of)
    fail_if(differences + more, f"{family} vs transformers")
    print(f"parity: {family}, {compared + count} tensors equal within {TOLERANCE}")
