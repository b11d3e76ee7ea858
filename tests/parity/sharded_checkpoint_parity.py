"""Sharded checkpoints (model.safetensors.index.json) with transformers, both directions, on tiny
random Llama (untied head, grouped-query attention) and GPT-2 (tied head) causal LMs.

1. transformers -> ours: save_pretrained(max_shard_size="20KB") writes several shards and an
   index; ctrainer_parity_model_dump loads the folder through the model registry and computes
   transformers' logits, loss and gradients within 1e-5.
2. ours -> transformers: our new model saved with --max_shard_size 20KB loads in transformers with
   no missing, unexpected or mismatched keys and the same outputs; transformers' save_pretrained
   of the same weights in a model built from the config, with the same max_shard_size, writes the
   same files and an index identical byte for byte to ours (same split, names, metadata, layout).
"""
import filecmp
import os
import sys
import tempfile

import torch
from transformers import AutoModelForCausalLM, GPT2Config, GPT2LMHeadModel, LlamaConfig, \
    LlamaForCausalLM

import bert_parity
from decoder_parity import TOLERANCE, VOCAB, loaded_cleanly, make_batch, ours, theirs
from parity_support import fail_if

SHARD = "20KB"
INDEX = "model.safetensors.index.json"
CONFIGS = {
    "llama": LlamaConfig(vocab_size=VOCAB, hidden_size=32, intermediate_size=48,
                         num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                         max_position_embeddings=64, bos_token_id=1, eos_token_id=2),
    "gpt2": GPT2Config(vocab_size=VOCAB, n_positions=32, n_embd=32, n_layer=2, n_head=4,
                       bos_token_id=1, eos_token_id=2),
}
CLASSES = {"llama": LlamaForCausalLM, "gpt2": GPT2LMHeadModel}


def weight_files(folder):
    return sorted(f for f in os.listdir(folder) if f.startswith("model"))


def shard_count(folder, tag, differences):
    files = weight_files(folder)
    if INDEX not in files or "model.safetensors" in files or len(files) < 4:
        differences.append(f"{tag}: expected an index and at least 3 shards, got {files}")
    return len(files) - 1


def hf_to_ours(scratch, family, index):
    differences = []
    torch.manual_seed(20 + index)
    model = CLASSES[family](CONFIGS[family])
    bert_parity.perturb_parameters(model, 0.05, seed=30 + index)
    folder = os.path.join(scratch, f"hf-{family}")
    model.save_pretrained(folder, max_shard_size=SHARD)
    shards = shard_count(folder, f"transformers' {family}", differences)
    batch = make_batch("causal_lm", 2, seed=90 + index)
    mine, _ = ours(batch, scratch, f"hf-{family}", "causal_lm", model=folder)
    reference = theirs(model, batch)
    differences += bert_parity.compare(f"sharded transformers -> ours, {family}", mine, reference,
                                       None, tolerance=TOLERANCE)
    print(f"parity: transformers' {family} in {shards} shards -> ours: loss "
          f"{reference['loss'].item():.6f} (ours {mine['loss'].item():.6f})")
    return differences, len(reference)


def ours_to_hf(scratch, family):
    differences = []
    config_path = os.path.join(scratch, f"{family}-config.json")
    CONFIGS[family].to_json_file(config_path)
    folder = os.path.join(scratch, f"ours-{family}")
    batch = make_batch("causal_lm", 2, seed=7)
    mine, _ = ours(batch, scratch, f"ours-{family}", "causal_lm", config=config_path,
                   save=folder, extra=["--max_shard_size", SHARD])
    shards = shard_count(folder, f"our {family}", differences)
    model, problems = loaded_cleanly(AutoModelForCausalLM, folder, family)
    differences += problems
    # transformers splits a model in its state-dict order, as we do, when the model was built in
    # the process; one it loaded with from_pretrained it re-sorts first (dot_natural_key in
    # revert_weight_conversion), so the comparison uses a model built from the config.
    built = CLASSES[family](CONFIGS[family])
    built.load_state_dict(model.state_dict())
    resaved = os.path.join(scratch, f"resaved-{family}")
    built.save_pretrained(resaved, max_shard_size=SHARD)
    if weight_files(resaved) != weight_files(folder):
        differences.append(f"{family}: transformers writes {weight_files(resaved)}, "
                           f"we write {weight_files(folder)}")
    elif not filecmp.cmp(os.path.join(resaved, INDEX), os.path.join(folder, INDEX),
                         shallow=False):
        with open(os.path.join(folder, INDEX)) as a, open(os.path.join(resaved, INDEX)) as b:
            differences.append(f"{family}: our index differs from transformers':\n{a.read()}\n"
                               f"---\n{b.read()}")
    reference = theirs(model, batch)
    differences += bert_parity.compare(f"sharded ours -> transformers, {family}", mine,
                                       reference, None, tolerance=TOLERANCE)
    print(f"parity: our {family} in {shards} shards -> transformers: loss "
          f"{reference['loss'].item():.6f} (ours {mine['loss'].item():.6f}), same index")
    return differences, len(reference)


def main():
    torch.set_num_threads(max(1, min(4, os.cpu_count() or 1)))
    differences, compared = [], 0
    with tempfile.TemporaryDirectory() as scratch:
        for index, family in enumerate(CONFIGS):
            for found, count in (hf_to_ours(scratch, family, index), ours_to_hf(scratch, family)):
                differences += found
                compared += count
    if compared == 0:
        sys.exit("parity: nothing was compared")
    fail_if(differences, f"sharded checkpoints, {compared} tensors (tolerance {TOLERANCE:g})")


if __name__ == "__main__":
    main()
