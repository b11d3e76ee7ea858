"""run_clm against transformers' run_clm.py pipeline and Trainer (issue 33, item 3).

The first 2,600 lines of the bundled corpus (examples/data/text/kjv.txt) are the train file;
a tiny GPT-2 (random, saved here with save_pretrained, no dropout) with the bundled byte-level
BPE tokenizer (kjv-bpe-8k) is fine-tuned for 20 steps by our run_clm and, on the other side, by
HF's Trainer fed as run_clm.py feeds it: datasets' text loader (each line with its line break,
universal newlines), validation = train[:5%] and train = train[5%:] (datasets rounds the
boundary to the closest), each text tokenized alone, group_texts over every 1,000 texts (each
group's remainder dropped), labels = input_ids, default_data_collator, sequential order.
`datasets` is not in the tests' venv, so those steps are written out here as run_clm.py and
datasets do them (hf5-facts.md).

transformers 5.24's Trainer does not count GPT-2's loss over the shifted labels (see main()); the
reference is told to, as it does for Llama.

Checks: the number of train and eval blocks (train_samples, eval_samples), every step's loss,
grad_norm and learning_rate within 1e-4 relative, eval_loss and perplexity (= exp(eval_loss))
within 1e-4 relative, and the saved folder loading in transformers with the trained weights
(its logits equal to those of HF's trained model).
"""
import os
import shutil
import tempfile

import torch
import transformers
from transformers import (AutoModelForCausalLM, AutoTokenizer, GPT2Config, GPT2LMHeadModel,
                          Trainer, TrainingArguments, default_data_collator)

from lm_run_parity import compare_runs
from parity_support import binary, fail_if, run
from hf_trainer_clm import Blocks  # noqa: E402 (benchmarks/reference, on the path)

RTOL = 1e-4
THREADS = 2
LINES, BLOCK, STEPS, BATCH, EVAL_BLOCKS = 2600, 32, 20, 8, 48
SOURCE = os.environ.get("CTRAINER_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
CORPUS = os.path.join(SOURCE, "examples", "data", "text", "kjv.txt")
TOKENIZER = os.path.join(SOURCE, "examples", "data", "text", "kjv-bpe-8k")
SHARED = dict(per_device_train_batch_size=BATCH, per_device_eval_batch_size=BATCH, max_steps=STEPS,
              learning_rate=1e-3, warmup_steps=2, lr_scheduler_type="linear",
              train_sampling_strategy="sequential", logging_steps=1, save_strategy="no",
              report_to="none", seed=42)


def make_model(folder):
    torch.manual_seed(0)
    config = GPT2Config(vocab_size=8192, n_positions=64, n_embd=32, n_layer=2, n_head=4,
                        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    GPT2LMHeadModel(config).save_pretrained(folder)
    for name in os.listdir(TOKENIZER):
        shutil.copy(os.path.join(TOKENIZER, name), folder)


def run_clm_blocks(train_file, tokenizer):
    """run_clm.py's data: (train blocks, validation blocks)."""
    with open(train_file, encoding="utf-8") as f:  # universal newlines, as datasets opens it
        lines = f.read().splitlines(keepends=True)
    cut = int(round(5 * len(lines) / 100.0))
    splits = {"validation": lines[:cut], "train": lines[cut:]}

    def group_texts(texts):
        ids = [i for text in texts for i in tokenizer(text)["input_ids"]]
        kept = len(ids) // BLOCK * BLOCK
        return [ids[i:i + BLOCK] for i in range(0, kept, BLOCK)]

    return tuple([block for start in range(0, len(splits[name]), 1000)
                  for block in group_texts(splits[name][start:start + 1000])]
                 for name in ("train", "validation"))


def main():
    torch.set_num_threads(THREADS)
    transformers.logging.set_verbosity_warning()
    differences = []
    with tempfile.TemporaryDirectory(prefix="ctrainer_parity_run_clm_") as tmp:
        init = os.path.join(tmp, "init")
        make_model(init)
        train_file = os.path.join(tmp, "train.txt")
        with open(CORPUS, encoding="ascii") as f:
            head = [next(f) for _ in range(LINES)]
        with open(train_file, "w", encoding="ascii") as f:
            f.writelines(head)

        ours = os.path.join(tmp, "ours")
        flags = [f"--{k}={v}" for k, v in SHARED.items()]
        run([binary("run_clm"), "--model_name_or_path", init, "--train_file", train_file,
             "--block_size", str(BLOCK), "--max_eval_samples", str(EVAL_BLOCKS), "--do_train",
             "--do_eval", "--output_dir", ours, "--use_cpu", "true", "--disable_tqdm", "true",
             *flags], env=dict(os.environ, OMP_NUM_THREADS=str(THREADS)))
        tokenizer = AutoTokenizer.from_pretrained(init)
        train_blocks, eval_blocks = run_clm_blocks(train_file, tokenizer)
        eval_blocks = eval_blocks[:EVAL_BLOCKS]
        args = TrainingArguments(output_dir=os.path.join(tmp, "hf"), use_cpu=True,
                                 disable_tqdm=True, dataloader_num_workers=0, **SHARED)
        trainer = Trainer(model=GPT2LMHeadModel.from_pretrained(init), args=args,
                          train_dataset=Blocks(train_blocks), eval_dataset=Blocks(eval_blocks),
                          data_collator=default_data_collator)
        # transformers 5.24 counts a window's target tokens as labels[..., 1:] only for models
        # whose loss_type maps to ForCausalLMLoss, and GPT2LMHeadModel's class name gives it no
        # loss_type: its Trainer divides the token sum by every label, position 0 included (the
        # loss comes out x(T-1)/T). We count the targets for every causal LM, as it does for
        # LlamaForCausalLM (parity.clm_trainer_vs_hf), so the reference is set to count them.
        if trainer._loss_shifts_labels:
            print("parity: note: transformers now counts GPT-2's shifted labels itself")
        trainer._loss_shifts_labels = True
        trainer.train()
        differences += compare_runs("run_clm", ours, trainer, len(train_blocks), len(eval_blocks),
                                    STEPS, RTOL)

        saved = AutoModelForCausalLM.from_pretrained(ours).eval()
        probe = torch.tensor([eval_blocks[0]])
        with torch.no_grad():
            gap = (saved(probe).logits - trainer.model.eval()(probe).logits).abs().max().item()
        if gap > 1e-4:
            differences.append(f"the saved model's logits differ from HF's trained model by {gap}")
        print(f"parity: the saved model's logits are within {gap:.1e} of HF's trained model")
    fail_if(differences, f"run_clm against run_clm.py's pipeline and HF Trainer, {STEPS} steps")


if __name__ == "__main__":
    main()
