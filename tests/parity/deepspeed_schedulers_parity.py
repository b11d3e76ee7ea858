"""Our DeepSpeed LR schedulers (trainer/optim/deepspeed_schedulers.h) against DeepSpeed's own
deepspeed/runtime/lr_schedules.py: the lr and beta1 of every param group after construction and
after each step() must be equal bit for bit. Cases with resume_at save our scheduler's state
mid-schedule and continue in a fresh one; they must still equal DeepSpeed's uninterrupted run.

DeepSpeed comes from PyPI without its compiled ops (`DS_BUILD_OPS=0 pip install deepspeed`; the
schedulers are pure Python). The reference builds the scheduler as DeepSpeed's engine does:
getattr(lr_schedules, type)(optimizer, **params).
"""
import json
import os
import sys
import tempfile

import torch

from parity_support import binary, fail_if, run

try:
    from deepspeed.runtime import lr_schedules
except ImportError as error:
    sys.exit(f"parity: {error}. Install DeepSpeed's Python code into the tests' environment with "
             "DS_BUILD_OPS=0 pip install deepspeed")

DUMP = "ctrainer_parity_deepspeed_schedulers_dump"
TWO = [1e-3, 2e-4]  # group lrs of the two-group cases

CASES = [
    # WarmupLR
    dict(optimizer="adamw", group_lrs=TWO, type="WarmupLR", steps=15,
         params=dict(warmup_min_lr=0, warmup_max_lr=0.001, warmup_num_steps=10)),
    dict(optimizer="adamw", group_lrs=TWO, type="WarmupLR", steps=15, resume_at=7,
         params=dict(warmup_min_lr=[0.0, 1e-5], warmup_max_lr=[1e-3, 5e-4], warmup_num_steps=10,
                     warmup_type="linear")),
    dict(optimizer="sgd", group_lrs=[3e-4, 1e-4], type="WarmupLR", steps=6,
         params=dict(warmup_num_steps=1)),  # max lr = the group lrs; 1 warm-up step -> 2
    dict(optimizer="adamw", group_lrs=[1e-3], type="WarmupLR", steps=6,
         params=dict(warmup_num_steps=4, last_batch_iteration=3)),
    # WarmupDecayLR
    dict(optimizer="adamw", group_lrs=TWO, type="WarmupDecayLR", steps=35, resume_at=12,
         params=dict(total_num_steps=30, warmup_min_lr=1e-6, warmup_max_lr=3e-4,
                     warmup_num_steps=10)),
    dict(optimizer="adam", group_lrs=[5e-4], type="WarmupDecayLR", steps=22,
         params=dict(total_num_steps=20, warmup_num_steps=5, warmup_type="linear")),
    dict(optimizer="sgd", group_lrs=[0.1], type="WarmupDecayLR", steps=12,
         params=dict(total_num_steps=5, warmup_num_steps=8, warmup_max_lr=0.1)),
    # WarmupCosineLR
    dict(optimizer="adamw", group_lrs=TWO, type="WarmupCosineLR", steps=35, resume_at=15,
         params=dict(total_num_steps=30, warmup_num_steps=10, warmup_min_ratio=0.1,
                     cos_min_ratio=0.01)),
    dict(optimizer="sgd", group_lrs=[0.05], type="WarmupCosineLR", steps=28,
         params=dict(total_num_steps=25, warmup_num_steps=5, warmup_type="linear")),
    dict(optimizer="adamw", group_lrs=[1e-3], type="WarmupCosineLR", steps=8,
         params=dict(total_num_steps=3, warmup_num_steps=5)),
    # OneCycle
    dict(optimizer="adamw", group_lrs=TWO, type="OneCycle", steps=20,
         params=dict(cycle_min_lr=1e-4, cycle_max_lr=1e-3, cycle_first_step_size=5)),
    dict(optimizer="adam", group_lrs=[1e-3], type="OneCycle", steps=24, resume_at=11,
         params=dict(cycle_min_lr=1e-5, cycle_max_lr=1e-3, cycle_first_step_size=4,
                     cycle_second_step_size=6, decay_step_size=2, decay_lr_rate=0.5,
                     decay_mom_rate=0.1, cycle_min_mom=0.85, cycle_max_mom=0.95)),
    dict(optimizer="sgd", group_lrs=TWO, type="OneCycle", steps=25,
         params=dict(cycle_min_lr=[1e-4, 2e-5], cycle_max_lr=[1e-2, 2e-3],
                     cycle_first_step_size=10, cycle_second_step_size=6,
                     cycle_first_stair_count=4, cycle_second_stair_count=3, decay_step_size=3,
                     decay_lr_rate=0.2)),
    dict(optimizer="adamw", group_lrs=TWO, type="OneCycle", steps=30, resume_at=9,
         params=dict(cycle_min_lr=0.0001, cycle_max_lr=0.01, cycle_first_step_size=7,
                     cycle_first_stair_count=3, cycle_min_mom=[0.8, 0.7],
                     cycle_max_mom=[0.9, 0.95], decay_step_size=4, decay_lr_rate=0.1)),
    dict(optimizer="adamw", group_lrs=[1e-3], type="OneCycle", steps=6,
         params=dict(cycle_min_lr=1e-4, cycle_max_lr=1e-3, cycle_first_step_size=3,
                     cycle_momentum=False, last_batch_iteration=2)),
]


def make_optimizer(kind, lrs):
    groups = [{"params": [torch.zeros(1, requires_grad=True)], "lr": lr} for lr in lrs]
    cls = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam, "adamw": torch.optim.AdamW}[kind]
    return cls(groups, lr=lrs[0])


def theirs(case):
    optimizer = make_optimizer(case["optimizer"], case["group_lrs"])
    scheduler = getattr(lr_schedules, case["type"])(optimizer, **case["params"])
    out = {"lrs": [], "betas": []}

    def record():
        out["lrs"].append([float(g["lr"]) for g in optimizer.param_groups])
        out["betas"].append([float(g["betas"][0]) for g in optimizer.param_groups
                             if "betas" in g])

    record()
    for _ in range(case["steps"]):
        scheduler.step()
        record()
    return out


def main():
    with tempfile.TemporaryDirectory() as scratch:
        path = os.path.join(scratch, "cases.json")
        with open(path, "w") as f:
            json.dump(CASES, f)
        ours = json.loads(run([binary(DUMP), path]).stdout)
    differences = []
    # Every case answered, each with one row per step (and the start): zip() alone would pass
    # an empty or short answer.
    if not isinstance(ours, list) or len(ours) != len(CASES):
        differences.append(f"{DUMP} answered {len(ours) if isinstance(ours, list) else ours!r} "
                           f"case(s) for the {len(CASES)} given")
        ours = ours if isinstance(ours, list) else []
    compared = 0
    for index, (case, our) in enumerate(zip(CASES, ours)):
        their = theirs(case)
        if len(their["lrs"]) != case["steps"] + 1:
            differences.append(f"case {index}: DeepSpeed recorded {len(their['lrs'])} rows for "
                               f"{case['steps']} steps")
        name = f"case {index} ({case['type']} {case['params']})"
        for key in ("lrs", "betas"):
            for step, (a, b) in enumerate(zip(our[key], their[key])):
                if a != b:  # exact: same formulas, same operation order, same libm
                    differences.append(f"{name}: {key} after {step} step(s): ours {a!r}, "
                                       f"DeepSpeed {b!r}")
            if len(our[key]) != len(their[key]):
                differences.append(f"{name}: {len(our[key])} {key} rows, DeepSpeed "
                                   f"{len(their[key])}")
        compared += 1
    if compared != len(CASES) or not CASES:
        differences.append(f"compared {compared} of {len(CASES)} cases")
    fail_if(differences, f"{compared} DeepSpeed scheduler cases")


if __name__ == "__main__":
    main()
