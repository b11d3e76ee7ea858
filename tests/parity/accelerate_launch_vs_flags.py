"""`accelerate launch --config_file X.yaml --no_python run_glue ...` with the real accelerate
package: run_glue reads what accelerate passes, as HF's Trainer does through Accelerate.

- A DDP config (accelerate's multi-GPU file; on a machine without GPUs the two processes train on
  the CPU with Gloo) trains bitwise the model that `ctrainer-run --standalone --nproc-per-node 2`
  trains with the same flags.
- The same DDP config on two machines (num_machines 2, one process each, main_process_ip
  127.0.0.1: two `accelerate launch` runs on this host, the second with --machine_rank 1) trains
  that model too.
- The same config with mixed_precision: bf16 (accelerate exports ACCELERATE_MIXED_PRECISION=bf16)
  trains bitwise what `--bf16` trains under ctrainer-run.
- `ctrainer-run --config_file` on the bf16 file trains bitwise the same model again.
- The FSDP config of HF's Trainer documentation (FULL_SHARD, TRANSFORMER_BASED_WRAP on
  BertLayer; accelerate exports ACCELERATE_USE_FSDP and the FSDP_* variables) trains bitwise
  what `--fsdp "full_shard auto_wrap"` with `transformer_layer_cls_to_wrap: [BertLayer]` (FSDP1)
  trains under ctrainer-run.
- A DeepSpeed ZeRO-3 accelerate config without a DeepSpeed file (zero_stage 3, gradient
  accumulation 2, clipping 1.0; accelerate exports ACCELERATE_USE_DEEPSPEED and the
  ACCELERATE_DEEPSPEED_* variables, and run_glue builds accelerate's DeepSpeed plugin config from
  them) trains bitwise what `--deepspeed` with the same ZeRO-3 settings trains under ctrainer-run,
  and so does `ctrainer-run --config_file` on that file. Without `--gradient_accumulation_steps 2`
  the run stops, as HF's Trainer does, on the plugin's gradient accumulation that disagrees.
"""
import os
import socket
import subprocess
import sys
import tempfile

from parity_support import EXAMPLES_DATA, binary

RUN_GLUE = binary("run_glue")
CTRAINER_RUN = binary("ctrainer-run")
ACCELERATE = [sys.executable, "-m", "accelerate.commands.accelerate_cli", "launch"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_slice(source, target, rows):
    with open(source, encoding="utf-8-sig") as f:
        lines = f.read().splitlines()[: rows + 1]
    with open(target, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")


def multi_gpu_config(path, port, mixed_precision="no", machines=1):
    # What `accelerate config` writes for two GPU processes on one machine, or on two.
    layout = "num_machines: 1\n" if machines == 1 else (
        "num_machines: 2\nmain_process_ip: 127.0.0.1\n")
    with open(path, "w") as f:
        f.write(f"""compute_environment: LOCAL_MACHINE
debug: false
distributed_type: MULTI_GPU
downcast_bf16: 'no'
enable_cpu_affinity: false
gpu_ids: all
machine_rank: 0
main_process_port: {port}
main_training_function: main
mixed_precision: '{mixed_precision}'
{layout}num_processes: 2
rdzv_backend: static
same_network: true
tpu_env: []
tpu_use_cluster: false
tpu_use_sudo: false
use_cpu: false
""")


def one_machine_two_processes(port):
    """The layout keys `accelerate config` writes for one machine with two processes."""
    return f"""machine_rank: 0
main_process_port: {port}
main_training_function: main
mixed_precision: 'no'
num_machines: 1
num_processes: 2
rdzv_backend: static
same_network: true
use_cpu: false
"""


def fsdp_config(path, port):
    # The FSDP example of HF's Trainer documentation, two processes.
    with open(path, "w") as f:
        f.write(f"""compute_environment: LOCAL_MACHINE
distributed_type: FSDP
downcast_bf16: 'no'
fsdp_config:
  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP
  fsdp_backward_prefetch_policy: BACKWARD_PRE
  fsdp_forward_prefetch: true
  fsdp_offload_params: false
  fsdp_sharding_strategy: 1
  fsdp_state_dict_type: FULL_STATE_DICT
  fsdp_sync_module_states: true
  fsdp_transformer_layer_cls_to_wrap: BertLayer
  fsdp_use_orig_params: true
""" + one_machine_two_processes(port))


def zero3_config(path, port):
    # What `accelerate config` writes for DeepSpeed ZeRO-3 without a DeepSpeed file.
    with open(path, "w") as f:
        f.write(f"""compute_environment: LOCAL_MACHINE
debug: false
deepspeed_config:
  gradient_accumulation_steps: 2
  gradient_clipping: 1.0
  offload_optimizer_device: none
  offload_param_device: none
  zero3_init_flag: true
  zero3_save_16bit_model: true
  zero_stage: 3
distributed_type: DEEPSPEED
downcast_bf16: 'no'
enable_cpu_affinity: false
""" + one_machine_two_processes(port))


def main():
    # ctest empties CUDA_VISIBLE_DEVICES (both sides train on the CPU, also on a GPU machine);
    # accelerate launch passes it on to the workers.
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "data")
        os.makedirs(data)
        write_slice(os.path.join(EXAMPLES_DATA, "glue", "MRPC", "train.tsv"),
                    os.path.join(data, "train.tsv"), 64)
        write_slice(os.path.join(EXAMPLES_DATA, "glue", "MRPC", "dev.tsv"),
                    os.path.join(data, "dev.tsv"), 16)
        model_config = os.path.join(tmp, "config.json")
        with open(model_config, "w") as f:
            f.write('{"model_type": "bert", "vocab_size": 30522, "hidden_size": 16, '
                    '"num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 32, '
                    '"max_position_embeddings": 64, "hidden_dropout_prob": 0.0, '
                    '"attention_probs_dropout_prob": 0.0}')

        def glue_args(out, *extra):
            return ["--task_name", "mrpc", "--data_dir", data, "--output_dir",
                    os.path.join(tmp, out), "--config_name", model_config, "--tokenizer_name",
                    os.path.join(EXAMPLES_DATA, "vocab", "bert-base-uncased-vocab.txt"),
                    "--max_seq_length", "64", "--per_device_train_batch_size", "8",
                    "--max_steps", "4", "--learning_rate", "1e-3", "--logging_steps", "1",
                    "--report_to", "none", "--disable_tqdm", "--do_train", "--do_eval",
                    "--cache_dir", os.path.join(tmp, "cache"), *extra]

        def launch(name, command, expect_ok=True):
            result = subprocess.run(command, capture_output=True, text=True, timeout=240)
            if expect_ok and result.returncode != 0:
                failures.append(f"{name} failed ({result.returncode}):\n{result.stdout[-3000:]}"
                                f"\n{result.stderr[-3000:]}")
            return result

        def model_bytes(out):
            path = os.path.join(tmp, out, "model.safetensors")
            return open(path, "rb").read() if os.path.exists(path) else None

        pairs = [("accelerate_ddp", "flags_ddp"), ("accelerate_bf16", "flags_bf16"),
                 ("file_bf16", "flags_bf16")]
        ddp_file = os.path.join(tmp, "ddp.yaml")
        multi_gpu_config(ddp_file, free_port())
        launch("accelerate launch (DDP file)",
               ACCELERATE + ["--config_file", ddp_file, "--no_python", RUN_GLUE]
               + glue_args("accelerate_ddp"))
        launch("ctrainer-run (flags)", [CTRAINER_RUN, "--standalone", "--nproc-per-node", "2",
                                        RUN_GLUE] + glue_args("flags_ddp"))

        # Two machines on this host, sharing a folder as machines share a file system (every
        # rank must be given the same arguments): both launches run at once.
        two_file = os.path.join(tmp, "two_machines.yaml")
        multi_gpu_config(two_file, free_port(), machines=2)
        machines = [subprocess.Popen(
            ACCELERATE + ["--config_file", two_file, "--machine_rank", str(rank), "--no_python",
                          RUN_GLUE] + glue_args("accelerate_two_machines"),
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for rank in (0, 1)]
        for rank, machine in enumerate(machines):
            output, _ = machine.communicate(timeout=240)
            if machine.returncode != 0:
                failures.append(f"accelerate launch, machine {rank} of 2, failed "
                                f"({machine.returncode}):\n{output[-3000:]}")
        pairs.append(("accelerate_two_machines", "flags_ddp"))

        bf16_file = os.path.join(tmp, "bf16.yaml")
        multi_gpu_config(bf16_file, free_port(), mixed_precision="bf16")
        launch("accelerate launch (bf16 file)",
               ACCELERATE + ["--config_file", bf16_file, "--no_python", RUN_GLUE]
               + glue_args("accelerate_bf16"))
        launch("ctrainer-run --bf16", [CTRAINER_RUN, "--standalone", "--nproc-per-node", "2",
                                       RUN_GLUE] + glue_args("flags_bf16", "--bf16"))
        launch("ctrainer-run --config_file (bf16 file)",
               [CTRAINER_RUN, "--config_file", bf16_file, RUN_GLUE] + glue_args("file_bf16"))

        fsdp_file = os.path.join(tmp, "fsdp.yaml")
        fsdp_config(fsdp_file, free_port())
        fsdp = launch("accelerate launch (FSDP file)",
                      ACCELERATE + ["--config_file", fsdp_file, "--no_python", RUN_GLUE]
                      + glue_args("accelerate_fsdp"))
        if "ZeRO-3" not in fsdp.stdout + fsdp.stderr:
            failures.append("the FSDP file did not shard the parameters:\n" + fsdp.stderr[-3000:])
        launch("ctrainer-run --fsdp", [CTRAINER_RUN, "--standalone", "--nproc-per-node", "2",
                                       RUN_GLUE] + glue_args(
            "flags_fsdp", "--fsdp", "full_shard auto_wrap", "--fsdp_config",
            '{"version": 1, "transformer_layer_cls_to_wrap": ["BertLayer"]}'))
        pairs.append(("accelerate_fsdp", "flags_fsdp"))

        zero3_file = os.path.join(tmp, "zero3.yaml")
        zero3_config(zero3_file, free_port())
        zero3 = launch("accelerate launch (DeepSpeed ZeRO-3 file)",
                       ACCELERATE + ["--config_file", zero3_file, "--no_python", RUN_GLUE]
                       + glue_args("accelerate_zero3", "--gradient_accumulation_steps", "2"))
        if "ZeRO-3" not in zero3.stdout + zero3.stderr:
            failures.append("the DeepSpeed file did not shard the parameters:\n"
                            + zero3.stderr[-3000:])
        launch("ctrainer-run --deepspeed", [CTRAINER_RUN, "--standalone", "--nproc-per-node", "2",
                                            RUN_GLUE] + glue_args(
            "flags_zero3", "--gradient_accumulation_steps", "2", "--deepspeed",
            '{"zero_optimization": {"stage": 3}, "gradient_clipping": 1.0}'))
        launch("ctrainer-run --config_file (DeepSpeed ZeRO-3 file)",
               [CTRAINER_RUN, "--config_file", zero3_file, RUN_GLUE]
               + glue_args("file_zero3", "--gradient_accumulation_steps", "2"))
        pairs += [("accelerate_zero3", "flags_zero3"), ("file_zero3", "flags_zero3")]
        zero3_file_2 = os.path.join(tmp, "zero3_b.yaml")
        zero3_config(zero3_file_2, free_port())
        mismatch = launch("accelerate launch (ZeRO-3 file, no --gradient_accumulation_steps)",
                          ACCELERATE + ["--config_file", zero3_file_2, "--no_python", RUN_GLUE]
                          + glue_args("accelerate_zero3_mismatch"), expect_ok=False)
        if mismatch.returncode == 0 or "gradient_accumulation_steps=2 vs hf " \
                "gradient_accumulation_steps=1" not in mismatch.stdout + mismatch.stderr:
            failures.append("the plugin's gradient accumulation 2 against the flag's 1 was not "
                            "refused:\n" + mismatch.stderr[-3000:])

        for a, b in pairs:
            bytes_a, bytes_b = model_bytes(a), model_bytes(b)
            if bytes_a is None or bytes_b is None:
                failures.append(f"{a} or {b} wrote no model")
            elif bytes_a != bytes_b:
                failures.append(f"{a} and {b} trained different models")
            else:
                print(f"{a} == {b}: the same model, byte for byte")
        if model_bytes("flags_ddp") is not None and model_bytes("flags_ddp") == model_bytes(
                "flags_bf16"):
            failures.append("bf16 changed nothing: the comparison cannot tell the runs apart")

    if failures:
        print("\n".join(failures))
        sys.exit(1)
    print("parity: accelerate launch runs run_glue as ctrainer-run does with the same settings")


if __name__ == "__main__":
    main()
