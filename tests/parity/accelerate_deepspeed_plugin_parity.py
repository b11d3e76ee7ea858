"""parity.accelerate_deepspeed_plugin: the DeepSpeed config that accelerate's DeepSpeedPlugin
builds from accelerate launch's variables (ACCELERATE_DEEPSPEED_*, ACCELERATE_GRADIENT_*,
ACCELERATE_DEEPSPEED_CONFIG_FILE, ACCELERATE_CONFIG_DS_FIELDS), then set_mixed_precision, as
HF's TrainingArguments does when ACCELERATE_USE_DEEPSPEED=true and --deepspeed is not given;
against ctrainer's accelerate_deepspeed_plugin_config and apply_deepspeed_mixed_precision.

accelerate adds "steps_per_print": inf to silence DeepSpeed's own logging; that key is left out
of the comparison (ctrainer logs every --logging_steps). Where accelerate raises, ctrainer must
refuse too.
"""
import copy
import json
import os
import tempfile

from accelerate.utils import DeepSpeedPlugin

from parity_support import binary, fail_if, run

ZERO3_LAUNCH = {
    "ACCELERATE_USE_DEEPSPEED": "true",
    "ACCELERATE_CONFIG_DS_FIELDS": "gradient_accumulation_steps,gradient_clipping,"
                                   "offload_optimizer_device,offload_param_device,zero3_init_flag,"
                                   "zero3_save_16bit_model,zero_stage,mixed_precision",
    "ACCELERATE_DEEPSPEED_ZERO_STAGE": "3", "ACCELERATE_GRADIENT_ACCUMULATION_STEPS": "2",
    "ACCELERATE_GRADIENT_CLIPPING": "1.0", "ACCELERATE_DEEPSPEED_OFFLOAD_OPTIMIZER_DEVICE": "none",
    "ACCELERATE_DEEPSPEED_OFFLOAD_PARAM_DEVICE": "none", "ACCELERATE_DEEPSPEED_ZERO3_INIT": "true",
    "ACCELERATE_DEEPSPEED_ZERO3_SAVE_16BIT_MODEL": "true",
}


def cases(folder):
    def file(name, config):
        path = os.path.join(folder, name)
        with open(path, "w") as f:
            f.write(config if isinstance(config, str) else json.dumps(config))
        return path

    autos = file("autos.json", {
        "zero_optimization": {"stage": "auto", "offload_optimizer": {"device": "auto"},
                              "offload_param": {"device": "cpu", "nvme_path": "auto"},
                              "stage3_gather_16bit_weights_on_model_save": "auto"},
        "gradient_clipping": "auto", "train_micro_batch_size_per_gpu": "auto",
        "optimizer": {"type": "AdamW", "params": {"lr": "auto"}}})
    plain = file("plain.json", {"zero_optimization": {"stage": 2}, "gradient_accumulation_steps": 4,
                                "fp16": {"enabled": "auto"}, "bf16": {"enabled": False}})
    bf16_on = file("bf16_on.json", {"zero_optimization": {"stage": 1}, "bf16": {"enabled": "True"}})
    no_zero = file("no_zero.json", {"train_batch_size": 8})
    with_file = {"ACCELERATE_USE_DEEPSPEED": "true",
                 "ACCELERATE_CONFIG_DS_FIELDS": "deepspeed_config_file,zero3_init_flag"}
    out = []
    for mp in ("no", "bf16", "fp16"):
        out.append(({"ACCELERATE_USE_DEEPSPEED": "true"}, mp))
        out.append((ZERO3_LAUNCH, mp))
        out.append((dict(with_file, ACCELERATE_DEEPSPEED_CONFIG_FILE=autos,
                         ACCELERATE_DEEPSPEED_ZERO_STAGE="1", ACCELERATE_GRADIENT_CLIPPING="0.5",
                         ACCELERATE_DEEPSPEED_OFFLOAD_PARAM_NVME_PATH="/nvme"), mp))
        out.append((dict(with_file, ACCELERATE_DEEPSPEED_CONFIG_FILE=plain), mp))
        out.append((dict(with_file, ACCELERATE_DEEPSPEED_CONFIG_FILE=bf16_on), mp))
    out += [
        (dict(ZERO3_LAUNCH, ACCELERATE_GRADIENT_ACCUMULATION_STEPS="4",
              ACCELERATE_GRADIENT_CLIPPING="0.0", ACCELERATE_DEEPSPEED_ZERO_STAGE="1",
              ACCELERATE_DEEPSPEED_OFFLOAD_OPTIMIZER_DEVICE="cpu"), "no"),
        (dict(ZERO3_LAUNCH, ACCELERATE_DEEPSPEED_OFFLOAD_OPTIMIZER_DEVICE="nvme",
              ACCELERATE_DEEPSPEED_OFFLOAD_OPTIMIZER_NVME_PATH="/local_nvme",
              ACCELERATE_DEEPSPEED_OFFLOAD_PARAM_DEVICE="nvme"), "no"),
        (dict(ZERO3_LAUNCH, ACCELERATE_GRADIENT_ACCUMULATION_STEPS="2x"), "no"),
        (dict(ZERO3_LAUNCH, ACCELERATE_GRADIENT_CLIPPING=" 2 "), "no"),
        (dict(ZERO3_LAUNCH, ACCELERATE_DEEPSPEED_ZERO_STAGE=" 0"), "no"),
        (dict(ZERO3_LAUNCH, ACCELERATE_DEEPSPEED_ZERO3_SAVE_16BIT_MODEL="TRUE"), "no"),
        # accelerate refuses these.
        (dict(ZERO3_LAUNCH, ACCELERATE_GRADIENT_CLIPPING="abc"), "no"),
        (dict(ZERO3_LAUNCH, ACCELERATE_DEEPSPEED_ZERO_STAGE="three"), "no"),
        (dict(with_file, ACCELERATE_DEEPSPEED_CONFIG_FILE=no_zero), "no"),
        (dict(with_file, ACCELERATE_DEEPSPEED_CONFIG_FILE=autos,
              ACCELERATE_CONFIG_DS_FIELDS="deepspeed_config_file,gradient_clipping"), "no"),
        (dict(with_file, ACCELERATE_DEEPSPEED_CONFIG_FILE=plain,
              ACCELERATE_CONFIG_DS_FIELDS="deepspeed_config_file,mixed_precision"), "no"),
    ]
    return [{"environment": env, "mixed_precision": mp} for env, mp in out]


def accelerate_answer(case):
    for name in [n for n in os.environ if n.startswith("ACCELERATE_")]:
        del os.environ[name]
    os.environ.update(case["environment"])
    try:
        plugin = DeepSpeedPlugin()
        plugin.set_mixed_precision(case["mixed_precision"])
    except (ValueError, TypeError) as error:
        return {"error": f"{type(error).__name__}: {error}"}
    config = copy.deepcopy(plugin.deepspeed_config)
    config.pop("steps_per_print", None)
    return {"config": config}


def main():
    with tempfile.TemporaryDirectory() as folder:
        table = cases(folder)
        expected = [accelerate_answer(c) for c in table]
        path = os.path.join(folder, "cases.json")
        with open(path, "w") as f:
            json.dump(table, f)
        lines = run([binary("ctrainer_parity_accelerate_deepspeed_plugin_dump"), path]
                    ).stdout.splitlines()
    if len(lines) != len(table):
        fail_if([f"{len(lines)} answers for {len(table)} cases"], "the dump's output")
    differences, refused = [], 0
    for case, want, line in zip(table, expected, lines):
        got = json.loads(line)
        if "error" in want:
            refused += 1
            ok = "error" in got
        else:
            ok = got == want
        if not ok:
            differences.append(f"{json.dumps(case)}:\n    accelerate {json.dumps(want)}\n"
                               f"    ctrainer   {json.dumps(got)}")
    print(f"parity: {len(table)} cases, {refused} refused by accelerate")
    if refused == 0 or refused == len(table):
        fail_if(["the table must hold accepted and refused cases"], "the case table")
    fail_if(differences, "accelerate's DeepSpeed plugin config")


if __name__ == "__main__":
    main()
