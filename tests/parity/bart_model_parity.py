"""BartForConditionalGeneration parity with transformers, both directions, fp32, eval mode.

1. transformers -> ours: tiny random BART models (every parameter perturbed, final_logits_bias
   set), saved with save_pretrained and loaded by ctrainer_parity_model_dump through the registry
   (AutoModelForSeq2SeqLM). On a padded batch (pad id 1, labels padded with -100, decoder inputs
   shifted from the labels after decoder_start_token_id, or given with a decoder_attention_mask),
   logits, loss and every parameter's gradient agree within 1e-5 for: the default layout (GELU,
   tied head), scale_embedding with ReLU and different encoder / decoder depths and head counts,
   and a checkpoint with its own lm_head.
2. ours -> transformers: our new model of a config, saved, loads in AutoModelForSeq2SeqLM with
   no missing, unexpected or mismatched keys and the same logits, loss and gradients.
"""
import torch
from transformers import BartConfig, BartForConditionalGeneration

import bert_parity
import seq2seq_parity

VOCAB, PAD, START = 97, 1, 2
TINY = dict(vocab_size=VOCAB, d_model=32, encoder_layers=2, decoder_layers=2,
            encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=48,
            decoder_ffn_dim=48, max_position_embeddings=32, pad_token_id=PAD, bos_token_id=0,
            eos_token_id=2, decoder_start_token_id=START)
# (tag, config overrides, untie the head, batch options)
CASES = [
    ("bart_default", {}, False, {}),
    ("bart_scaled_relu_uneven", dict(scale_embedding=True, activation_function="relu",
                                     decoder_layers=3, decoder_attention_heads=2,
                                     decoder_ffn_dim=40), False, {}),
    ("bart_own_head_decoder_mask", {}, True, dict(decoder_inputs=True)),
]


def make_model(overrides, untie, index):
    torch.manual_seed(40 + index)
    model = BartForConditionalGeneration(BartConfig(**{**TINY, **overrides}))
    if untie:  # a checkpoint with its own head
        model.lm_head.weight = torch.nn.Parameter(model.model.shared.weight.detach().clone())
    bert_parity.perturb_parameters(model, 0.05, seed=60 + index)
    with torch.no_grad():
        model.final_logits_bias.copy_(torch.randn(model.final_logits_bias.shape) * 0.1)
    return model


def batch_of(seed, **options):
    return seq2seq_parity.make_batch(seed, VOCAB, PAD, START, **options)


def main():
    seq2seq_parity.run("BART", CASES, make_model, [("ours_default", BartConfig(**TINY)),
                      ("ours_scaled", BartConfig(**{**TINY, "scale_embedding": True,
                                                    "encoder_layers": 1}))], batch_of)


if __name__ == "__main__":
    main()
