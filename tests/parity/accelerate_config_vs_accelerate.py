"""ctrainer-run --config_file against the real accelerate package, on config files that
accelerate itself writes (ClusterConfig.to_yaml_file / to_json_file):

- the keys ctrainer-run knows are exactly accelerate's ClusterConfig fields, plus the two old keys
  its process_config converts (fp16, dynamo_backend): a key accelerate adds makes this fail;
- for each MULTI_GPU or FSDP file (one machine, two machines on the same network or not,
  gpu_ids, machine_rank 1, bf16, HF's FSDP example, FSDP2 with size-based wrapping), accelerate launch's own code (_validate_launch_command, then
  prepare_multi_gpu_env, which builds torchrun's arguments and the workers' environment) gives
  the processes torchrun would start; ctrainer-run, started on the same file with `env` as the
  program, must start as many workers with the same RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR,
  MASTER_PORT, CUDA_VISIBLE_DEVICES, ACCELERATE_MIXED_PRECISION, and ACCELERATE_USE_FSDP with
  every FSDP_* variable;
- for each DEEPSPEED file (HF's ZeRO-3 example, a DeepSpeed file with bf16, ZeRO-2 on two
  machines with deepspeed_multinode_launcher standard, values of every YAML type), the same
  through launch_command's field list and prepare_deepspeed_cmd_env: ACCELERATE_USE_DEEPSPEED,
  ACCELERATE_CONFIG_DS_FIELDS and every ACCELERATE_DEEPSPEED_* / ACCELERATE_GRADIENT_* variable;
- distributed_type NO (accelerate's simple launcher) starts one process.
"""
import os
import re
import subprocess
import tempfile

from accelerate.commands.config.config_args import ClusterConfig
from accelerate.commands.launch import _validate_launch_command, launch_command_parser
from accelerate.utils.launch import prepare_deepspeed_cmd_env, prepare_multi_gpu_env

from parity_support import binary, fail_if

CTRAINER_RUN = binary("ctrainer-run")
COMPARED = ["RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
            "CUDA_VISIBLE_DEVICES", "ACCELERATE_MIXED_PRECISION"]
# A port nothing listens on, so that accelerate's port check keeps it.
PORT = 29731


def config(**fields):
    base = dict(compute_environment="LOCAL_MACHINE", distributed_type="MULTI_GPU",
                mixed_precision="no", use_cpu=False, debug=False, main_process_port=PORT)
    base.update(fields)
    return ClusterConfig(**base)


CASES = {
    "one machine, 2 processes": config(num_processes=2),
    "one machine, gpu_ids 1,3": config(num_processes=2, gpu_ids="1,3"),
    "2 machines, same network, rank 0": config(num_processes=4, num_machines=2, machine_rank=0,
                                               main_process_ip="10.0.0.1", same_network=True),
    "2 machines, rank 1, rdzv endpoint": config(num_processes=6, num_machines=2, machine_rank=1,
                                                main_process_ip="10.0.0.2", same_network=False),
    "json file": config(num_processes=3),
    "bf16": config(num_processes=2, mixed_precision="bf16"),
    # HF's FSDP example, and an FSDP2 file with size-based wrapping and offload.
    "FSDP, HF's example": config(distributed_type="FSDP", num_processes=2, fsdp_config={
        "fsdp_auto_wrap_policy": "TRANSFORMER_BASED_WRAP", "fsdp_backward_prefetch": "BACKWARD_PRE",
        "fsdp_forward_prefetch": True, "fsdp_offload_params": False, "fsdp_sharding_strategy": 1,
        "fsdp_state_dict_type": "FULL_STATE_DICT", "fsdp_sync_module_states": True,
        "fsdp_transformer_layer_cls_to_wrap": "BertLayer", "fsdp_use_orig_params": True}),
    "FSDP2, size wrap, offload": config(distributed_type="FSDP", num_processes=2, fsdp_config={
        "fsdp_version": 2, "fsdp_auto_wrap_policy": "SIZE_BASED_WRAP",
        "fsdp_min_num_params": 1000, "fsdp_offload_params": True,
        "fsdp_reshard_after_forward": False, "fsdp_activation_checkpointing": True}),
    # DeepSpeed: HF's ZeRO-3 example, a DeepSpeed file, two machines, YAML values of every type.
    "DeepSpeed ZeRO-3, HF's example": config(distributed_type="DEEPSPEED", num_processes=2,
                                             deepspeed_config={
        "gradient_accumulation_steps": 2, "gradient_clipping": 1.0,
        "offload_optimizer_device": "none", "offload_param_device": "none",
        "zero3_init_flag": True, "zero3_save_16bit_model": True, "zero_stage": 3}),
    "DeepSpeed file, bf16": config(distributed_type="DEEPSPEED", num_processes=2,
                                   mixed_precision="bf16", deepspeed_config={
        "deepspeed_config_file": "/configs/ds_zero2.json", "zero3_init_flag": False}),
    "DeepSpeed ZeRO-2, 2 machines, standard": config(
        distributed_type="DEEPSPEED", num_processes=4, num_machines=2, machine_rank=1,
        main_process_ip="10.0.0.3", same_network=True, deepspeed_config={
            "deepspeed_multinode_launcher": "standard", "zero_stage": 2,
            "gradient_clipping": 0.00001, "offload_optimizer_device": "CPU",
            "offload_optimizer_nvme_path": None, "gradient_accumulation_steps": 16}),
}


def accelerate_workers(path):
    """The workers accelerate launch would start through torchrun, and their variables."""
    args = launch_command_parser().parse_args(["--config_file", path, "--no_python", "prog"])
    args, defaults, mp_from_config_flag = _validate_launch_command(args)
    if args.use_deepspeed:
        # launch_command's field list, then deepspeed_launcher's environment and torchrun args.
        fields = list(defaults.deepspeed_config.keys()) if defaults else []
        if mp_from_config_flag:
            fields.append("mixed_precision")
        args.deepspeed_fields_from_accelerate_config = ",".join(fields)
        _, env = prepare_deepspeed_cmd_env(args)
    else:
        env = prepare_multi_gpu_env(args)
    nproc = int(args.nproc_per_node)
    nnodes = int(getattr(args, "nnodes", 1) or 1)
    node_rank = int(getattr(args, "node_rank", 0) or 0)
    if getattr(args, "rdzv_endpoint", None):
        master_addr, master_port = args.rdzv_endpoint.rsplit(":", 1)
    else:
        master_addr = getattr(args, "master_addr", None) or "127.0.0.1"  # torchrun's default
        master_port = str(getattr(args, "master_port", None) or 29500)
    workers = []
    for local in range(nproc):
        workers.append({
            "RANK": str(node_rank * nproc + local), "LOCAL_RANK": str(local),
            "WORLD_SIZE": str(nnodes * nproc), "MASTER_ADDR": master_addr,
            "MASTER_PORT": master_port,
            "CUDA_VISIBLE_DEVICES": env.get("CUDA_VISIBLE_DEVICES", "<unset>"),
            "ACCELERATE_MIXED_PRECISION": env["ACCELERATE_MIXED_PRECISION"],
            **plugin_variables(env)})
    return workers


def plugin_variables(env):
    """The variables of accelerate's FSDP and DeepSpeed plugins among `env`."""
    return {name: value for name, value in env.items()
            if name.startswith(("FSDP_", "ACCELERATE_DEEPSPEED_", "ACCELERATE_GRADIENT_"))
            or name in ("ACCELERATE_USE_FSDP", "ACCELERATE_USE_DEEPSPEED",
                        "ACCELERATE_CONFIG_DS_FIELDS")}


def ctrainer_workers(path, log_dir):
    """The workers ctrainer-run starts on the same file, read from their `env` output."""
    result = subprocess.run([CTRAINER_RUN, "--config_file", path, "--redirects", "1", "--log-dir",
                             log_dir, "env"], capture_output=True, text=True, timeout=60)
    if result.returncode != 0:
        raise SystemExit(f"ctrainer-run failed ({result.returncode}):\n{result.stderr}")
    attempt = os.path.join(log_dir, "attempt_0")
    workers = []
    for local in sorted(os.listdir(attempt), key=int):
        with open(os.path.join(attempt, local, "stdout.log")) as f:
            variables = dict(line.split("=", 1) for line in f.read().splitlines() if "=" in line)
        workers.append({**{name: variables.get(name, "<unset>") for name in COMPARED},
                        **plugin_variables(variables)})
    return workers


def main():
    # ctest sets CUDA_VISIBLE_DEVICES empty; both sides start from the same environment, where
    # only gpu_ids sets it.
    os.environ.pop("CUDA_VISIBLE_DEVICES", None)
    differences = []
    with tempfile.TemporaryDirectory() as tmp:
        # 1. The keys.
        probe = os.path.join(tmp, "probe.yaml")
        with open(probe, "w") as f:
            f.write("distributed_type: MULTI_CPU\nnot_a_key: 1\n")
        result = subprocess.run([CTRAINER_RUN, "--config_file", probe, "true"],
                                capture_output=True, text=True)
        listed = re.search(r"\(it has: ([^)]*)\)", result.stderr)
        if result.returncode != 2 or not listed:
            raise SystemExit(f"ctrainer-run did not refuse an unknown key:\n{result.stderr}")
        ours = set(listed.group(1).split(", "))
        theirs = set(ClusterConfig.__dataclass_fields__) | {"fp16", "dynamo_backend"}
        for key in sorted(theirs - ours):
            differences.append(f"accelerate's key {key} is unknown to ctrainer-run")
        for key in sorted(ours - theirs):
            differences.append(f"ctrainer-run knows {key}, accelerate does not")

        # 2. The layouts.
        for number, (name, cluster) in enumerate(CASES.items()):
            path = os.path.join(tmp, f"case{number}." + ("json" if "json" in name else "yaml"))
            (cluster.to_json_file if path.endswith(".json") else cluster.to_yaml_file)(path)
            expected = accelerate_workers(path)
            actual = ctrainer_workers(path, os.path.join(tmp, f"logs{number}"))
            if len(expected) != len(actual):
                differences.append(f"{name}: accelerate starts {len(expected)} workers, "
                                   f"ctrainer-run {len(actual)}")
                continue
            for want, got in zip(expected, actual):
                for variable in sorted(set(want) | set(got)):
                    if want.get(variable, "<unset>") != got.get(variable, "<unset>"):
                        differences.append(
                            f"{name}: rank {want['RANK']} {variable}: accelerate "
                            f"{want.get(variable, '<unset>')!r}, ctrainer-run "
                            f"{got.get(variable, '<unset>')!r}")
            print(f"{name}: {len(actual)} worker(s) as accelerate starts them")

        # 3. distributed_type NO: accelerate's simple launcher, one process.
        path = os.path.join(tmp, "no.yaml")
        ClusterConfig(compute_environment="LOCAL_MACHINE", distributed_type="NO",
                      mixed_precision="no", use_cpu=False, debug=False).to_yaml_file(path)
        workers = ctrainer_workers(path, os.path.join(tmp, "logs_no"))
        if len(workers) != 1 or workers[0]["WORLD_SIZE"] != "1":
            differences.append(f"distributed_type NO: ctrainer-run started {workers}")
    fail_if(differences, "ctrainer-run --config_file against accelerate launch")


if __name__ == "__main__":
    main()
