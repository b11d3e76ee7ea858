"""Our --lr_scheduler_type schedules with --lr_scheduler_kwargs (trainer/optim/lr_scheduler.h)
against transformers' get_scheduler(name, optimizer, num_warmup_steps, num_training_steps,
scheduler_specific_kwargs): the lr of every param group after construction and after each
step() must be equal bit for bit, for every schedule, with and without its arguments, one and
two param groups, past the end of training, and across a save / load of the scheduler's state
(resume_at). Then the arguments a schedule does not take must be refused by both sides.
"""
import json
import os
import subprocess
import sys
import tempfile

import warnings

import torch

from parity_support import binary, fail_if, run

from transformers.optimization import get_scheduler

DUMP = "ctrainer_parity_deepspeed_schedulers_dump"
TWO = [1e-3, 2e-4]


def case(schedule, warmup, total, kwargs=None, steps=None, lrs=(5e-4,), resume_at=None):
    c = dict(optimizer="adamw", group_lrs=list(lrs), schedule=schedule, warmup=warmup, total=total,
             steps=steps if steps is not None else total + 3)
    if kwargs is not None:
        c["kwargs"] = kwargs
    if resume_at is not None:
        c["resume_at"] = resume_at
    return c


CASES = [
    case("linear", 4, 20), case("linear", 0, 7, lrs=TWO),
    case("cosine", 5, 30), case("cosine", 5, 30, {"num_cycles": 1.5}, lrs=TWO, resume_at=11),
    case("cosine_with_restarts", 3, 25), case("cosine_with_restarts", 3, 25, {"num_cycles": 3}),
    case("polynomial", 4, 20), case("polynomial", 4, 20, {"lr_end": 1e-5, "power": 2.0}, lrs=TWO),
    case("constant", 3, 10), case("constant_with_warmup", 6, 15, lrs=TWO),
    case("inverse_sqrt", 5, 30), case("inverse_sqrt", 0, 12), case("inverse_sqrt", 5, 30, {"timescale": 12}),
    case("cosine_with_min_lr", 4, 24, {"min_lr_rate": 0.1}),
    case("cosine_with_min_lr", 4, 24, {"min_lr": 5e-5, "num_cycles": 1.0}, lrs=TWO, resume_at=9),
    case("cosine_warmup_with_min_lr", 5, 24, {"min_lr_rate": 0.05}),
    case("cosine_warmup_with_min_lr", 5, 24, {"min_lr": 1e-5, "warmup_lr_rate": 0.2}, lrs=TWO),
    case("warmup_stable_decay", 5, 40, {"num_decay_steps": 10}),
    case("warmup_stable_decay", 5, 40, {"num_decay_steps": 12, "decay_type": "linear",
                                        "warmup_type": "cosine", "min_lr_ratio": 0.1}, resume_at=20),
    case("warmup_stable_decay", 6, 40, {"num_decay_steps": 8, "num_stable_steps": 10,
                                        "decay_type": "1-sqrt", "warmup_type": "1-sqrt"}, lrs=TWO),
    case("warmup_stable_decay", 4, 30, {"num_decay_steps": 10, "num_cycles": 1.0, "min_lr_ratio": 0.2}),
]

# Arguments a schedule does not take, or lacks: both must refuse (HF: TypeError / ValueError).
REFUSED = [
    case("cosine", 2, 10, {"min_lr": 1e-5}), case("linear", 2, 10, {"num_cycles": 1}),
    case("warmup_stable_decay", 2, 10, {}), case("cosine_with_min_lr", 2, 10, {}),
    case("cosine_with_min_lr", 2, 10, {"min_lr": 1e-5, "min_lr_rate": 0.1}),
    case("warmup_stable_decay", 2, 10, {"num_decay_steps": 3, "decay_type": "exponential"}),
    case("polynomial", 2, 10, {"lr_end": 1.0}),
]


def make_optimizer(lrs):
    groups = [{"params": [torch.zeros(1, requires_grad=True)], "lr": lr} for lr in lrs]
    return torch.optim.AdamW(groups, lr=lrs[0])


def theirs(c):
    optimizer = make_optimizer(c["group_lrs"])
    scheduler = get_scheduler(c["schedule"], optimizer, num_warmup_steps=c["warmup"],
                              num_training_steps=c["total"], scheduler_specific_kwargs=c.get("kwargs"))
    lrs = [[float(g["lr"]) for g in optimizer.param_groups]]
    for _ in range(c["steps"]):
        scheduler.step()
        lrs.append([float(g["lr"]) for g in optimizer.param_groups])
    return lrs


def main():
    warnings.filterwarnings("ignore")  # torch: step() before optimizer.step(); HF: num_stable_steps
    differences, compared = [], 0
    with tempfile.TemporaryDirectory() as scratch:
        path = os.path.join(scratch, "cases.json")
        with open(path, "w") as f:
            json.dump(CASES, f)
        ours = json.loads(run([binary(DUMP), path]).stdout)
        if not isinstance(ours, list) or len(ours) != len(CASES):
            sys.exit(f"parity: {DUMP} answered {len(ours) if isinstance(ours, list) else ours!r} for "
                     f"{len(CASES)} cases")
        for c, mine in zip(CASES, ours):
            reference = theirs(c)
            compared += len(reference)
            if mine["lrs"] != reference:
                at = next(i for i, (a, b) in enumerate(zip(mine["lrs"], reference)) if a != b) \
                    if len(mine["lrs"]) == len(reference) else "length"
                differences.append(f"{c['schedule']} {c.get('kwargs')}: first difference at step {at}: "
                                   f"ours {mine['lrs'][at] if at != 'length' else len(mine['lrs'])}, "
                                   f"transformers {reference[at] if at != 'length' else len(reference)}")
        for c in REFUSED:
            with open(path, "w") as f:
                json.dump([c], f)
            result = subprocess.run([binary(DUMP), path], capture_output=True, text=True)
            try:
                theirs(c)
                refused_by_hf = False
            except (TypeError, ValueError):
                refused_by_hf = True
            if not refused_by_hf or result.returncode == 0 or "lr_scheduler_kwargs" not in result.stderr:
                differences.append(f"refusal of {c['schedule']} {c['kwargs']}: transformers "
                                   f"{'refuses' if refused_by_hf else 'accepts'}, ours exits "
                                   f"{result.returncode}: {result.stderr.strip()[:200]}")
            compared += 1
    if compared == 0:
        sys.exit("parity: nothing was compared")
    fail_if(differences, f"{len(CASES)} schedules, {compared} lrs and refusals compared")


if __name__ == "__main__":
    main()
