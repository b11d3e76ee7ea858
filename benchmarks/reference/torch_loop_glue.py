"""Plain-PyTorch side of `ctrainer-bench vs_hf`: the same model, data and hyper-parameters as
hf_trainer_glue.py, trained by a hand-written loop (benchmark-only; runs in the tests' venv).

The loop is what the Trainer does without its machinery: torch.optim.AdamW (fused for
adamw_torch_fused, as HF creates it) over two parameter groups (no weight decay on biases and
LayerNorm weights, HF's get_decay_parameter_names), a linear schedule with warmup, clipping of
the global gradient norm, the seed set before the model, batches drawn by a RandomSampler with a
generator seeded with --seed, bf16 autocast around forward and loss with --bf16. Timed like
train(): from before the first batch to after the last step, data loading (in this process)
included; evaluation afterwards.
"""
import argparse
import math
import time

import torch
from transformers import DataCollatorWithPadding, default_data_collator
from transformers import get_linear_schedule_with_warmup
from transformers.trainer_pt_utils import get_parameter_names

import glue_common as common

# HF's Trainer.get_decay_parameter_names: no decay for LayerNorm modules and these names.
NO_DECAY_PATTERNS = [r"bias", r"layernorm", r"rmsnorm", r"(?:^|\.)norm(?:$|\.)",
                     r"_norm(?:$|\.)"]


def make_optimizer(model, args):
    decay = set(get_parameter_names(model, [torch.nn.LayerNorm], NO_DECAY_PATTERNS))
    params = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    groups = [{"params": [p for n, p in params if n in decay], "weight_decay": args.weight_decay},
              {"params": [p for n, p in params if n not in decay], "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=args.learning_rate, betas=(0.9, 0.999), eps=1e-8,
                             fused=args.optim == "adamw_torch_fused")


def autocast(args):
    return torch.autocast(args.device, dtype=torch.bfloat16, enabled=args.bf16)


def train(model, loader, args, device, total_steps):
    """Returns (train metrics as train() reports them, unix time after the first step)."""
    optimizer = make_optimizer(model, args)
    warmup = math.ceil(total_steps * args.warmup_ratio)
    scheduler = get_linear_schedule_with_warmup(optimizer, warmup, total_steps)
    model.train()
    loss_sum = torch.zeros((), device=device)  # summed on the device: no sync per step
    step, first_step_time = 0, None
    start = time.time()
    while step < total_steps:
        for batch in loader:
            batch = {key: value.to(device) for key, value in batch.items()}
            with autocast(args):
                loss = model(**batch).loss
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), args.max_grad_norm)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
            loss_sum += loss.detach().float()
            step += 1
            if first_step_time is None:
                if device.type == "cuda":
                    torch.cuda.synchronize()
                first_step_time = time.time()
            if step == total_steps:
                break
    train_loss = loss_sum.item() / step
    runtime = time.time() - start
    samples = common.num_train_samples(args, len(loader.dataset))
    return ({"train_runtime": runtime, "train_samples_per_second": samples / runtime,
             "train_loss": train_loss}, first_step_time)


@torch.no_grad()
def evaluate(model, loader, args, device):
    model.eval()
    predictions, labels, loss_sum, n = [], [], 0.0, 0
    for batch in loader:
        batch = {key: value.to(device) for key, value in batch.items()}
        with autocast(args):
            output = model(**batch)
        predictions += output.logits.argmax(-1).tolist()
        labels += batch["labels"].tolist()
        loss_sum += output.loss.item() * len(batch["labels"])
        n += len(batch["labels"])
    metrics = common.glue_metrics(args.task_name, predictions, labels)
    metrics["loss"] = loss_sum / n
    return metrics


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    common.add_common_arguments(parser)
    args = parser.parse_args()
    common.check_arguments(args)
    device = torch.device(args.device)

    tokenizer = common.load_tokenizer(args)
    train_features, dev_features = common.load_splits(args, tokenizer)
    model = common.build_model(args).to(device)
    collate = (default_data_collator if args.pad_to_max_length
               else DataCollatorWithPadding(tokenizer))
    train_set = common.ListDataset(train_features)
    generator = torch.Generator().manual_seed(args.seed)
    train_loader = torch.utils.data.DataLoader(
        train_set, batch_size=args.per_device_train_batch_size,
        sampler=torch.utils.data.RandomSampler(train_set, generator=generator),
        collate_fn=collate, num_workers=0, pin_memory=device.type == "cuda")  # HF pins on CUDA
    dev_loader = torch.utils.data.DataLoader(
        common.ListDataset(dev_features), batch_size=args.per_device_eval_batch_size,
        shuffle=False, collate_fn=collate, num_workers=0)
    # HF's step count: max_steps, else ceil(epochs x batches per epoch).
    total_steps = (args.max_steps if args.max_steps > 0
                   else math.ceil(args.num_train_epochs * len(train_loader)))
    train_metrics, first_step_time = train(model, train_loader, args, device, total_steps)
    eval_metrics = evaluate(model, dev_loader, args, device)
    common.write_result(args, "torch_loop", train_metrics, eval_metrics, first_step_time,
                        {"global_step": total_steps})


if __name__ == "__main__":
    main()
