"""The bad inputs of docs/errors.md: one Case per input, with the files it writes into a fresh
folder, the command run there and the environment it adds (error_catalogue.py runs them and
writes the catalogue). Python standard library only."""
import json
import os
import re
import struct

from error_cases_accelerate import accelerate_cases
from error_cases_generation import generation_cases
from error_cases_sagemaker import sagemaker_cases
from error_cases_seq2seq import seq2seq_cases

PROGRAMS = ("run_glue", "ctrainer-train-classifier", "ctrainer-run", "ctrainer-consolidate",
            "ctrainer-tokenize", "ctrainer-plot", "run_clm", "run_mlm", "ctrainer-generate",
            "run_summarization", "run_translation")
TIMEOUT_S = 60

# Abbreviations of the commands' common part (explained at the top of docs/errors.md).
GLUE_DATA = ["run_glue", "--task_name", "mrpc", "--data_dir", "data", "--output_dir", "out",
             "--do_train", "--max_steps", "1", "--report_to", "none", "--save_strategy", "no"]
GLUE = GLUE_DATA + ["--config_name", "bert-tiny.json", "--tokenizer_name", "vocab.txt"]
CLS = ["ctrainer-train-classifier", "--do_train", "--output_dir", "out", "--max_steps", "2",
       "--num_train_examples", "64", "--num_eval_examples", "16", "--report_to", "none",
       "--save_strategy", "no"]
LM_COMMON = ["--output_dir", "out", "--do_train", "--max_steps", "1", "--report_to", "none",
             "--save_strategy", "no", "--tokenizer_name", "vocab.txt"]
CLM = ["run_clm"] + LM_COMMON + ["--model_type", "gpt2", "--config_overrides",
                                 "n_embd=32,n_layer=1,n_head=2,vocab_size=30522,n_positions=64"]
MLM = ["run_mlm"] + LM_COMMON + ["--config_name", "bert-tiny.json"]
ABBREVIATIONS = {"$GLUE": GLUE, "$GLUE_DATA": GLUE_DATA, "$CLS": CLS, "$CLM": CLM, "$MLM": MLM}

# Launcher, SageMaker and tracking variables a case must not inherit from the caller's shell.
CLEANED_PREFIXES = ("SLURM_", "OMPI_", "PMI_", "PMIX_", "SM_", "SMDATAPARALLEL_", "MLFLOW_",
                    "HF_MLFLOW_", "TORCHELASTIC_", "CTRAINER_", "NCCL_", "GLOO_", "ACCELERATE_")
CLEANED = {"MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE",
           "GROUP_RANK", "GROUP_WORLD_SIZE", "ROLE_RANK", "ROLE_WORLD_SIZE", "ROLE_NAME",
           "TENSORBOARD_LOGGING_DIR", "TORCH_NCCL_ASYNC_ERROR_HANDLING"}


def code(text):
    """A Markdown code span holding `text` (tabs as spaces); cell() escapes its `|`."""
    text = text.replace("\t", " ")
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    if text.startswith("`") or text.endswith("`") or (
            text.startswith(" ") and text.endswith(" ") and text.strip()):
        text = f" {text} "
    return f"{fence}{text}{fence}"


# ---- the cases -----------------------------------------------------------------------------------

class Case:
    """One bad input.

    argv: program name (or an abbreviation of ABBREVIATIONS) and arguments; "@<program>" in the
    arguments is that program's path. files: name -> text, bytes or a function of the case folder
    returning either. copies: (prepared artefact, destination) pairs copied in before `edit`, a
    function of the case folder that damages them. refused: the input is refused before training,
    so the folder must be left as it was.
    """

    def __init__(self, what, argv, env=None, files=None, copies=(), edit=None, stdin=None,
                 refused=True):
        self.category = None
        self.what = what
        self.argv = argv
        self.env = env or {}
        self.files = files or {}
        self.copies = copies
        self.edit = edit
        self.stdin = stdin
        self.refused = refused


def described(shown, make):
    """`make` (a file's content, or an edit of the case folder) with its description for the
    catalogue's first column (Markdown; empty: not shown)."""
    make.shown = shown
    return make


def tsv_row(row):
    return code(row.replace("\t", "\\t")) if row else "an empty line"


def mrpc_rows(*rows):
    """The fixture's train.tsv header and first two rows, then `rows` (tab-separated lines)."""
    def make(folder):
        with open(os.path.join(folder, "data", "train.tsv"), encoding="utf-8") as f:
            head = f.read().splitlines()[:3]
        return "\n".join(head + list(rows)) + "\n"
    shown = "the header and first 2 rows of data/train.tsv"
    return described(shown + "".join(", then " + tsv_row(r) for r in rows), make)


def with_vocab(shown, transform):
    """The bundled vocabulary (one token per line) passed through `transform`."""
    def make(folder):
        with open(os.path.join(folder, "vocab.txt"), encoding="utf-8") as f:
            tokens = f.read().splitlines()
        return "\n".join(transform(tokens)) + "\n"
    return described(shown, make)


def with_config(**changes):
    """bert-tiny.json with some keys changed."""
    def make(folder):
        with open(os.path.join(folder, "bert-tiny.json"), encoding="utf-8") as f:
            config = json.load(f)
        config.update(changes)
        return json.dumps(config, indent=2) + "\n"
    shown = "bert-tiny.json with " + ", ".join(code(json.dumps({k: v})[1:-1])
                                               for k, v in changes.items())
    return described(shown if changes else "bert-tiny.json", make)


def safetensors(header, data_size, cut=None):
    """A safetensors file: the 8-byte little-endian header length, the JSON header, zeros;
    optionally cut to `cut` bytes."""
    text = json.dumps(header).encode()
    data = struct.pack("<Q", len(text)) + text + b"\0" * data_size
    shown = f"the header {code(json.dumps(header))}, {data_size} data bytes"
    if cut is not None:
        data = data[:cut]
        shown += f", cut to its first {cut} bytes"
    return described(shown, lambda folder: data)


def raw(shown, data):
    return described(shown, lambda folder: data)


def model_folder(weights):
    """Files of a pretrained model folder model/ (bert-tiny.json, the bundled vocabulary) with the
    given model.safetensors content."""
    return {"model/config.json": described("", with_config()),
            "model/vocab.txt": described("", lambda d: open(os.path.join(d, "vocab.txt"),
                                                            "rb").read()),
            "model/model.safetensors": weights}


def edit_json(path, shown, change):
    def edit(folder):
        full = os.path.join(folder, path)
        with open(full, encoding="utf-8") as f:
            value = json.load(f)
        change(value)
        with open(full, "w", encoding="utf-8") as f:
            json.dump(value, f, indent=2)
    return described(f"{code(path)}: {shown}", edit)


def flip_byte(path, offset=-5):
    def edit(folder):
        full = os.path.join(folder, path)
        with open(full, "rb") as f:
            data = bytearray(f.read())
        data[offset] ^= 0xFF
        with open(full, "wb") as f:
            f.write(data)
    return described(f"{code(path)}: the byte at {offset} from its end inverted", edit)


def truncate(path, size):
    def edit(folder):
        with open(os.path.join(folder, path), "r+b") as f:
            f.truncate(size)
    return described(f"{code(path)}: cut to its first {size} bytes", edit)


def remove(path):
    return described(f"{code(path)}: deleted", lambda folder: os.remove(os.path.join(folder, path)))


def write(path, content):
    def edit(folder):
        with open(os.path.join(folder, path), "w", encoding="utf-8") as f:
            f.write(content)
    return described(f"{code(path)}: {code(content)}", edit)


# What the prepared artefacts are (Context.prepare makes them once per run).
PREPARED = {
    "classifier-run/checkpoint-2": "checkpoint-2 of `$CLS --save_strategy steps --save_steps 1`",
    "model-only-run/checkpoint-1": "checkpoint-1 of `$CLS --max_steps 1 --save_strategy steps "
                                   "--save_steps 1 --save_only_model`",
    "zero1-run/checkpoint-1": "checkpoint-1 of `$CLS --max_steps 1 --save_strategy steps "
                              "--save_steps 1 --deepspeed z1.json`, z1.json: "
                              '`{"zero_optimization": {"stage": 1}}` (ZeRO-1: one rank\'s '
                              "zero/rank_0.safetensors and zero/rank_0.json)",
    "stsb-model": "output_dir of `run_glue --task_name stsb ... --max_steps 1` "
                  "(bert-tiny, a 1-label head)",
}


def cases():
    """(category, [Case]) in the order of docs/errors.md."""
    ds = lambda text: {"ds.json": text}  # noqa: E731
    fsdp = lambda text: {"fsdp.json": text}  # noqa: E731
    z1 = '"zero_optimization": {"stage": 1}'
    ck = [("classifier-run/checkpoint-2", "ck")]
    zero_ck = [("zero1-run/checkpoint-1", "ck")]

    flags = [
        Case("a misspelt flag", ["$GLUE", "--learnig_rate", "1e-4"]),
        Case("a flag with no close match (one dash)", ["$CLS", "-lr", "1"]),
        Case("a word where a number is expected", ["$GLUE", "--learning_rate", "abc"]),
        Case("a fraction where an integer is expected", ["$GLUE", "--max_steps", "1.5"]),
        Case("a flag without its value (last on the line)", ["$CLS", "--learning_rate"]),
        Case("a boolean flag followed by a word that is not true/false",
             ["$CLS", "--greater_is_better", "maybe"]),
        Case("--logging_dir a file with --report_to tensorboard",
             ["$CLS", "--report_to", "tensorboard", "--logging_dir", "notes.txt"],
             files={"notes.txt": "my notes\n"}),
        Case("a value outside the flag's choices", ["$GLUE", "--eval_strategy", "sometimes"]),
        Case("a transformers scheduler ctrainer lacks",
             ["$CLS", "--lr_scheduler_type", "reduce_lr_on_plateau"]),
        Case("a scheduler without the arguments it needs",
             ["$CLS", "--lr_scheduler_type", "cosine_with_min_lr"]),
        Case("a scheduler argument the schedule does not take",
             ["$CLS", "--lr_scheduler_type", "cosine", "--lr_scheduler_kwargs", '{"min_lr": 1e-5}']),
        Case("a transformers optimizer ctrainer lacks", ["$GLUE", "--optim", "adafactor"]),
        Case("a zero batch size", ["$GLUE", "--per_device_train_batch_size", "0"]),
        Case("a warm-up ratio above 1", ["$GLUE", "--warmup_ratio", "2"]),
        Case("label smoothing of 1", ["$GLUE", "--label_smoothing_factor", "1"]),
        Case("adam_beta1 of 1.5", ["$CLS", "--adam_beta1", "1.5"]),
        Case("a negative learning rate", ["$CLS", "--learning_rate", "-1"]),
        Case("a negative warm-up", ["$CLS", "--warmup_steps", "-5"]),
        Case("a fractional warm-up above 1 step", ["$CLS", "--warmup_steps", "2.5"]),
        Case("a negative NEFTune alpha", ["$CLS", "--neftune_noise_alpha", "-1"]),
        Case("a negative max_grad_norm", ["$CLS", "--max_grad_norm", "-1"]),
        Case("negative epochs", ["$CLS", "--max_steps", "-1", "--num_train_epochs", "-2"]),
        Case("save_total_limit 0", ["$CLS", "--save_total_limit", "0"]),
        Case("a negative logging interval", ["$CLS", "--logging_steps", "-1"]),
        Case("save_steps 0 with save_strategy steps",
             ["$CLS", "--save_strategy", "steps", "--save_steps", "0"]),
        Case("a negative eval interval",
             ["$CLS", "--eval_strategy", "steps", "--eval_steps", "-1"]),
        Case("a zero DDP timeout", ["$CLS", "--ddp_timeout", "0"]),
        Case("a negative number of workers", ["$CLS", "--dataloader_num_workers", "-1"]),
        Case("an unknown log level", ["$CLS", "--log_level", "verbose"]),
        Case("--fp16 on a machine without a GPU", ["$GLUE", "--fp16"]),
        Case("--fp16 and --bf16 together", ["$GLUE", "--fp16", "--bf16"]),
        Case("--fp16_full_eval on the CPU", ["$CLS", "--fp16_full_eval"]),
        Case("--fp16_full_eval and --bf16_full_eval together",
             ["$CLS", "--fp16_full_eval", "--bf16_full_eval"]),
        Case("--tf32 on the CPU", ["$CLS", "--tf32"]),
        Case("apex mixed precision", ["$GLUE", "--half_precision_backend", "apex"]),
        Case("an integration ctrainer lacks", ["$GLUE", "--report_to", "wandb"]),
        Case("an unknown integration", ["$GLUE", "--report_to", "foo"]),
        Case("`none` with another integration", ["$CLS", "--report_to", "none", "mlflow"]),
        Case("--save_strategy best without a metric", ["$GLUE", "--save_strategy", "best"]),
        Case("--load_best_model_at_end with different eval and save strategies",
             ["$GLUE", "--load_best_model_at_end", "--eval_strategy", "steps",
              "--save_strategy", "epoch"]),
        Case("a prefetch factor without workers", ["$GLUE", "--dataloader_prefetch_factor", "2"]),
        Case("a transformers flag ctrainer does not implement (Hub)", ["$GLUE", "--push_to_hub"]),
        Case("a transformers flag ctrainer does not implement (torch.compile)",
             ["$CLS", "--torch_compile"]),
        Case("gradient checkpointing on a model without it", ["$CLS", "--gradient_checkpointing"]),
        Case("group_by_length on a dataset without lengths",
             ["$CLS", "--train_sampling_strategy", "group_by_length"]),
        Case("--local_rank on a single process", ["$CLS", "--local_rank", "3"]),
        Case("--output_dir names a file", ["$CLS", "--output_dir", "notes.txt"],
             files={"notes.txt": "my notes\n"}),
        Case("a misspelt metric_for_best_model (found at the first evaluation, after a step)",
             ["$CLS", "--eval_strategy", "steps", "--eval_steps", "1", "--save_strategy", "steps",
              "--save_steps", "1", "--load_best_model_at_end", "--metric_for_best_model",
              "accurcy"], refused=False),
        Case("run_glue without --task_name",
             ["run_glue", "--data_dir", "data", "--config_name", "bert-tiny.json",
              "--tokenizer_name", "vocab.txt", "--output_dir", "out", "--do_train"]),
        Case("an unknown GLUE task", ["$GLUE", "--task_name", "mrcp"]),
        Case("nothing to do", ["$GLUE", "--do_train", "false"]),
        Case("max_seq_length 1", ["$GLUE", "--max_seq_length", "1"]),
        Case("max_train_samples 0", ["$GLUE", "--max_train_samples", "0"]),
        Case("--do_lower_case neither auto, true nor false", ["$GLUE", "--do_lower_case", "maybe"]),
        Case("neither a model folder nor a config and vocabulary", ["$GLUE_DATA"]),
        Case("spirals with one class", ["$CLS", "--num_classes", "1"]),
    ]

    args_json = [
        Case("--config names a missing file", ["$GLUE", "--config", "args.json"]),
        Case("a trailing comma", ["$GLUE", "--config", "args.json"],
             files={"args.json": '{"learning_rate": 1e-3,}'}),
        Case("an empty file", ["$GLUE", "--config", "args.json"], files={"args.json": ""}),
        Case("a list instead of an object", ["$GLUE", "--config", "args.json"],
             files={"args.json": "[1, 2]"}),
        Case("a string for a number", ["$GLUE", "--config", "args.json"],
             files={"args.json": '{"learning_rate": "fast"}'}),
        Case("a fraction for an integer", ["$GLUE", "--config", "args.json"],
             files={"args.json": '{"per_device_train_batch_size": 8.5}'}),
        Case('"yes" for a boolean', ["$GLUE", "--config", "args.json"],
             files={"args.json": '{"do_train": "yes"}'}),
        Case("a number for a list", ["$GLUE", "--config", "args.json"],
             files={"args.json": '{"report_to": 3}'}),
        Case("a misspelt key", ["$GLUE", "--config", "args.json"],
             files={"args.json": '{"learning_rat": 0.1}'}),
        Case("a transformers key ctrainer does not implement (positional file)",
             ["run_glue", "args.json"], files={"args.json": '{"push_to_hub": true}'}),
        Case("two positional JSON files", ["run_glue", "a.json", "b.json"],
             files={"a.json": "{}", "b.json": "{}"}),
    ]

    deepspeed = [
        Case("--deepspeed names a missing file", ["$GLUE", "--deepspeed", "ds.json"]),
        Case("a syntax error", ["$GLUE", "--deepspeed", "ds.json"],
             files=ds('{"zero_optimization": {"stage": 2},}')),
        Case("a list instead of an object", ["$GLUE", "--deepspeed", "ds.json"], files=ds("[]")),
        Case("inline JSON with a syntax error",
             ["$GLUE", "--deepspeed", '{"zero_optimization": {"stage": 2,}}']),
        Case("inline JSON with a misspelt key",
             ["$GLUE", "--deepspeed", '{"zero_optimisation": {"stage": 2}}']),
        Case("a misspelt top-level key", ["$GLUE", "--deepspeed", "ds.json"],
             files=ds('{"zero_optimisation": {"stage": 2}}')),
        Case("a misspelt zero_optimization key", ["$GLUE", "--deepspeed", "ds.json"],
             files=ds('{"zero_optimization": {"stage": 2, "overlap_com": true}}')),
        Case("no zero_optimization section", ["$GLUE", "--deepspeed", "ds.json"],
             files=ds('{"train_micro_batch_size_per_gpu": "auto"}')),
        Case("ZeRO stage 4", ["$GLUE", "--deepspeed", "ds.json"],
             files=ds('{"zero_optimization": {"stage": 4}}')),
        Case("a ZeRO stage as a word", ["$GLUE", "--deepspeed", "ds.json"],
             files=ds('{"zero_optimization": {"stage": "two"}}')),
        Case("NVMe offload", ["$GLUE", "--deepspeed", "ds.json"],
             files=ds('{"zero_optimization": {"stage": 3, "offload_param": {"device": "nvme"}}}')),
        Case("a DeepSpeed optimizer ctrainer lacks", ["$GLUE", "--deepspeed", "ds.json"],
             files=ds('{%s, "optimizer": {"type": "Lamb", "params": {"lr": "auto"}}}' % z1)),
        Case("an optimizer without a type", ["$GLUE", "--deepspeed", "ds.json"],
             files=ds('{%s, "optimizer": {"params": {}}}' % z1)),
        Case("an unknown scheduler", ["$GLUE", "--deepspeed", "ds.json"],
             files=ds('{%s, "scheduler": {"type": "Foo"}}' % z1)),
        Case("OneCycle without its required parameters", ["$GLUE", "--deepspeed", "ds.json"],
             files=ds('{%s, "scheduler": {"type": "OneCycle"}}' % z1)),
        Case('"auto" on a key transformers does not fill', ["$GLUE", "--deepspeed", "ds.json"],
             files=ds('{%s, "zero_allow_untested_optimizer": "auto"}' % z1)),
        Case("a negative gradient_clipping", ["$GLUE", "--deepspeed", "ds.json"],
             files=ds('{%s, "gradient_clipping": -1}' % z1)),
        Case("a micro-batch size that disagrees with --per_device_train_batch_size (8)",
             ["$GLUE", "--deepspeed", "ds.json"],
             files=ds('{%s, "train_micro_batch_size_per_gpu": 16}' % z1)),
        Case("gradient_accumulation_steps that disagree with the flag",
             ["$GLUE", "--deepspeed", "ds.json"],
             files=ds('{%s, "gradient_accumulation_steps": 4}' % z1)),
        Case("a train_batch_size that is not micro-batch x accumulation x processes",
             ["$GLUE", "--deepspeed", "ds.json"], files=ds('{%s, "train_batch_size": 7}' % z1)),
        Case("an optimizer lr that disagrees with --learning_rate",
             ["$GLUE", "--deepspeed", "ds.json"],
             files=ds('{%s, "optimizer": {"type": "AdamW", "params": {"lr": 1e-3}}}' % z1)),
        Case("fp16.enabled on the CPU", ["$GLUE", "--deepspeed", "ds.json"],
             files=ds('{%s, "fp16": {"enabled": true}}' % z1)),
        Case("--deepspeed together with --fsdp",
             ["$GLUE", "--deepspeed", "ds.json", "--fsdp", "full_shard"], files=ds("{%s}" % z1)),
    ]

    fsdp_cases = [
        Case("a misspelt --fsdp option", ["$GLUE", "--fsdp", "full_shrad"]),
        Case("two sharding strategies", ["$GLUE", "--fsdp", "full_shard shard_grad_op"]),
        Case("--fsdp on a single process", ["$GLUE", "--fsdp", "offload"]),
        Case("--fsdp_config without --fsdp", ["$GLUE", "--fsdp_config", "fsdp.json"],
             files=fsdp("{}")),
        Case("invalid JSON", ["$GLUE", "--fsdp", "full_shard", "--fsdp_config", "fsdp.json"],
             files=fsdp("nope")),
        Case("a list instead of an object",
             ["$GLUE", "--fsdp", "full_shard", "--fsdp_config", "fsdp.json"], files=fsdp("[1]")),
        Case("a misspelt key", ["$GLUE", "--fsdp", "full_shard", "--fsdp_config", "fsdp.json"],
             files=fsdp('{"min_num_param": 100}')),
        Case("a key given with and without the fsdp_ prefix",
             ["$GLUE", "--fsdp", "full_shard", "--fsdp_config", "fsdp.json"],
             files=fsdp('{"fsdp_min_num_params": 100, "min_num_params": 100}')),
        Case("FSDP version 3", ["$GLUE", "--fsdp", "full_shard", "--fsdp_config", "fsdp.json"],
             files=fsdp('{"version": 3}')),
        Case("LOCAL_STATE_DICT", ["$GLUE", "--fsdp", "full_shard", "--fsdp_config", "fsdp.json"],
             files=fsdp('{"state_dict_type": "LOCAL_STATE_DICT"}')),
        Case("a number for state_dict_type",
             ["$GLUE", "--fsdp", "full_shard", "--fsdp_config", "fsdp.json"],
             files=fsdp('{"state_dict_type": 5}')),
        Case("an unknown backward_prefetch",
             ["$GLUE", "--fsdp", "full_shard", "--fsdp_config", "fsdp.json"],
             files=fsdp('{"backward_prefetch": "sometimes"}')),
        Case("an unknown auto_wrap_policy",
             ["$GLUE", "--fsdp", "full_shard", "--fsdp_config", "fsdp.json"],
             files=fsdp('{"auto_wrap_policy": "FOO"}')),
        Case("SIZE_BASED_WRAP without min_num_params",
             ["$GLUE", "--fsdp", "full_shard", "--fsdp_config", "fsdp.json"],
             files=fsdp('{"auto_wrap_policy": "SIZE_BASED_WRAP"}')),
        Case("a word for min_num_params",
             ["$GLUE", "--fsdp", "full_shard", "--fsdp_config", "fsdp.json"],
             files=fsdp('{"min_num_params": "many"}')),
        Case("a number for transformer_layer_cls_to_wrap",
             ["$GLUE", "--fsdp", "full_shard", "--fsdp_config", "fsdp.json"],
             files=fsdp('{"auto_wrap_policy": "TRANSFORMER_BASED_WRAP", '
                        '"transformer_layer_cls_to_wrap": 5}')),
        Case("a non-boolean activation_checkpointing",
             ["$GLUE", "--fsdp", "full_shard", "--fsdp_config", "fsdp.json"],
             files=fsdp('{"activation_checkpointing": "maybe"}')),
        Case("--fsdp full_shard and reshard_after_forward false",
             ["$GLUE", "--fsdp", "full_shard", "--fsdp_config", "fsdp.json"],
             files=fsdp('{"reshard_after_forward": false}')),
        Case("PyTorch/XLA FSDP", ["$GLUE", "--fsdp", "full_shard", "--fsdp_config", "fsdp.json"],
             files=fsdp('{"xla": true}')),
    ]

    tsv = [
        Case("--data_dir names a missing folder", ["$GLUE", "--data_dir", "glue"]),
        Case("--data_dir without train.tsv", ["$GLUE", "--data_dir", "glue"],
             files={"glue/dev.tsv": mrpc_rows()}),
        Case("--train_file names a missing file", ["$GLUE", "--train_file", "train.tsv"]),
        Case("an empty file", ["$GLUE", "--train_file", "train.tsv"], files={"train.tsv": ""}),
        Case("a header without a column of the task", ["$GLUE", "--train_file", "train.tsv"],
             files={"train.tsv": raw("the lines " + tsv_row("Quality\t#1 ID\t#2 ID\t#1 String") +
                                     " and " + tsv_row("1\t1\t2\ta"),
                                     b"Quality\t#1 ID\t#2 ID\t#1 String\n1\t1\t2\ta\n")}),
        Case("a row with 4 columns instead of 5", ["$GLUE", "--train_file", "train.tsv"],
             files={"train.tsv": mrpc_rows("1\t12\t13\tonly one sentence")}),
        Case("an empty line", ["$GLUE", "--train_file", "train.tsv"],
             files={"train.tsv": mrpc_rows("", "1\t12\t13\tfirst\tsecond")}),
        Case("a label that is not one of the task's", ["$GLUE", "--train_file", "train.tsv"],
             files={"train.tsv": mrpc_rows("7\t12\t13\tfirst\tsecond")}),
        Case("a word as label", ["$GLUE", "--train_file", "train.tsv"],
             files={"train.tsv": mrpc_rows("x\t12\t13\tfirst\tsecond")}),
        Case("the files of another task (MRPC's read as SST-2)", ["$GLUE", "--task_name", "sst2"]),
    ]

    vocab = [
        Case("--tokenizer_name names a missing file",
             ["$GLUE_DATA", "--config_name", "bert-tiny.json", "--tokenizer_name", "v.txt"]),
        Case("--tokenizer_name names a folder without vocab.txt",
             ["$GLUE_DATA", "--config_name", "bert-tiny.json", "--tokenizer_name", "tok"],
             files={"tok/merges.txt": "#version: 0.2\n"}),
        Case("an empty vocabulary",
             ["$GLUE_DATA", "--config_name", "bert-tiny.json", "--tokenizer_name", "v.txt"],
             files={"v.txt": ""}),
        Case("a vocabulary without [UNK]",
             ["$GLUE_DATA", "--config_name", "bert-tiny.json", "--tokenizer_name", "v.txt"],
             files={"v.txt": with_vocab(
                 "vocab.txt without its `[UNK]` line", lambda t: [x for x in t if x != "[UNK]"])}),
        Case("a vocabulary without [CLS]",
             ["$GLUE_DATA", "--config_name", "bert-tiny.json", "--tokenizer_name", "v.txt"],
             files={"v.txt": with_vocab(
                 "vocab.txt without its `[CLS]` line", lambda t: [x for x in t if x != "[CLS]"])}),
        Case("a token listed twice",
             ["$GLUE_DATA", "--config_name", "bert-tiny.json", "--tokenizer_name", "v.txt"],
             files={"v.txt": with_vocab(
                 "vocab.txt with `the` appended", lambda t: t + ["the"])}),
        Case("a model folder whose tokenizer_config.json has a string for do_lower_case",
             ["$GLUE_DATA", "--model_name_or_path", "model"],
             files={**model_folder(safetensors({}, 0)),
                    "model/tokenizer_config.json": '{"do_lower_case": "yes"}'}),
    ]

    config = [
        Case("--config_name names a missing file",
             ["$GLUE_DATA", "--config_name", "c.json", "--tokenizer_name", "vocab.txt"]),
        Case("invalid JSON",
             ["$GLUE_DATA", "--config_name", "c.json", "--tokenizer_name", "vocab.txt"],
             files={"c.json": '{"hidden_size": 128,'}),
        Case("a string for an integer",
             ["$GLUE_DATA", "--config_name", "c.json", "--tokenizer_name", "vocab.txt"],
             files={"c.json": with_config(hidden_size="big")}),
        Case("a model_type this build does not know",
             ["$GLUE_DATA", "--config_name", "c.json", "--tokenizer_name", "vocab.txt"],
             files={"c.json": with_config(model_type="mamba")}),
        Case("a Llama with a RoPE type this build does not have",
             ["$GLUE_DATA", "--config_name", "c.json", "--tokenizer_name", "vocab.txt"],
             files={"c.json": '{"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4, '
                              '"rope_parameters": {"rope_type": "yarn", "factor": 4.0}}'}),
        Case("a GPT-2 with cross-attention",
             ["$GLUE_DATA", "--config_name", "c.json", "--tokenizer_name", "vocab.txt"],
             files={"c.json": '{"model_type": "gpt2", "n_layer": 2, "add_cross_attention": true}'}),
        Case("hidden_size not a multiple of num_attention_heads",
             ["$GLUE_DATA", "--config_name", "c.json", "--tokenizer_name", "vocab.txt"],
             files={"c.json": with_config(num_attention_heads=3)}),
        Case("an unsupported activation",
             ["$GLUE_DATA", "--config_name", "c.json", "--tokenizer_name", "vocab.txt"],
             files={"c.json": with_config(hidden_act="swish2")}),
        Case("relative position embeddings",
             ["$GLUE_DATA", "--config_name", "c.json", "--tokenizer_name", "vocab.txt"],
             files={"c.json": with_config(position_embedding_type="relative_key")}),
        Case("a vocab_size smaller than the vocabulary",
             ["$GLUE_DATA", "--config_name", "c.json", "--tokenizer_name", "vocab.txt"],
             files={"c.json": with_config(vocab_size=100)}),
        Case("max_position_embeddings below --max_seq_length (found at the first step)",
             ["$GLUE_DATA", "--config_name", "c.json", "--tokenizer_name", "vocab.txt"],
             files={"c.json": with_config(max_position_embeddings=16)}, refused=False),
        Case("a model folder without config.json", ["$GLUE_DATA", "--model_name_or_path", "model"],
             files={k: v for k, v in model_folder(raw("", b"")).items() if "config" not in k}),
    ]

    weights = [
        Case("--model_name_or_path names a missing folder",
             ["$GLUE_DATA", "--model_name_or_path", "model"]),
        Case("a model folder without model.safetensors",
             ["$GLUE_DATA", "--model_name_or_path", "model"],
             files={k: v for k, v in model_folder(raw("", b"")).items()
                    if "safetensors" not in k}),
        Case("a model.safetensors.index.json naming a shard outside the folder",
             ["$GLUE_DATA", "--model_name_or_path", "model"],
             files={**{k: v for k, v in model_folder(raw("", b"")).items()
                       if "safetensors" not in k},
                    "model/model.safetensors.index.json": json.dumps(
                        {"weight_map": {"classifier.bias": "../model-00001-of-00001.safetensors"}})}),
        Case("a model.safetensors.index.json naming a missing shard",
             ["$GLUE_DATA", "--model_name_or_path", "model"],
             files={**{k: v for k, v in model_folder(raw("", b"")).items()
                       if "safetensors" not in k},
                    "model/model.safetensors.index.json": json.dumps(
                        {"weight_map": {"classifier.bias": "model-00001-of-00002.safetensors"}})}),
        Case("a 2-byte file", ["$GLUE_DATA", "--model_name_or_path", "model"],
             files=model_folder(raw("2 bytes: `01 02`", b"\x01\x02"))),
        Case("a header length of 10^15 bytes", ["$GLUE_DATA", "--model_name_or_path", "model"],
             files=model_folder(raw(
                 "the header length 10^15, then `{}`", struct.pack("<Q", 10**15) + b"{}"))),
        Case("a header that is not JSON", ["$GLUE_DATA", "--model_name_or_path", "model"],
             files=model_folder(raw(
                 "the header length 9, then `{not json`", struct.pack("<Q", 9) + b"{not json"))),
        Case("a file cut inside its header", ["$GLUE_DATA", "--model_name_or_path", "model"],
             files=model_folder(safetensors({"w": {"dtype": "F32", "shape": [2],
                                                   "data_offsets": [0, 8]}}, 8, cut=40))),
        Case("a file cut inside its data (tensor past the end)",
             ["$GLUE_DATA", "--model_name_or_path", "model"],
             files=model_folder(safetensors({"bert.embeddings.word_embeddings.weight": {
                 "dtype": "F32", "shape": [30522, 128], "data_offsets": [0, 30522 * 128 * 4]}},
                 100))),
        Case("an unknown dtype", ["$GLUE_DATA", "--model_name_or_path", "model"],
             files=model_folder(safetensors({"w": {"dtype": "Q4", "shape": [2],
                                                   "data_offsets": [0, 8]}}, 8))),
        Case("overlapping tensors", ["$GLUE_DATA", "--model_name_or_path", "model"],
             files=model_folder(safetensors({
                 "a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                 "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}}, 12))),
        Case("data_offsets that disagree with the shape",
             ["$GLUE_DATA", "--model_name_or_path", "model"],
             files=model_folder(safetensors({"classifier.weight": {
                 "dtype": "F32", "shape": [2, 128], "data_offsets": [0, 3 * 128 * 4]}},
                 3 * 128 * 4))),
        Case("a model fine-tuned on STS-B (1 label) loaded for MRPC (2 labels)",
             ["$GLUE_DATA", "--model_name_or_path", "model"], copies=[("stsb-model", "model")]),
    ]

    checkpoints = [
        Case("--resume_from_checkpoint names a missing folder",
             ["$CLS", "--resume_from_checkpoint", "ck"]),
        Case("a checkpoint without manifest.json (an interrupted save)",
             ["$CLS", "--resume_from_checkpoint", "ck"], copies=ck,
             edit=remove("ck/manifest.json")),
        Case("a manifest.json that is not JSON", ["$CLS", "--resume_from_checkpoint", "ck"],
             copies=ck, edit=write("ck/manifest.json", '{"format_version": 1,')),
        Case("a manifest of a newer format", ["$CLS", "--resume_from_checkpoint", "ck"],
             copies=ck, edit=edit_json("ck/manifest.json", "`format_version` 2",
                                       lambda m: m.update(format_version=2))),
        Case('a manifest listing "../../x"', ["$CLS", "--resume_from_checkpoint", "ck"],
             copies=ck, edit=edit_json("ck/manifest.json", '`"../../x"` added to `files`',
                                       lambda m: m["files"].update(
                                           {"../../x": {"size": 1, "crc32": 0}}))),
        Case("a manifest listing an absolute path", ["$CLS", "--resume_from_checkpoint", "ck"],
             copies=ck, edit=edit_json("ck/manifest.json", '`"/etc/hostname"` added to `files`',
                                       lambda m: m["files"].update(
                                           {"/etc/hostname": {"size": 1, "crc32": 0}}))),
        Case("a file of the checkpoint deleted", ["$CLS", "--resume_from_checkpoint", "ck"],
             copies=ck, edit=remove("ck/optimizer.safetensors")),
        Case("a truncated file", ["$CLS", "--resume_from_checkpoint", "ck"], copies=ck,
             edit=truncate("ck/optimizer.json", 100)),
        Case("a flipped byte in model.safetensors", ["$CLS", "--resume_from_checkpoint", "ck"],
             copies=ck, edit=flip_byte("ck/model.safetensors")),
        Case("--resume_from_checkpoint true with no checkpoint in output_dir",
             ["$CLS", "--resume_from_checkpoint", "true"]),
        Case("another per-device batch size than the checkpoint's",
             ["$CLS", "--resume_from_checkpoint", "ck", "--per_device_train_batch_size", "4"],
             copies=ck),
        Case("another train set size than the checkpoint's",
             ["$CLS", "--resume_from_checkpoint", "ck", "--num_train_examples", "32"], copies=ck),
        Case("a --save_only_model checkpoint", ["$CLS", "--resume_from_checkpoint", "ck"],
             copies=[("model-only-run/checkpoint-1", "ck")]),
        Case("a sharded (ZeRO) checkpoint resumed without sharding",
             ["$CLS", "--resume_from_checkpoint", "ck"], copies=zero_ck),
        Case("an output_dir holding another run's files (train-classifier)", ["$CLS"],
             files={"out/notes.txt": "results of another run\n"}),
        Case("an output_dir holding another run's files (run_glue)", ["$GLUE"],
             files={"out/all_results.json": "{}\n"}),
        Case("ctrainer-consolidate without arguments", ["ctrainer-consolidate"]),
        Case("ctrainer-consolidate on a missing folder",
             ["ctrainer-consolidate", "ck", "consolidated"]),
        Case("ctrainer-consolidate on an unsharded checkpoint",
             ["ctrainer-consolidate", "ck", "consolidated"], copies=ck),
        Case("ctrainer-consolidate --max_shard_size that is no size",
             ["ctrainer-consolidate", "--max_shard_size", "lots", "ck", "consolidated"],
             copies=zero_ck),
        Case("ctrainer-consolidate: a rank's weights file deleted",
             ["ctrainer-consolidate", "ck", "consolidated"], copies=zero_ck,
             edit=remove("ck/zero/rank_0.safetensors")),
        Case("ctrainer-consolidate: a rank's weights file truncated",
             ["ctrainer-consolidate", "ck", "consolidated"], copies=zero_ck,
             edit=truncate("ck/zero/rank_0.safetensors", 200)),
        Case("ctrainer-consolidate: a rank's weights file with a flipped byte",
             ["ctrainer-consolidate", "ck", "consolidated"], copies=zero_ck,
             edit=flip_byte("ck/zero/rank_0.safetensors", -3)),
        Case("ctrainer-consolidate: a checkpoint without manifest.json (an interrupted save)",
             ["ctrainer-consolidate", "ck", "consolidated"], copies=zero_ck,
             edit=remove("ck/manifest.json")),
        Case("ctrainer-consolidate: a rank's index that is not JSON",
             ["ctrainer-consolidate", "ck", "consolidated"], copies=zero_ck,
             edit=write("ck/zero/rank_0.json", '{"pieces": [')),
        Case("ctrainer-consolidate: a rank's index missing a piece",
             ["ctrainer-consolidate", "ck", "consolidated"], copies=zero_ck,
             edit=edit_json("ck/zero/rank_0.json", "the first of `pieces` removed",
                            lambda m: m["pieces"].pop(0))),
        Case("ctrainer-consolidate: world_size 2 in zero/manifest.json, one rank's files",
             ["ctrainer-consolidate", "ck", "consolidated"], copies=zero_ck,
             edit=edit_json("ck/zero/manifest.json", "`world_size` 2",
                            lambda m: m.update(world_size=2))),
        Case("ctrainer-consolidate: zero/manifest.json of a newer format",
             ["ctrainer-consolidate", "ck", "consolidated"], copies=zero_ck,
             edit=edit_json("ck/zero/manifest.json", "`format_version` 9",
                            lambda m: m.update(format_version=9))),
        Case("ctrainer-consolidate into a folder that holds a model.safetensors",
             ["ctrainer-consolidate", "ck", "consolidated"], copies=zero_ck,
             files={"consolidated/model.safetensors": "weights of another model\n"}),
    ]

    run = "ctrainer-run"
    plot = "@ctrainer-plot"
    launcher = [
        Case("--nproc-per-node 0", [run, "--nproc-per-node", "0", plot]),
        Case("--nproc-per-node not a number", [run, "--nproc-per-node", "abc", plot]),
        Case("no program", [run, "--nproc-per-node", "2"]),
        Case("a program that does not exist", [run, "./train"]),
        Case("a Python script (not executable)", [run, "train.py"],
             files={"train.py": "print('hello')\n"}),
        Case("a program in this folder, named without ./", [run, "train"],
             files={"train": "#!/bin/sh\n"}),
        Case("a program without execute permission", [run, "./train"],
             files={"train": "#!/bin/sh\n"}),
        Case("-m (a Python module)", [run, "-m", "mymodule"]),
        Case("--run-path (a Python file)", [run, "--run-path", "train.py"]),
        Case("an elastic node range on the static rendezvous", [run, "--nnodes", "1:4", plot]),
        Case("--nnodes MIN larger than MAX", [run, "--nnodes", "4:1", plot]),
        Case("--nnodes 0", [run, "--nnodes", "0", plot]),
        Case("a node rank outside --nnodes", [run, "--nnodes", "2", "--node-rank", "2", plot]),
        Case("--standalone with several nodes", [run, "--standalone", "--nnodes", "2", plot]),
        Case("a port that is not a number", [run, "--rdzv-endpoint", "host:notaport", plot]),
        Case("an endpoint without a host", [run, "--rdzv-endpoint", ":29500", plot]),
        Case("a port above 65535", [run, "--master-port", "70000", plot]),
        Case("c10d without an endpoint", [run, "--rdzv-backend", "c10d", plot]),
        Case("c10d without a job id",
             [run, "--rdzv-backend", "c10d", "--rdzv-endpoint", "10.0.0.1", plot]),
        Case("c10d with --node-rank", [run, "--rdzv-backend", "c10d", "--rdzv-endpoint",
                                       "10.0.0.1", "--rdzv-id", "j", "--node-rank", "1", plot]),
        Case("an unknown --rdzv-conf key", [run, "--rdzv-backend", "c10d", "--rdzv-endpoint",
                                            "10.0.0.1", "--rdzv-id", "j", "--rdzv-conf",
                                            "timeout=10", plot]),
        Case("torchrun's heartbeat keys", [run, "--rdzv-backend", "c10d", "--rdzv-endpoint",
                                           "10.0.0.1", "--rdzv-id", "j", "--rdzv-conf",
                                           "keep_alive_interval=1", plot]),
        Case("--rdzv-conf on the static rendezvous", [run, "--rdzv-conf", "is_host=1", plot]),
        Case("the etcd rendezvous backend", [run, "--rdzv-backend", "etcd", plot]),
        Case("a misspelt option", [run, "--nproc_per_nod", "2", plot]),
        Case("--redirects 5", [run, "--redirects", "5", plot]),
        Case("--tee with a stream code of 9", [run, "--tee", "0:9", plot]),
        Case("--max-restarts -1", [run, "--max-restarts", "-1", plot]),
        Case("--local-ranks-filter not a rank", [run, "--local-ranks-filter", "x", plot]),
        Case("--monitor-interval 0", [run, "--monitor-interval", "0", plot]),
        Case("a negative --grace-period", [run, "--grace-period", "-1", plot]),
        Case("a worker that refuses its flags (the launcher passes on its exit code)",
             [run, "--nproc-per-node", "1", "@ctrainer-train-classifier", "--learnig_rate",
              "1"]),
    ]

    env = [
        Case("RANK=1 without WORLD_SIZE", ["$CLS"], env={"RANK": "1"}),
        Case("a word for WORLD_SIZE", ["$CLS"], env={"WORLD_SIZE": "abc"}),
        Case("LOCAL_RANK >= LOCAL_WORLD_SIZE", ["$CLS"],
             env={"RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "2", "LOCAL_WORLD_SIZE": "1"}),
        Case("LOCAL_WORLD_SIZE > WORLD_SIZE", ["$CLS"],
             env={"RANK": "0", "WORLD_SIZE": "2", "LOCAL_WORLD_SIZE": "4"}),
        Case("several nodes without MASTER_ADDR", ["$CLS"],
             env={"RANK": "0", "WORLD_SIZE": "4", "LOCAL_WORLD_SIZE": "2"}),
        Case("MASTER_PORT above 65535", ["$CLS"], env={"MASTER_PORT": "99999"}),
        Case("TORCHELASTIC_USE_AGENT_STORE not True/False", ["$CLS"],
             env={"RANK": "0", "WORLD_SIZE": "1", "TORCHELASTIC_USE_AGENT_STORE": "yes"}),
        Case("a negative TORCHELASTIC_RESTART_COUNT", ["$CLS"],
             env={"TORCHELASTIC_RESTART_COUNT": "-1"}),
        Case("a word for SLURM_NTASKS", ["$CLS"], env={"SLURM_PROCID": "0", "SLURM_NTASKS": "x"}),
        Case("SLURM_PROCID >= SLURM_NTASKS", ["$CLS"],
             env={"SLURM_PROCID": "3", "SLURM_NTASKS": "2"}),
        Case("SLURM_LOCALID outside the node's tasks", ["$CLS"],
             env={"SLURM_PROCID": "0", "SLURM_NTASKS": "1", "SLURM_LOCALID": "1"}),
        Case("a malformed SLURM_TASKS_PER_NODE", ["$CLS"],
             env={"SLURM_PROCID": "0", "SLURM_NTASKS": "2", "SLURM_TASKS_PER_NODE": "2(x"}),
        Case("a malformed SLURM_NODELIST", ["$CLS"],
             env={"SLURM_PROCID": "0", "SLURM_NTASKS": "2", "SLURM_NODELIST": "node[1-"}),
        Case("a word for OMPI_COMM_WORLD_SIZE", ["$CLS"],
             env={"OMPI_COMM_WORLD_RANK": "0", "OMPI_COMM_WORLD_SIZE": "two"}),
        Case("OMPI_COMM_WORLD_RANK >= OMPI_COMM_WORLD_SIZE", ["$CLS"],
             env={"OMPI_COMM_WORLD_RANK": "2", "OMPI_COMM_WORLD_SIZE": "2"}),
        Case("CTRAINER_CPU_LINEAR not onednn or aten", ["$CLS"],
             env={"CTRAINER_CPU_LINEAR": "mkl"}),
        Case("--report_to mlflow without MLFLOW_TRACKING_URI",
             ["$CLS", "--report_to", "mlflow"]),
        Case("a file: MLFLOW_TRACKING_URI", ["$CLS", "--report_to", "mlflow"],
             env={"MLFLOW_TRACKING_URI": "file:///tmp/mlruns"}),
        Case("MLFLOW_TAGS that is not JSON", ["$CLS", "--report_to", "mlflow"],
             env={"MLFLOW_TRACKING_URI": "http://127.0.0.1:5000", "MLFLOW_TAGS": "{bad"}),
        Case("MLFLOW_TAGS that is a list", ["$CLS", "--report_to", "mlflow"],
             env={"MLFLOW_TRACKING_URI": "http://127.0.0.1:5000", "MLFLOW_TAGS": "[1]"}),
        Case("HF_MLFLOW_LOG_ARTIFACTS not a boolean", ["$CLS", "--report_to", "mlflow"],
             env={"MLFLOW_TRACKING_URI": "http://127.0.0.1:5000",
                  "HF_MLFLOW_LOG_ARTIFACTS": "maybe"}),
        Case("MLFLOW_NESTED_RUN not a boolean", ["$CLS", "--report_to", "mlflow"],
             env={"MLFLOW_TRACKING_URI": "http://127.0.0.1:5000", "MLFLOW_NESTED_RUN": "2"}),
    ]

    tokenize_plot = [
        Case("ctrainer-tokenize without --vocab", ["ctrainer-tokenize"], stdin="hello\n"),
        Case("a missing vocabulary", ["ctrainer-tokenize", "--vocab", "v.txt"], stdin="hello\n"),
        Case("--max_length not a number",
             ["ctrainer-tokenize", "--vocab", "vocab.txt", "--max_length", "x"], stdin="hello\n"),
        Case("--max_length shorter than the special tokens",
             ["ctrainer-tokenize", "--vocab", "vocab.txt", "--max_length", "1"], stdin="hello\n"),
        Case("--do_lower_case maybe",
             ["ctrainer-tokenize", "--vocab", "vocab.txt", "--do_lower_case", "maybe"],
             stdin="hello\n"),
        Case("a misspelt flag", ["ctrainer-tokenize", "--vocab", "vocab.txt", "--max_lenght", "5"],
             stdin="hello\n"),
        Case("an unknown flag, last on the line",
             ["ctrainer-tokenize", "--vocab", "vocab.txt", "--bogus"], stdin="hello\n"),
        Case("a stray argument", ["ctrainer-tokenize", "--vocab", "vocab.txt", "extra"],
             stdin="hello\n"),
        Case("a line with three tab-separated columns",
             ["ctrainer-tokenize", "--vocab", "vocab.txt"], stdin="a\tb\tc\n"),
        Case("a line that is not UTF-8", ["ctrainer-tokenize", "--vocab", "vocab.txt"],
             stdin=b"\xff\xfe\n"),
        Case("a tokenizer.json that is not JSON", ["ctrainer-tokenize", "--tokenizer_name", "tok"],
             files={"tok/tokenizer.json": '{"model": {"type": "BPE",\n'}, stdin="hello\n"),
        Case("a tokenizer.json with a pre-tokenizer this build lacks",
             ["ctrainer-tokenize", "--tokenizer_name", "tok/tokenizer.json"],
             files={"tok/tokenizer.json": '{"model": {"type": "WordLevel", "vocab": {"<unk>": 0}, '
                                          '"unk_token": "<unk>"}, "pre_tokenizer": {"type": "Sequence", '
                                          '"pretokenizers": [{"type": "Whitespace"}, '
                                          '{"type": "UnicodeScripts"}]}}'},
             stdin="hello\n"),
        Case("a tokenizer.json whose merges name a token not in the vocabulary",
             ["ctrainer-tokenize", "--tokenizer_name", "tok"],
             files={"tok/tokenizer.json": '{"model": {"type": "BPE", "vocab": {"a": 0, "b": 1}, '
                                          '"merges": [["a", "b"]]}}'},
             stdin="hello\n"),
        Case("a tokenizer.json with BPE dropout", ["ctrainer-tokenize", "--tokenizer_name", "tok"],
             files={"tok/tokenizer.json": '{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": [], '
                                          '"dropout": 0.1}}'},
             stdin="hello\n"),
        Case("a tokenizer_config.json whose pad_token is a number",
             ["ctrainer-tokenize", "--tokenizer_name", "tok"],
             files={"tok/tokenizer.json": '{"model": {"type": "WordLevel", "vocab": {"<unk>": 0}, '
                                          '"unk_token": "<unk>"}}',
                    "tok/tokenizer_config.json": '{"pad_token": 5}'},
             stdin="hello\n"),
        Case("a merges.txt line that is not two tokens",
             ["ctrainer-tokenize", "--tokenizer_name", "tok"],
             files={"tok/vocab.json": '{"a": 0, "b": 1, "ab": 2}', "tok/merges.txt": "#version: 0.2\na b c\n"},
             stdin="hello\n"),
        Case("a tokenizer.model that is not a SentencePiece model",
             ["ctrainer-tokenize", "--tokenizer_name", "tok"],
             files={"tok/tokenizer.model": b"\x0a\x05<unk>\xff"}, stdin="hello\n"),
        Case("a tokenizer.model for a class whose SentencePiece construction is not built",
             ["ctrainer-tokenize", "--tokenizer_name", "tok"],
             files={"tok/tokenizer.model": b"\x0a\x09\x0a\x05<unk>\x18\x02",
                    "tok/tokenizer_config.json": '{"tokenizer_class": "AlbertTokenizer"}'},
             stdin="hello\n"),
        Case("--stride without --return_overflowing_tokens",
             ["ctrainer-tokenize", "--vocab", "vocab.txt", "--max_length", "8", "--stride", "2"],
             stdin="hello\n"),
        Case("--return_overflowing_tokens with a vocab.txt tokenizer",
             ["ctrainer-tokenize", "--vocab", "vocab.txt", "--max_length", "4",
              "--return_overflowing_tokens"], stdin="hello there world\n"),
        Case("a stride as wide as what truncation keeps",
             ["ctrainer-tokenize", "--tokenizer_name", "tok", "--max_length", "3",
              "--return_overflowing_tokens", "--stride", "3"],
             files={"tok/tokenizer.json": '{"model": {"type": "WordLevel", "vocab": {"<unk>": 0, "a": 1}, '
                                          '"unk_token": "<unk>"}, "pre_tokenizer": {"type": "Whitespace"}}'},
             stdin="a a a a a\n"),
        Case("--do_lower_case with a tokenizer.json",
             ["ctrainer-tokenize", "--tokenizer_name", "tok", "--do_lower_case", "true"], stdin="hello\n"),
        Case("ctrainer-plot without arguments", ["ctrainer-plot"]),
        Case("ctrainer-plot on a missing folder", ["ctrainer-plot", "run"]),
        Case("ctrainer-plot on a folder without trainer_state.json", ["ctrainer-plot", "run"],
             files={"run/notes.txt": "x\n"}),
        Case("ctrainer-plot on a trainer_state.json that is not JSON", ["ctrainer-plot", "run"],
             files={"run/trainer_state.json": "{"}),
        Case("ctrainer-plot on a run that logged nothing", ["ctrainer-plot", "run"],
             files={"run/trainer_state.json": '{"log_history": []}'}),
        Case("ctrainer-plot: --output without a file name", ["ctrainer-plot", "run", "--output"],
             files={"run/trainer_state.json": '{"log_history": []}'}),
        Case("ctrainer-plot: an unknown flag", ["ctrainer-plot", "run", "--bogus"],
             files={"run/trainer_state.json": '{"log_history": []}'}),
    ]

    text = {"text.txt": "In the beginning God created the heaven and the earth.\n" * 4}
    language_modeling = [
        Case("a dataset of the Hugging Face hub", ["$CLM", "--dataset_name", "wikitext"]),
        Case("a train file that is not .txt, .json or .jsonl",
             ["$CLM", "--train_file", "text.csv"], files={"text.csv": "text\nhello\n"}),
        Case("a JSON lines file with a broken line", ["$CLM", "--train_file", "text.jsonl"],
             files={"text.jsonl": '{"text": "hello"}\n{"text": \n'}),
        Case("a JSON lines file whose text is a number", ["$CLM", "--train_file", "text.jsonl"],
             files={"text.jsonl": '{"text": 3}\n'}),
        Case("--config_overrides with a key the config lacks",
             ["$CLM", "--train_file", "text.txt", "--config_overrides", "n_layers=2"], files=text),
        Case("--config_overrides with a word for an integer",
             ["$CLM", "--train_file", "text.txt", "--config_overrides", "n_embd=wide"], files=text),
        Case("--config_overrides with --config_name",
             ["$MLM", "--train_file", "text.txt", "--config_overrides", "hidden_size=64"],
             files=text),
        Case("a block_size longer than the text",
             ["$CLM", "--train_file", "text.txt", "--block_size", "64"], files=text),
        Case("a tokenizer with more tokens than the config's vocab_size",
             ["run_clm"] + LM_COMMON + ["--model_type", "gpt2", "--config_overrides",
                                        "vocab_size=1000", "--train_file", "text.txt"],
             files=text),
        Case("--max_seq_length beyond the model's positions",
             ["$MLM", "--train_file", "text.txt", "--max_seq_length", "1024"], files=text),
        Case("--whole_word_mask with a tokenizer that has no offsets",
             ["$MLM", "--train_file", "text.txt", "--whole_word_mask"], files=text),
        Case("--pad_to_max_length without --line_by_line",
             ["$MLM", "--train_file", "text.txt", "--pad_to_max_length"], files=text),
        Case("--mlm_probability above 1",
             ["$MLM", "--train_file", "text.txt", "--mlm_probability", "1.5"], files=text),
    ]

    peft_config = {"peft_type": "LORA", "r": 4, "lora_alpha": 8, "target_modules": ["c_attn"]}
    lora = [
        Case("--lora_alpha without --lora_r",
             ["$CLM", "--train_file", "text.txt", "--lora_alpha", "16"], files=text),
        Case("--lora_r 0", ["$CLM", "--train_file", "text.txt", "--lora_r", "0"], files=text),
        Case("--lora_dropout of 1", ["$CLM", "--train_file", "text.txt", "--lora_r", "4",
                                     "--lora_dropout", "1"], files=text),
        Case("--lora_target_modules that name no module",
             ["$CLM", "--train_file", "text.txt", "--lora_r", "4", "--lora_target_modules",
              "q_proj,v_proj"], files=text),
        Case("--lora_target_modules naming a LayerNorm",
             ["$CLM", "--train_file", "text.txt", "--lora_r", "4", "--lora_target_modules",
              "ln_1"], files=text),
        Case("--merge_lora without --do_train",
             ["run_clm", "--output_dir", "out", "--tokenizer_name", "vocab.txt", "--model_type",
              "gpt2", "--train_file", "text.txt", "--do_eval", "--lora_r", "4", "--merge_lora"],
             files=text),
        Case("--lora_config together with --lora_r",
             ["$CLM", "--train_file", "text.txt", "--lora_config", "adapter_config.json",
              "--lora_r", "8"], files=dict(text, **{
                  "adapter_config.json": json.dumps(peft_config)})),
        Case("a PEFT adapter_config.json of another PEFT method",
             ["$CLM", "--train_file", "text.txt", "--lora_config", "adapter_config.json"],
             files=dict(text, **{"adapter_config.json": json.dumps(
                 dict(peft_config, peft_type="IA3"))})),
        Case("a PEFT adapter_config.json asking for DoRA",
             ["$CLM", "--train_file", "text.txt", "--lora_config", "adapter_config.json"],
             files=dict(text, **{"adapter_config.json": json.dumps(
                 dict(peft_config, use_dora=True))})),
        Case("a PEFT adapter_config.json that is not JSON",
             ["$CLM", "--train_file", "text.txt", "--lora_config", "adapter_config.json"],
             files=dict(text, **{"adapter_config.json": "{\"peft_type\": "})),
        Case("a PEFT adapter folder given as the model",
             ["run_clm", "--output_dir", "out", "--do_train", "--max_steps", "1", "--report_to",
              "none", "--save_strategy", "no", "--tokenizer_name", "vocab.txt", "--train_file",
              "text.txt", "--model_name_or_path", "adapter"],
             files=dict(text, **{"adapter/adapter_config.json": json.dumps(peft_config),
                                 "adapter/adapter_model.safetensors": b"",
                                 "adapter/config.json": json.dumps({"model_type": "gpt2"})})),
    ]

    return [
        ("Command-line flags", flags),
        ("Arguments JSON (--config FILE.json)", args_json),
        ("DeepSpeed JSON (--deepspeed)", deepspeed),
        ("FSDP (--fsdp, --fsdp_config)", fsdp_cases),
        ("GLUE TSV files", tsv),
        ("Vocabulary (vocab.txt)", vocab),
        ("Model config (config.json)", config),
        ("Weights (model.safetensors in --model_name_or_path)", weights),
        ("Checkpoint folders and output_dir", checkpoints),
        ("Launcher arguments (ctrainer-run)", launcher),
        ("Environment variables (torchrun, SLURM, OpenMPI, MLflow)", env),
        ("SageMaker's environment and files", sagemaker_cases(Case)),
        ("accelerate config files and accelerate launch's variables", accelerate_cases(Case)),
        ("ctrainer-tokenize and ctrainer-plot", tokenize_plot),
        ("Language-model text files and models (run_clm, run_mlm)", language_modeling),
        ("LoRA flags and PEFT adapter files (--lora_*, --lora_config)", lora),
        ("ctrainer-generate", generation_cases(Case)),
        ("Summarization and translation (run_summarization, run_translation)",
         seq2seq_cases(Case)),
    ]
