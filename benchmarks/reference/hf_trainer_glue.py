"""HF side of `ctrainer-bench vs_hf`: transformers' Trainer on a GLUE task, the recipe of HF's
examples/pytorch/text-classification/run_glue.py (benchmark-only; runs in the tests' venv).

What run_glue.py does, without the `datasets` / `evaluate` packages: set_seed, BertTokenizerFast,
tokenization with truncation and padding to max_seq_length (its default pad_to_max_length=True)
or none, the first --max_train_samples rows, default_data_collator (or DataCollatorWithPadding
with dynamic padding), Trainer + TrainingArguments with HF's defaults except what the bench passes
(linear schedule, warmup, weight decay, max_grad_norm, seed, optim), train(), save_model(),
evaluate(). Training's throughput and loss come from train()'s metrics; evaluation runs after
train(), outside train_samples_per_second, as in our run_glue. Data loading happens in this
process (dataloader_num_workers 0), as in our run_glue.

    python hf_trainer_glue.py --task_name sst2 --data_dir examples/data/glue/SST-2 \
        --config_name bert-small.json --tokenizer_name vocab.txt --max_seq_length 64 \
        --per_device_train_batch_size 8 --output_dir out --result_json out/result.json
"""
import argparse
import time

import torch
import transformers
from transformers import (DataCollatorWithPadding, Trainer, TrainerCallback, TrainingArguments,
                          default_data_collator)

import glue_common as common


class FirstStepTime(TrainerCallback):
    """time.time() at the end of the first optimizer step (on_step_end follows the optimizer and
    scheduler steps). On CUDA the step's kernels are waited for first."""

    def __init__(self):
        self.unix_time = None

    def on_step_end(self, args, state, control, **kwargs):
        if self.unix_time is None:
            if torch.cuda.is_available() and not args.use_cpu:
                torch.cuda.synchronize()
            self.unix_time = time.time()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    common.add_common_arguments(parser)
    parser.add_argument("--logging_steps", type=int, default=500,
                        help="HF's logging_steps (default 500, HF's); every logged loss and "
                             "grad_norm goes to the result JSON's log_history, for comparing "
                             "training curves with run_glue --logging_steps")
    args = parser.parse_args()
    if args.logging_steps <= 0:
        common.fail(f"--logging_steps {args.logging_steps}: give a positive step count")
    common.check_arguments(args)
    transformers.logging.set_verbosity_warning()

    tokenizer = common.load_tokenizer(args)
    train, dev = common.load_splits(args, tokenizer)
    model = common.build_model(args)
    # TrainingArguments(warmup_steps=<float in [0, 1)>) is transformers 5's warmup ratio (the
    # warmup_ratio field is gone); both round up as our --warmup_ratio does.
    training_args = TrainingArguments(
        output_dir=args.output_dir, do_train=True, do_eval=True,
        per_device_train_batch_size=args.per_device_train_batch_size,
        per_device_eval_batch_size=args.per_device_eval_batch_size,
        learning_rate=args.learning_rate, weight_decay=args.weight_decay,
        warmup_steps=args.warmup_ratio, num_train_epochs=args.num_train_epochs,
        max_steps=args.max_steps, max_grad_norm=args.max_grad_norm, seed=args.seed,
        optim=args.optim, lr_scheduler_type="linear", use_cpu=args.device == "cpu",
        bf16=args.bf16, dataloader_num_workers=0, save_strategy="no", report_to="none",
        disable_tqdm=True, logging_steps=args.logging_steps)
    collator = (default_data_collator if args.pad_to_max_length
                else DataCollatorWithPadding(tokenizer))
    first_step = FirstStepTime()
    trainer = Trainer(model=model, args=training_args, train_dataset=common.ListDataset(train),
                      eval_dataset=common.ListDataset(dev), processing_class=tokenizer,
                      data_collator=collator, callbacks=[first_step],
                      compute_metrics=lambda p: common.glue_metrics(
                          args.task_name, p.predictions.argmax(-1), p.label_ids))
    train_metrics = trainer.train().metrics
    trainer.save_model()
    evaluation = trainer.evaluate()
    eval_metrics = {key[len("eval_"):]: value for key, value in evaluation.items()
                    if key[len("eval_"):] in ("accuracy", "f1", "combined_score", "loss")}
    common.write_result(args, "hf_trainer", train_metrics, eval_metrics, first_step.unix_time,
                        {"transformers_version": transformers.__version__,
                         "global_step": trainer.state.global_step,
                         "log_history": trainer.state.log_history})


if __name__ == "__main__":
    main()
