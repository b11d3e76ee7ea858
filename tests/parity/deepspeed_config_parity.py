"""parity.deepspeed_config: ctrainer fills a DeepSpeed config's "auto" values and reports
mismatches exactly as transformers' HfTrainerDeepSpeedConfig (trainer_config_process +
trainer_config_finalize) does, for HF's guide configs and several argument combinations.

transformers will not build an HfTrainerDeepSpeedConfig unless the deepspeed package is
installed (it only checks its version): the tests' environment pins it
(scripts/requirements-test.txt; no CUDA op is built).
"""
import importlib
import importlib.util
import json
import os
import subprocess
import sys
import tempfile

from parity_support import SOURCE_DIR, binary, fail_if, run

DATA = os.path.join(SOURCE_DIR, "tests", "data", "deepspeed")


def ensure_deepspeed():
    if importlib.util.find_spec("deepspeed") is None:
        sys.exit("parity: transformers' HfTrainerDeepSpeedConfig needs the deepspeed package; "
                 "install the tests' environment with scripts/install-deps.sh --tests "
                 "(scripts/requirements-test.txt pins it)")


ensure_deepspeed()
from transformers import TrainingArguments  # noqa: E402
from transformers.integrations.deepspeed import (  # noqa: E402
    HfTrainerDeepSpeedConfig, unset_hf_deepspeed_config)


class Args(TrainingArguments):
    """transformers' own TrainingArguments with the world size of a launch we do not start."""

    @property
    def world_size(self):
        return self._test_world_size


def hf_fill(config_path, a):
    args = Args(output_dir=tempfile.mkdtemp(), report_to="none", use_cpu=True)
    args._test_world_size = a.get("world_size", 1)
    for key in ("per_device_train_batch_size", "gradient_accumulation_steps", "max_grad_norm",
                "learning_rate", "adam_beta1", "adam_beta2", "adam_epsilon", "weight_decay",
                "fp16", "fp16_full_eval", "bf16", "bf16_full_eval", "warmup_steps"):
        if key in a:
            setattr(args, key, a[key])
    model_config = type("Config", (), a.get("model_config", {}))
    model = type("Model", (), {"config": model_config})()
    with open(config_path) as f:
        ds = HfTrainerDeepSpeedConfig(json.load(f))
    try:
        ds.trainer_config_process(args)
        ds.trainer_config_finalize(args, model, a["num_training_steps"])
        return {"config": ds.config}, args.get_warmup_steps(a["num_training_steps"])
    except ValueError as error:
        return {"error": str(error)}, args.get_warmup_steps(a["num_training_steps"])
    finally:
        unset_hf_deepspeed_config()


def ours(config_path, a, warmup_steps):
    mc = a.get("model_config", {})
    hidden = mc.get("hidden_size", max(mc["hidden_sizes"]) if "hidden_sizes" in mc else None)
    payload = {k: v for k, v in a.items() if k != "model_config"}
    payload.update(hidden_size=hidden, warmup_steps=warmup_steps)
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(payload, f)
    try:
        result = run([binary("ctrainer_parity_deepspeed_fill"), config_path, f.name])
    finally:
        os.unlink(f.name)
    return json.loads(result.stdout)


def same(a, b):
    """Equal values of the same JSON type (an int is not a float, a bool not an int)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def auto_paths(node, prefix=""):
    for key, value in node.items():
        path = prefix + key
        if isinstance(value, dict):
            yield from auto_paths(value, path + ".")
        elif value == "auto":
            yield path


def lookup(node, path):
    for part in path.split("."):
        node = node[part]
    return node


def mismatch_lines(message):
    return [line for line in message.splitlines() if line.startswith("- ds ")]


BERT = {"hidden_size": 128}
CASES = [
    ("HF ZeRO-2, defaults", "ds_config_zero2.json",
     dict(num_training_steps=100, model_config=BERT)),
    ("HF ZeRO-3, world 2, fp16, warmup 10", "ds_config_zero3.json",
     dict(world_size=2, per_device_train_batch_size=4, gradient_accumulation_steps=3,
          learning_rate=3e-4, weight_decay=0.01, adam_epsilon=1e-6, fp16=True, warmup_steps=10,
          num_training_steps=250, model_config={"hidden_size": 768})),
    ("HF ZeRO-3, hidden_sizes", "ds_config_zero3.json",
     dict(num_training_steps=40, model_config={"hidden_sizes": [64, 256, 128]})),
    ("HF ZeRO-3, model without hidden_size", "ds_config_zero3.json",
     dict(num_training_steps=40, model_config={})),
    ("mixed explicit/auto, WarmupDecayLR, warmup ratio", "mixed_explicit_auto.json",
     dict(world_size=2, per_device_train_batch_size=4, gradient_accumulation_steps=2,
          max_grad_norm=0.5, learning_rate=3e-5, adam_epsilon=1e-6, warmup_steps=0.1,
          num_training_steps=333, model_config={"hidden_size": 96})),
    ("fp16 section, static loss scale", "fp16_static.json",
     dict(fp16=True, per_device_train_batch_size=2, num_training_steps=10, model_config=BERT)),
    ("bf16, WarmupCosineLR, world 2", "bf16_cosine.json",
     dict(world_size=2, bf16=True, max_grad_norm=0.0, num_training_steps=77, warmup_steps=5,
          model_config={"hidden_size": 1024})),
    ("every kind of mismatch", "mismatches.json",
     dict(num_training_steps=500, model_config=BERT)),
    ("some mismatches, world 2", "mismatches.json",
     dict(world_size=2, per_device_train_batch_size=16, gradient_accumulation_steps=2,
          learning_rate=0.001, adam_beta1=0.8, adam_beta2=0.99, fp16=True, warmup_steps=7,
          num_training_steps=900, model_config=BERT)),
]

differences = []
for name, config_file, a in CASES:
    path = os.path.join(DATA, config_file)
    hf, warmup = hf_fill(path, a)
    mine = ours(path, a, warmup)
    if "error" in hf or "error" in mine:
        if "error" not in hf or "error" not in mine:
            differences.append(f"{name}: transformers {hf} vs ctrainer {mine}")
        elif mismatch_lines(hf["error"]) != mismatch_lines(mine["error"]):
            differences.append(f"{name}: mismatches differ:\n  transformers "
                               f"{mismatch_lines(hf['error'])}\n  ctrainer "
                               f"{mismatch_lines(mine['error'])}")
        elif not mismatch_lines(hf["error"]) and hf["error"] not in mine["error"]:
            differences.append(f"{name}: errors differ: {hf['error']!r} vs {mine['error']!r}")
        else:
            print(f"parity: {name}: same error ({len(mismatch_lines(hf['error']))} mismatches)")
        continue
    with open(path) as f:
        original = json.load(f)
    for key in auto_paths(original):
        theirs, mine_value = lookup(hf["config"], key), lookup(mine["config"], key)
        if not same(theirs, mine_value):
            differences.append(f"{name}: {key}: transformers {theirs!r} vs ctrainer {mine_value!r}")
    if not same(hf["config"], mine["config"]):
        differences.append(f"{name}: filled configs differ:\n  transformers {hf['config']}\n"
                           f"  ctrainer     {mine['config']}")
    else:
        print(f"parity: {name}: {len(list(auto_paths(original)))} auto values filled alike")

fail_if(differences, "DeepSpeed config filling")
