"""HF side of `ctrainer-bench seq2seq_vs_hf`: transformers' Seq2SeqTrainer training a T5 from a
config on (text, summary) JSON lines, the recipe of HF's examples/pytorch/summarization/
run_summarization.py (benchmark-only; runs in the tests' venv).

What run_summarization.py does for training, without the `datasets` package: set_seed,
AutoTokenizer, AutoModelForSeq2SeqLM from the config (new weights: ctrainer's run_summarization
--config_name, as no pretrained T5 is bundled), sources with --source_prefix truncated to
max_source_length, targets to max_target_length, DataCollatorForSeq2Seq(tokenizer, model=model,
label_pad_token_id=-100), Seq2SeqTrainer + Seq2SeqTrainingArguments, train(). The train
metrics go to --result_json.
"""
import argparse
import json

import torch
from transformers import (AutoTokenizer, DataCollatorForSeq2Seq, Seq2SeqTrainer,
                          Seq2SeqTrainingArguments, T5Config, T5ForConditionalGeneration,
                          set_seed)


class Pairs(torch.utils.data.Dataset):
    def __init__(self, features):
        self.features = features

    def __len__(self):
        return len(self.features)

    def __getitem__(self, i):
        return self.features[i]


def main():
    parser = argparse.ArgumentParser()
    for flag in ("--train_file", "--tokenizer_name", "--config_name", "--output_dir",
                 "--result_json", "--source_prefix"):
        parser.add_argument(flag, required=flag != "--source_prefix", default="")
    for flag, default in (("--max_source_length", 128), ("--max_target_length", 32),
                          ("--max_steps", 20), ("--per_device_train_batch_size", 8),
                          ("--seed", 42), ("--threads", 2)):
        parser.add_argument(flag, type=int, default=default)
    parser.add_argument("--learning_rate", type=float, default=1e-3)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    set_seed(args.seed)
    tokenizer = AutoTokenizer.from_pretrained(args.tokenizer_name)
    with open(args.config_name) as f:
        settings = json.load(f)
    settings.pop("model_type", None)  # T5Config's own
    config = T5Config(**settings)
    model = T5ForConditionalGeneration(config)
    with open(args.train_file) as f:
        rows = [json.loads(line) for line in f if line.strip()]
    features = []
    for row in rows:
        if not row.get("text") or not row.get("summary"):
            continue
        source = tokenizer(args.source_prefix + row["text"], max_length=args.max_source_length,
                           truncation=True)
        target = tokenizer(text_target=row["summary"], max_length=args.max_target_length,
                           truncation=True)
        features.append({"input_ids": source["input_ids"],
                         "attention_mask": source["attention_mask"],
                         "labels": target["input_ids"]})
    training_args = Seq2SeqTrainingArguments(
        output_dir=args.output_dir, max_steps=args.max_steps,
        per_device_train_batch_size=args.per_device_train_batch_size,
        learning_rate=args.learning_rate, seed=args.seed, use_cpu=True, save_strategy="no",
        report_to="none", disable_tqdm=True, dataloader_num_workers=0,
        logging_steps=args.max_steps, train_sampling_strategy="sequential")
    trainer = Seq2SeqTrainer(
        model=model, args=training_args, train_dataset=Pairs(features),
        data_collator=DataCollatorForSeq2Seq(tokenizer, model=model, label_pad_token_id=-100),
        processing_class=tokenizer)
    metrics = trainer.train().metrics
    with open(args.result_json, "w") as f:
        json.dump(metrics, f)


if __name__ == "__main__":
    main()
