"""The bad inputs of accelerate's config file (ctrainer-run --config_file) and of the variables
`accelerate launch` exports to our programs, in docs/errors.md (error_cases.py lists the
section)."""

CPU = "distributed_type: MULTI_CPU\nnum_processes: 2\n"


def accelerate_cases(case):
    """The Cases of accelerate's config file and environment; `case` is error_cases.Case."""
    run = ["ctrainer-run", "--config_file", "accelerate.yaml", "@ctrainer-plot"]

    def config(what, text):
        return case(what, run, files={"accelerate.yaml": text})

    return [
        case("--config_file that does not exist", run),
        config("a key accelerate does not know", CPU + "num_proceses: 2\n"),
        config("no distributed_type", "num_processes: 2\n"),
        config("an fsdp_config key accelerate's FSDP plugin does not have",
               "distributed_type: FSDP\nnum_processes: 2\nfsdp_config:\n  fsdp_shard_strategy: 1\n"),
        config("a deepspeed_config key accelerate does not have",
               "distributed_type: DEEPSPEED\nnum_processes: 2\ndeepspeed_config:\n"
               "  zero_stages: 3\n"),
        config("DeepSpeed on two machines through pdsh",
               "distributed_type: DEEPSPEED\nnum_processes: 4\nnum_machines: 2\n"
               "main_process_ip: 10.0.0.1\ndeepspeed_config:\n  zero_stage: 2\n"),
        config("DeepSpeed with use_cpu: true",
               "distributed_type: DEEPSPEED\nnum_processes: 2\nuse_cpu: true\n"),
        config("distributed_type XLA", "distributed_type: XLA\n"),
        config("mixed_precision fp8", CPU + "mixed_precision: fp8\n"),
        config("the c10d rendezvous backend", CPU + "rdzv_backend: c10d\n"),
        config("a dynamo backend", CPU + "dynamo_config:\n  dynamo_backend: INDUCTOR\n"),
        config("num_processes not a number", "distributed_type: MULTI_CPU\nnum_processes: two\n"),
        config("no num_processes", "distributed_type: MULTI_CPU\n"),
        config("num_processes not a multiple of num_machines",
               "distributed_type: MULTI_CPU\nnum_processes: 3\nnum_machines: 2\n"
               "main_process_ip: 10.0.0.1\n"),
        config("two machines without main_process_ip",
               "distributed_type: MULTI_CPU\nnum_processes: 4\nnum_machines: 2\n"),
        config("a YAML syntax error", "distributed_type: [MULTI_CPU\n"),
        case("ACCELERATE_MIXED_PRECISION=fp8", ["$CLS"], env={"ACCELERATE_MIXED_PRECISION": "fp8"}),
        case("ACCELERATE_USE_CPU not a truth value", ["$CLS"],
             env={"ACCELERATE_USE_CPU": "maybe"}),
        case("FSDP_SHARDING_STRATEGY out of range", ["$CLS"],
             env={"ACCELERATE_USE_FSDP": "true", "FSDP_SHARDING_STRATEGY": "7"}),
        case("FSDP_ACTIVATION_CHECKPOINTING_OFFLOAD=true", ["$CLS"],
             env={"ACCELERATE_USE_FSDP": "true", "FSDP_ACTIVATION_CHECKPOINTING_OFFLOAD": "true"}),
        case("ACCELERATE_DEEPSPEED_ZERO_STAGE not a number", ["$CLS"],
             env={"ACCELERATE_USE_DEEPSPEED": "true", "ACCELERATE_DEEPSPEED_ZERO_STAGE": "three"}),
        case("ACCELERATE_GRADIENT_CLIPPING not a number", ["$CLS"],
             env={"ACCELERATE_USE_DEEPSPEED": "true", "ACCELERATE_GRADIENT_CLIPPING": "high"}),
        case("a DeepSpeed file without zero_optimization", ["$CLS"],
             env={"ACCELERATE_USE_DEEPSPEED": "true",
                  "ACCELERATE_DEEPSPEED_CONFIG_FILE": "ds.json"},
             files={"ds.json": '{"train_batch_size": "auto"}'}),
        case("an accelerate config setting zero_stage next to a DeepSpeed file", ["$CLS"],
             env={"ACCELERATE_USE_DEEPSPEED": "true", "ACCELERATE_DEEPSPEED_CONFIG_FILE": "ds.json",
                  "ACCELERATE_CONFIG_DS_FIELDS": "deepspeed_config_file,zero_stage"},
             files={"ds.json": '{"zero_optimization": {"stage": 2}}'}),
        case("the plugin's gradient accumulation against --gradient_accumulation_steps",
             ["$CLS"], env={"ACCELERATE_USE_DEEPSPEED": "true",
                            "ACCELERATE_GRADIENT_ACCUMULATION_STEPS": "4"}),
        case("ACCELERATE_USE_DEEPSPEED and ACCELERATE_USE_FSDP together", ["$CLS"],
             env={"ACCELERATE_USE_DEEPSPEED": "true", "ACCELERATE_USE_FSDP": "true"}),
    ]
