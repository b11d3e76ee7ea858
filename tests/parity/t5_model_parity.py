"""T5ForConditionalGeneration parity with transformers, both directions, fp32, eval mode.

1. transformers -> ours: tiny random T5 models (every parameter perturbed), saved with
   save_pretrained and loaded by ctrainer_parity_model_dump through the registry
   (AutoModelForSeq2SeqLM). On a padded batch (encoder padding, labels padded with -100, decoder
   inputs made from the labels, or given with a decoder_attention_mask), logits, loss and every
   parameter's gradient agree within 1e-5 for: original T5 (ReLU, the head tied and scaled),
   T5 v1.1 / FLAN-T5 (gated-GELU, scale_decoder_outputs false) with its own lm_head in the
   checkpoint, few buckets with a short max_distance (logarithmic buckets on 12 tokens), more
   decoder than encoder layers, and gated-SiLU.
2. ours -> transformers: our new model of a config, saved, loads in AutoModelForSeq2SeqLM with
   no missing, unexpected or mismatched keys and the same logits, loss and gradients.
"""
import os
import tempfile

import torch
from transformers import AutoModelForSeq2SeqLM, T5Config, T5ForConditionalGeneration

import bert_parity
from decoder_parity import loaded_cleanly, ours, theirs
from parity_support import fail_if

TOLERANCE = 1e-5
VOCAB, PAD, EOS, START = 97, 0, 1, 0
TINY = dict(vocab_size=VOCAB, d_model=32, d_kv=8, d_ff=48, num_layers=2, num_heads=4,
            pad_token_id=PAD, eos_token_id=EOS, decoder_start_token_id=START)
# (tag, config overrides, untie the head, batch options)
CASES = [
    ("t5_relu_tied", {}, False, {}),
    ("t5_v1_1_gated_gelu_own_head", dict(feed_forward_proj="gated-gelu",
                                         tie_word_embeddings=False), True, {}),
    ("t5_log_buckets_deeper_decoder", dict(relative_attention_num_buckets=8,
                                           relative_attention_max_distance=10,
                                           num_decoder_layers=3), False, {}),
    ("t5_gated_silu_decoder_mask", dict(feed_forward_proj="gated-silu", num_heads=2, d_kv=12),
     False, dict(decoder_inputs=True)),
]


def make_batch(seed, decoder_inputs=False):
    """Four sources of 12, 9, 5 and 12 tokens (padded with PAD) and targets of 7, 4, 6, 2
    tokens, labels padded with -100 (DataCollatorForSeq2Seq's); with `decoder_inputs` the
    decoder inputs are given (shifted labels) with a decoder_attention_mask."""
    g = torch.Generator().manual_seed(seed)
    sources, targets = [12, 9, 5, 12], [7, 4, 6, 2]
    ids = torch.full((4, 12), PAD, dtype=torch.int64)
    mask = torch.zeros_like(ids)
    labels = torch.full((4, 7), -100, dtype=torch.int64)
    for row, (n, m) in enumerate(zip(sources, targets)):
        ids[row, :n] = torch.randint(2, VOCAB, (n,), generator=g)
        mask[row, :n] = 1
        labels[row, :m] = torch.randint(2, VOCAB, (m,), generator=g)
    batch = {"input_ids": ids, "attention_mask": mask, "labels": labels}
    if decoder_inputs:
        decoder = torch.full_like(labels, PAD)
        decoder[:, 0] = START
        decoder[:, 1:] = labels[:, :-1].masked_fill(labels[:, :-1] == -100, PAD)
        batch["decoder_input_ids"] = decoder
        batch["decoder_attention_mask"] = (labels != -100).long()
        batch["decoder_attention_mask"][:, 0] = 1
    return batch


def make_model(overrides, untie, index):
    torch.manual_seed(40 + index)
    model = T5ForConditionalGeneration(T5Config(**{**TINY, **overrides}))
    if untie:  # a checkpoint with its own head, as T5 v1.1 and FLAN-T5 ship
        model.lm_head.weight = torch.nn.Parameter(model.shared.weight.detach().clone())
    bert_parity.perturb_parameters(model, 0.05, seed=60 + index)
    return model


def main():
    differences, compared = [], 0
    with tempfile.TemporaryDirectory() as scratch:
        for index, (tag, overrides, untie, options) in enumerate(CASES):
            model = make_model(overrides, untie, index)
            folder = os.path.join(scratch, f"hf-{tag}")
            model.save_pretrained(folder)
            model, problems = loaded_cleanly(AutoModelForSeq2SeqLM, folder, tag)
            differences += problems
            if untie and model.lm_head.weight is model.shared.weight:
                differences.append(f"{tag}: transformers tied the head it was given")
            batch = make_batch(seed=80 + index, **options)
            mine, _ = ours(batch, scratch, tag, "seq2seq_lm", model=folder)
            reference = theirs(model, batch)
            differences += bert_parity.compare(f"transformers -> ours, {tag}", mine, reference,
                                               None, tolerance=TOLERANCE)
            compared += len(reference)
            print(f"parity: transformers -> ours, {tag}: loss {reference['loss'].item():.6f} "
                  f"(ours {mine['loss'].item():.6f}), {len(reference)} tensors compared")

        for tag, overrides in [("ours_relu", {}), ("ours_gated", dict(feed_forward_proj="gated-gelu",
                                                                      num_decoder_layers=1))]:
            config_path = os.path.join(scratch, f"{tag}-config.json")
            T5Config(**{**TINY, **overrides}).to_json_file(config_path)
            folder = os.path.join(scratch, f"{tag}-saved")
            batch = make_batch(seed=7)
            mine, _ = ours(batch, scratch, tag, "seq2seq_lm", config=config_path, save=folder)
            model, problems = loaded_cleanly(AutoModelForSeq2SeqLM, folder, tag)
            differences += problems
            reference = theirs(model, batch)
            differences += bert_parity.compare(f"ours -> transformers, {tag}", mine, reference,
                                               None, tolerance=TOLERANCE)
            compared += len(reference)
    fail_if(differences, "T5 vs transformers")
    print(f"parity: T5, {compared} tensors equal within {TOLERANCE}")


if __name__ == "__main__":
    main()
