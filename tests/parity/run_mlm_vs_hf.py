"""run_mlm against transformers' run_mlm.py pipeline and Trainer (issue 33, item 3).

The first 1,500 lines of the bundled corpus (examples/data/text/kjv.txt) are the train file; a
tiny BertForMaskedLM (random, saved here, no dropout) with the bundled bert-base-uncased
vocabulary is trained for 12 steps by our run_mlm and, on the other side, by HF's Trainer fed
as run_mlm.py feeds it: datasets' text loader (lines without their line breaks), validation =
train[:5%], each text tokenized alone with its special tokens mask, every 1,000 texts
concatenated and cut into max_seq_length examples (the remainder dropped), and
DataCollatorForLanguageModeling (80/10/10 at mlm_probability 0.15), sequential order. Run again
with --line_by_line (each non-blank line one example, truncated; batches padded).

The masks: ours are drawn per batch from a generator seeded with (seed, epoch, the batch's
dataset indices), so that a resumed run masks as the uninterrupted one; HF's collator draws from
one stream. The reference collator is therefore handed a torch.Generator seeded the same way
before each batch (mix() below is our seed derivation), and transformers' own torch_mask_tokens
then draws the masks: equal masks show that ours are HF's draws.

Checks: train_samples and eval_samples, every step's loss, grad_norm and learning_rate within
1e-4 relative, eval_loss and perplexity within 1e-4 relative.
"""
import json
import os
import shutil
import tempfile

import torch
import transformers
from transformers import (AutoTokenizer, BertConfig, BertForMaskedLM,
                          DataCollatorForLanguageModeling, Trainer, TrainingArguments)

from lm_run_parity import compare_runs
from parity_support import binary, fail_if, run

RTOL = 1e-4
THREADS = 2
LINES, LENGTH, STEPS, BATCH, EVAL_EXAMPLES, SEED = 1500, 64, 12, 8, 24, 42
SOURCE = os.environ.get("CTRAINER_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
CORPUS = os.path.join(SOURCE, "examples", "data", "text", "kjv.txt")
VOCAB = os.path.join(SOURCE, "examples", "data", "vocab", "bert-base-uncased-vocab.txt")
SHARED = dict(per_device_train_batch_size=BATCH, per_device_eval_batch_size=BATCH,
              max_steps=STEPS, learning_rate=1e-3, warmup_steps=2, lr_scheduler_type="linear",
              train_sampling_strategy="sequential", logging_steps=1, save_strategy="no",
              report_to="none", seed=SEED)
MASK64 = (1 << 64) - 1


def mix(seed, value):
    """DataCollatorForLanguageModeling::collate's per-batch seed step (splitmix64's finaliser)."""
    z = seed ^ ((value + 0x9E3779B97F4A7C15 + ((seed << 6) & MASK64) + (seed >> 2)) & MASK64)
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


class SeededMasking:
    """transformers' collator, with ctrainer's per-batch generator."""

    def __init__(self, tokenizer):
        self.inner = DataCollatorForLanguageModeling(tokenizer, mlm_probability=0.15)

    def __call__(self, features):
        seed = mix(SEED, 0)  # epoch 0: every step here is in the first epoch
        for feature in features:
            seed = mix(seed, feature["idx"])
        self.inner.generator = torch.Generator().manual_seed(seed)
        return self.inner([{k: v for k, v in f.items() if k != "idx"} for f in features])


class Examples(torch.utils.data.Dataset):
    def __init__(self, examples):
        self.examples = examples

    def __len__(self):
        return len(self.examples)

    def __getitem__(self, i):
        return {**self.examples[i], "idx": i}


def run_mlm_examples(train_file, tokenizer, line_by_line):
    """run_mlm.py's data: (train examples, validation examples)."""
    with open(train_file, encoding="utf-8") as f:
        lines = f.read().splitlines()  # keep_linebreaks=False, datasets' text default
    cut = int(round(5 * len(lines) / 100.0))
    splits = {"validation": lines[:cut], "train": lines[cut:]}

    def grouped(texts):
        columns = {}
        for text in texts:
            for key, value in tokenizer(text, return_special_tokens_mask=True).items():
                columns.setdefault(key, []).extend(value)
        total = len(columns["input_ids"])
        if total >= LENGTH:
            total = total // LENGTH * LENGTH
        return [{k: v[i:i + LENGTH] for k, v in columns.items()} for i in range(0, total, LENGTH)]

    out = []
    for name in ("train", "validation"):
        texts = splits[name]
        if line_by_line:
            texts = [t for t in texts if len(t) > 0 and not t.isspace()]
            out.append([dict(tokenizer(t, truncation=True, max_length=LENGTH,
                                       return_special_tokens_mask=True)) for t in texts])
        else:
            out.append([e for start in range(0, len(texts), 1000)
                        for e in grouped(texts[start:start + 1000])])
    return out


def compare(tag, tmp, init, train_file, line_by_line):
    ours = os.path.join(tmp, f"ours-{tag}")
    flags = [f"--{k}={v}" for k, v in SHARED.items()]
    run([binary("run_mlm"), "--model_name_or_path", init, "--train_file", train_file,
         "--max_seq_length", str(LENGTH), "--max_eval_samples", str(EVAL_EXAMPLES), "--do_train",
         "--do_eval", "--output_dir", ours, "--use_cpu", "true", "--disable_tqdm", "true",
         *(["--line_by_line"] if line_by_line else []), *flags],
        env=dict(os.environ, OMP_NUM_THREADS=str(THREADS)))
    tokenizer = AutoTokenizer.from_pretrained(init)
    train, validation = run_mlm_examples(train_file, tokenizer, line_by_line)
    validation = validation[:EVAL_EXAMPLES]
    args = TrainingArguments(output_dir=os.path.join(tmp, f"hf-{tag}"), use_cpu=True,
                             disable_tqdm=True, dataloader_num_workers=0,
                             remove_unused_columns=False, **SHARED)
    trainer = Trainer(model=BertForMaskedLM.from_pretrained(init), args=args,
                      train_dataset=Examples(train), eval_dataset=Examples(validation),
                      data_collator=SeededMasking(tokenizer))
    trainer.train()
    return compare_runs(f"run_mlm {tag}", ours, trainer, len(train), len(validation), STEPS, RTOL)


def main():
    torch.set_num_threads(THREADS)
    transformers.logging.set_verbosity_error()
    with tempfile.TemporaryDirectory(prefix="ctrainer_parity_run_mlm_") as tmp:
        init = os.path.join(tmp, "init")
        torch.manual_seed(0)
        BertForMaskedLM(BertConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                   intermediate_size=64, max_position_embeddings=128,
                                   hidden_dropout_prob=0.0,
                                   attention_probs_dropout_prob=0.0)).save_pretrained(init)
        shutil.copy(VOCAB, os.path.join(init, "vocab.txt"))
        with open(os.path.join(init, "tokenizer_config.json"), "w") as f:
            json.dump({"tokenizer_class": "BertTokenizer", "do_lower_case": True,
                       "model_max_length": 512}, f)
        train_file = os.path.join(tmp, "train.txt")
        with open(CORPUS, encoding="ascii") as f:
            head = [next(f) for _ in range(LINES)]
        with open(train_file, "w", encoding="ascii") as f:
            f.writelines(head)
        differences = compare("grouped", tmp, init, train_file, line_by_line=False)
        differences += compare("line_by_line", tmp, init, train_file, line_by_line=True)
    fail_if(differences, f"run_mlm against run_mlm.py's pipeline and HF Trainer, {STEPS} steps")


if __name__ == "__main__":
    main()
