"""GPT-2 parity with transformers, both directions, fp32, eval mode (dropout off).

1. transformers -> ours: tiny random GPT2LMHeadModel / GPT2ForSequenceClassification (every
   parameter then perturbed, so biases and LayerNorms are not 0 / 1), saved with save_pretrained
   and loaded by ctrainer_parity_model_dump through the model registry (AutoModel). On a batch of
   ragged sequences, logits, loss and every parameter's gradient agree within 1e-5 for: tied and
   untied heads, scale_attn_by_inverse_layer_idx, n_inner, relu / gelu, no attention mask (SDPA's
   is_causal path), token_type_ids, ignored labels (-100), sequence classification with right and
   left padding, single-label and regression losses.
2. ours -> transformers: our new model of a config, saved with save_pretrained, loads in
   transformers' AutoModelFor* with no missing, unexpected or mismatched keys, and transformers'
   logits, loss and gradients on the same batch equal ours within 1e-5.
3. run_glue fine-tunes a GPT2ForSequenceClassification (config.json with pad_token_id, the BERT
   vocabulary) for 3 steps on MRPC; transformers loads its output_dir and computes the logits,
   loss and gradients ours computes from that folder.
"""
import json
import os
import sys
import tempfile

import torch
from transformers import (AutoModelForCausalLM, AutoModelForSequenceClassification, GPT2Config,
                          GPT2ForSequenceClassification, GPT2LMHeadModel)

import bert_parity
import decoder_parity
from decoder_parity import PAD, TOLERANCE, VOCAB
from parity_support import fail_if

TINY = dict(vocab_size=VOCAB, n_positions=32, n_embd=32, n_layer=2, n_head=4,
            bos_token_id=1, eos_token_id=2)
# (tag, task, config overrides, batch options)
CASES = [
    ("lm_tied", "causal_lm", {}, {}),
    ("lm_untied_scaled", "causal_lm",
     dict(tie_word_embeddings=False, scale_attn_by_inverse_layer_idx=True, n_inner=48), {}),
    ("lm_relu_unscaled", "causal_lm", dict(activation_function="relu", scale_attn_weights=False),
     {}),
    ("lm_gelu_no_mask", "causal_lm", dict(activation_function="gelu"), dict(no_mask=True)),
    ("lm_packed_position_ids", "causal_lm", {}, dict(packed=True)),
    ("lm_token_types_ignored_labels", "causal_lm", {}, dict(token_types=True, ignore_some=True)),
    ("cls_right_padding", "sequence_classification", dict(num_labels=3, pad_token_id=PAD), {}),
    ("cls_left_padding", "sequence_classification", dict(num_labels=3, pad_token_id=PAD),
     dict(left=True)),
    ("cls_regression", "sequence_classification", dict(num_labels=1, pad_token_id=PAD), {}),
]


def make_model(task, overrides, index):
    torch.manual_seed(40 + index)
    model_class = GPT2LMHeadModel if task == "causal_lm" else GPT2ForSequenceClassification
    model = model_class(GPT2Config(**TINY, **overrides))
    bert_parity.perturb_parameters(model, 0.05, seed=60 + index)
    return model


def check_architecture(tag, model, folder):
    with open(os.path.join(folder, "config.json"), encoding="utf-8") as f:
        architectures = json.load(f).get("architectures")
    if architectures != [type(model).__name__]:
        return [f"{tag}: architectures {architectures}, loaded as {type(model).__name__}"]
    return []


OURS_TO_HF = [
    ("ours_lm", "causal_lm", GPT2Config(**TINY), AutoModelForCausalLM),
    ("ours_lm_untied", "causal_lm", GPT2Config(**TINY, tie_word_embeddings=False),
     AutoModelForCausalLM),
    ("ours_cls", "sequence_classification", GPT2Config(**TINY, num_labels=2, pad_token_id=PAD),
     AutoModelForSequenceClassification),
]


def main():
    torch.set_num_threads(max(1, min(4, os.cpu_count() or 1)))
    with tempfile.TemporaryDirectory() as scratch:
        differences, forward = decoder_parity.hf_to_ours(scratch, CASES, make_model)
        backward_differences, backward = decoder_parity.ours_to_hf(scratch, OURS_TO_HF,
                                                                   check_architecture)
        glue_differences, glue = decoder_parity.run_glue_to_hf(
            scratch, "gpt2",
            GPT2Config(vocab_size=30522, n_positions=64, n_embd=32, n_layer=2, n_head=4,
                       pad_token_id=0, bos_token_id=101, eos_token_id=102),
            "GPT2ForSequenceClassification")
    differences += backward_differences + glue_differences
    backward += glue
    if forward == 0 or backward == 0:
        sys.exit("parity: nothing was compared")
    fail_if(differences, f"GPT-2 logits, losses and gradients, {forward} + {backward} tensors "
                         f"(tolerance {TOLERANCE:g})")


if __name__ == "__main__":
    main()
