"""Llama parity with transformers, both directions, fp32, eval mode (dropout off).

1. transformers -> ours: tiny random LlamaForCausalLM / LlamaForSequenceClassification (every
   parameter then perturbed, so RMSNorm weights are not 1), saved with save_pretrained and loaded
   by ctrainer_parity_model_dump through the model registry. On a batch of ragged sequences,
   logits, loss and every parameter's gradient agree within 1e-5 for: grouped-query attention,
   tied and untied heads, attention and MLP biases, RoPE default / linear / llama3 (Llama 3.1's),
   a head_dim other than hidden_size / heads, a pad_token_id embedding row, no attention mask,
   a config.json with the older rope_theta + rope_scaling keys, and sequence classification with
   right and left padding, single-label and regression.
2. ours -> transformers: our new model of a config, saved with save_pretrained, loads in
   transformers' AutoModelFor* with no missing, unexpected or mismatched keys and the same
   logits, loss and gradients.
3. run_glue fine-tunes a LlamaForSequenceClassification (grouped-query attention, pad_token_id,
   the BERT vocabulary; token_type_ids dropped as the Trainer's remove_unused_columns drops them)
   for 3 steps on MRPC; transformers loads its output_dir and computes the logits, loss and
   gradients ours computes from that folder.
"""
import json
import os
import sys
import tempfile

import torch
from transformers import (AutoModelForCausalLM, AutoModelForSequenceClassification, LlamaConfig,
                          LlamaForCausalLM, LlamaForSequenceClassification)

import bert_parity
import decoder_parity
from decoder_parity import PAD, TOLERANCE, VOCAB
from parity_support import fail_if

TINY = dict(vocab_size=VOCAB, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
            num_attention_heads=4, max_position_embeddings=64, bos_token_id=1, eos_token_id=2)
LLAMA3 = {"rope_type": "llama3", "rope_theta": 50000.0, "factor": 8.0, "low_freq_factor": 1.0,
          "high_freq_factor": 4.0, "original_max_position_embeddings": 8}
# (tag, task, config overrides, batch options)
CASES = [
    ("lm_gqa_untied", "causal_lm", dict(num_key_value_heads=2), {}),
    ("lm_tied_biases", "causal_lm",
     dict(tie_word_embeddings=True, attention_bias=True, mlp_bias=True), {}),
    ("lm_rope_llama3", "causal_lm", dict(num_key_value_heads=1, rope_parameters=LLAMA3), {}),
    ("lm_rope_linear_head_dim", "causal_lm",
     dict(head_dim=16, rope_parameters={"rope_type": "linear", "rope_theta": 500.0,
                                        "factor": 2.0}), {}),
    ("lm_packed_position_ids", "causal_lm", dict(num_key_value_heads=2), dict(packed=True)),
    ("lm_pad_row_no_mask", "causal_lm", dict(pad_token_id=PAD, hidden_act="gelu"),
     dict(no_mask=True)),
    ("lm_legacy_rope_keys", "causal_lm",
     dict(rope_parameters={"rope_type": "linear", "rope_theta": 2000.0, "factor": 4.0}), {}),
    ("cls_right_padding", "sequence_classification",
     dict(num_labels=3, pad_token_id=PAD, num_key_value_heads=2), {}),
    ("cls_left_padding", "sequence_classification", dict(num_labels=3, pad_token_id=PAD),
     dict(left=True)),
    ("cls_regression", "sequence_classification", dict(num_labels=1, pad_token_id=PAD), {}),
]


def to_legacy_rope_keys(folder):
    """Rewrites config.json as files written before transformers 5 hold RoPE: rope_theta and
    rope_scaling ({"type": ...}) at the top level."""
    path = os.path.join(folder, "config.json")
    with open(path, encoding="utf-8") as f:
        config = json.load(f)
    rope = config.pop("rope_parameters")
    config["rope_theta"] = rope.pop("rope_theta")
    rope["type"] = rope.pop("rope_type")
    config["rope_scaling"] = rope
    with open(path, "w", encoding="utf-8") as f:
        json.dump(config, f)


def make_model(task, overrides, index):
    torch.manual_seed(140 + index)
    model_class = LlamaForCausalLM if task == "causal_lm" else LlamaForSequenceClassification
    model = model_class(LlamaConfig(**TINY, **overrides))
    bert_parity.perturb_parameters(model, 0.05, seed=160 + index)
    if model.config.pad_token_id is not None:  # keep the padding row at zero, as HF's init
        with torch.no_grad():
            model.model.embed_tokens.weight[model.config.pad_token_id].zero_()
    return model


def prepare_folder(tag, folder):
    if tag == "lm_legacy_rope_keys":
        to_legacy_rope_keys(folder)


OURS_TO_HF = [
    ("ours_lm_gqa", "causal_lm", LlamaConfig(**TINY, num_key_value_heads=2, rope_parameters=LLAMA3),
     AutoModelForCausalLM),
    ("ours_lm_tied", "causal_lm", LlamaConfig(**TINY, tie_word_embeddings=True,
                                              attention_bias=True), AutoModelForCausalLM),
    ("ours_cls", "sequence_classification", LlamaConfig(**TINY, num_labels=2, pad_token_id=PAD),
     AutoModelForSequenceClassification),
]


def check_rope(tag, model, folder):
    expected = dict(OURS_TO_HF_CONFIGS[tag].rope_parameters)
    if model.config.rope_parameters != expected:
        return [f"{tag}: rope_parameters read back as {model.config.rope_parameters}, "
                f"expected {expected}"]
    return []


OURS_TO_HF_CONFIGS = {tag: config for tag, _, config, _ in OURS_TO_HF}


def main():
    torch.set_num_threads(max(1, min(4, os.cpu_count() or 1)))
    with tempfile.TemporaryDirectory() as scratch:
        differences, forward = decoder_parity.hf_to_ours(scratch, CASES, make_model,
                                                         prepare_folder)
        backward_differences, backward = decoder_parity.ours_to_hf(scratch, OURS_TO_HF,
                                                                   check_rope)
        glue_differences, glue = decoder_parity.run_glue_to_hf(
            scratch, "llama",
            LlamaConfig(vocab_size=30522, hidden_size=32, intermediate_size=48,
                        num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                        max_position_embeddings=64, pad_token_id=0, bos_token_id=101,
                        eos_token_id=102),
            "LlamaForSequenceClassification")
    differences += backward_differences + glue_differences
    backward += glue
    if forward == 0 or backward == 0:
        sys.exit("parity: nothing was compared")
    fail_if(differences, f"Llama logits, losses and gradients, {forward} + {backward} tensors "
                         f"(tolerance {TOLERANCE:g})")


if __name__ == "__main__":
    main()
