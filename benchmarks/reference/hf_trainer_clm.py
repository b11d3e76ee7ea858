"""HF side of `ctrainer-bench clm_vs_hf`: transformers' Trainer training a GPT-2 from scratch on a
text file, the recipe of HF's examples/pytorch/language-modeling/run_clm.py (benchmark-only; runs
in the tests' venv).

What run_clm.py does, without the `datasets` package: set_seed, AutoTokenizer, the file's lines
with their line breaks (datasets' text loader), the first validation_split_percentage % held out
(train[P%:] trains), tokenization, group_texts over every 1,000 texts into blocks of block_size
(each group's remainder dropped), GPT2LMHeadModel of GPT2Config(**overrides) (run_clm.py's
--model_type gpt2 --config_overrides), Trainer + TrainingArguments with HF's defaults except what
the bench passes, default_data_collator, train(). Throughput and loss come from train()'s metrics.

    python hf_trainer_clm.py --train_file kjv.txt --tokenizer_name kjv-bpe-8k \
        --config_overrides n_embd=512,n_layer=6 --block_size 256 --max_steps 20 \
        --per_device_train_batch_size 8 --output_dir out --result_json out/result.json
"""
import argparse
import json
import sys

import torch
import transformers
from transformers import (AutoTokenizer, GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments,
                          default_data_collator, set_seed)

from hf_trainer_glue import FirstStepTime


class Blocks(torch.utils.data.Dataset):
    def __init__(self, blocks):
        self.blocks = blocks

    def __len__(self):
        return len(self.blocks)

    def __getitem__(self, i):
        ids = torch.tensor(self.blocks[i])
        return {"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": ids.clone()}


def overrides(text):
    """PretrainedConfig.update_from_string's "k=v,k2=v2", typed as GPT2Config's defaults."""
    defaults = GPT2Config().to_dict()
    out = {}
    for item in filter(None, text.split(",")):
        key, value = item.split("=", 1)
        kind = type(defaults[key])
        out[key] = value.lower() in ("true", "1", "y", "yes") if kind is bool else kind(value)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--train_file", required=True)
    parser.add_argument("--tokenizer_name", required=True)
    parser.add_argument("--config_overrides", default="")
    parser.add_argument("--block_size", type=int, required=True)
    parser.add_argument("--validation_split_percentage", type=int, default=5)
    parser.add_argument("--per_device_train_batch_size", type=int, default=8)
    parser.add_argument("--max_steps", type=int, required=True)
    parser.add_argument("--learning_rate", type=float, default=5e-5)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--bf16", action="store_true")
    parser.add_argument("--output_dir", required=True)
    parser.add_argument("--result_json", required=True)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    transformers.logging.set_verbosity_warning()
    set_seed(args.seed)

    tokenizer = AutoTokenizer.from_pretrained(args.tokenizer_name)
    with open(args.train_file, encoding="utf-8") as f:  # universal newlines, as datasets
        lines = f.read().splitlines(keepends=True)
    cut = int(round(args.validation_split_percentage * len(lines) / 100.0))
    texts = lines[cut:]
    blocks = []
    for start in range(0, len(texts), 1000):
        ids = [i for encoded in tokenizer(texts[start:start + 1000])["input_ids"] for i in encoded]
        kept = len(ids) // args.block_size * args.block_size
        blocks += [ids[i:i + args.block_size] for i in range(0, kept, args.block_size)]
    if len(blocks) < args.max_steps * args.per_device_train_batch_size:
        sys.exit(f"hf_trainer_clm.py: {len(blocks)} blocks, fewer than the steps need")

    model = GPT2LMHeadModel(GPT2Config(**overrides(args.config_overrides)))
    training_args = TrainingArguments(
        output_dir=args.output_dir, do_train=True,
        per_device_train_batch_size=args.per_device_train_batch_size,
        learning_rate=args.learning_rate, max_steps=args.max_steps, seed=args.seed,
        use_cpu=args.device == "cpu", bf16=args.bf16, dataloader_num_workers=0,
        save_strategy="no", report_to="none", disable_tqdm=True, logging_steps=args.max_steps)
    first_step = FirstStepTime()
    trainer = Trainer(model=model, args=training_args, train_dataset=Blocks(blocks),
                      data_collator=default_data_collator, callbacks=[first_step])
    metrics = trainer.train().metrics
    with open(args.result_json, "w") as f:
        json.dump({"side": "hf_trainer", "train_samples_per_second":
                   metrics["train_samples_per_second"], "train_runtime": metrics["train_runtime"],
                   "train_loss": metrics["train_loss"], "train_blocks": len(blocks),
                   "first_optimizer_step_unix_time": first_step.unix_time,
                   "transformers_version": transformers.__version__,
                   "torch_version": torch.__version__}, f, indent=2)


if __name__ == "__main__":
    main()
