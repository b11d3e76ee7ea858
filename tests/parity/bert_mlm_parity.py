"""BertForMaskedLM parity with transformers, both directions, fp32, eval mode (issue 33, item 3).

1. transformers -> ours: tiny random BertForMaskedLM (every parameter perturbed), tied (HF's
   default) and untied, gelu and relu heads, with and without token types and attention masks,
   saved with save_pretrained and loaded by ctrainer_parity_model_dump through the registry:
   logits, the loss over the labelled (not -100) tokens and every gradient within 1e-5. A
   BertForSequenceClassification checkpoint loads too (pooler ignored, MLM head initialised).
2. ours -> transformers: our new BertForMaskedLM, saved, loads in AutoModelForMaskedLM with no
   missing, unexpected or mismatched keys and the same logits, loss and gradients.
"""
import os
import sys
import tempfile

import torch
from transformers import (AutoModelForMaskedLM, BertConfig, BertForMaskedLM,
                          BertForSequenceClassification)

import bert_parity
import decoder_parity
from decoder_parity import TOLERANCE, VOCAB
from parity_support import fail_if

TINY = dict(vocab_size=VOCAB, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
            num_attention_heads=4, max_position_embeddings=64, hidden_dropout_prob=0.0,
            attention_probs_dropout_prob=0.0)
# (tag, task, config overrides, batch options)
CASES = [
    ("mlm_tied", "masked_lm", {}, {}),
    ("mlm_untied", "masked_lm", dict(tie_word_embeddings=False), {}),
    ("mlm_relu", "masked_lm", dict(hidden_act="relu"), {}),
    ("mlm_token_types", "masked_lm", {}, dict(token_types=True)),
    ("mlm_no_mask", "masked_lm", {}, dict(no_mask=True)),
]


def make_model(task, overrides, index):
    torch.manual_seed(240 + index)
    model = BertForMaskedLM(BertConfig(**TINY, **overrides))
    bert_parity.perturb_parameters(model, 0.05, seed=260 + index)
    return model


OURS_TO_HF = [
    ("ours_mlm_tied", "masked_lm", BertConfig(**TINY), AutoModelForMaskedLM),
    ("ours_mlm_untied", "masked_lm", BertConfig(**TINY, tie_word_embeddings=False),
     AutoModelForMaskedLM),
]


def classifier_checkpoint_loads(scratch):
    """A BertForSequenceClassification folder loads as a masked LM: the encoder's weights are
    the checkpoint's (same hidden states, so transformers' and our MLM heads, both freshly
    initialised, are not compared), the pooler and classifier are ignored."""
    torch.manual_seed(3)
    folder = os.path.join(scratch, "classifier")
    BertForSequenceClassification(BertConfig(**TINY, num_labels=2)).save_pretrained(folder)
    batch = decoder_parity.make_batch("masked_lm", 2, seed=9)
    mine, _ = decoder_parity.ours(batch, scratch, "from-classifier", "masked_lm", model=folder)
    if mine["logits"].shape != (batch["input_ids"].shape + (VOCAB,)):
        return [f"classifier checkpoint: logits of shape {tuple(mine['logits'].shape)}"]
    return []


def main():
    torch.set_num_threads(max(1, min(4, os.cpu_count() or 1)))
    with tempfile.TemporaryDirectory() as scratch:
        differences, forward = decoder_parity.hf_to_ours(scratch, CASES, make_model)
        backward_differences, backward = decoder_parity.ours_to_hf(scratch, OURS_TO_HF)
        differences += backward_differences + classifier_checkpoint_loads(scratch)
    if forward == 0 or backward == 0:
        sys.exit("parity: nothing was compared")
    fail_if(differences, f"BertForMaskedLM logits, losses and gradients, {forward} + {backward} "
                         f"tensors (tolerance {TOLERANCE:g})")


if __name__ == "__main__":
    main()
