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
import torch
from transformers import T5Config, T5ForConditionalGeneration

import bert_parity
import seq2seq_parity

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


def make_model(overrides, untie, index):
    torch.manual_seed(40 + index)
    model = T5ForConditionalGeneration(T5Config(**{**TINY, **overrides}))
    if untie:  # a checkpoint with its own head, as T5 v1.1 and FLAN-T5 ship
        model.lm_head.weight = torch.nn.Parameter(model.shared.weight.detach().clone())
    bert_parity.perturb_parameters(model, 0.05, seed=60 + index)
    return model


def batch_of(seed, **options):
    return seq2seq_parity.make_batch(seed, VOCAB, PAD, START, **options)


def main():
    ours = [("ours_relu", T5Config(**TINY)),
            ("ours_gated", T5Config(**{**TINY, "feed_forward_proj": "gated-gelu",
                                       "num_decoder_layers": 1}))]
    seq2seq_parity.run("T5", CASES, make_model, ours, batch_of)


if __name__ == "__main__":
    main()
