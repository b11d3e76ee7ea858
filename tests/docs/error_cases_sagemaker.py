"""The bad inputs of a SageMaker job's environment (SM_* variables) and of the checkpoint
configuration SageMaker writes for spot jobs, in docs/errors.md (error_cases.py lists the
section)."""

CLUSTER = {"SM_HOSTS": '["algo-1"]', "SM_CURRENT_HOST": "algo-1"}
GLUE_CHANNELS = ["run_glue", "--task_name", "mrpc", "--config_name", "bert-tiny.json",
                 "--tokenizer_name", "vocab.txt", "--output_dir", "out", "--do_train"]


def sagemaker_cases(case):
    """The Cases of SageMaker's environment; `case` is error_cases.Case."""
    cls = ["$CLS"]
    mpi = '{"sagemaker_mpi_enabled": true}'
    return [
        case("SM_HPS that is not JSON", cls, env={"SM_HPS": "{bad"}),
        case("SM_HPS that is a list", cls, env={"SM_HPS": "[1, 2]"}),
        case("SM_HPS with a key that is not a flag", cls, env={"SM_HPS": '{"epochs": 3}'}),
        case("SM_HPS with a word for a number", cls, env={"SM_HPS": '{"learning_rate": "fast"}'}),
        case("SM_HPS with an object value", cls, env={"SM_HPS": '{"learning_rate": {"a": 1}}'}),
        case("SM_HPS with a nested list", cls,
             env={"SM_HPS": '{"report_to": ["tensorboard", ["x"]]}'}),
        case("SM_HP_EPOCHS (a key that is not a flag)", cls, env={"SM_HP_EPOCHS": "3"}),
        case("SM_HP_LEARNING_RATE not a number", cls, env={"SM_HP_LEARNING_RATE": "fast"}),
        case("model parallelism: SM_HP_MP_PARAMETERS with partitions, sagemaker_mpi_enabled",
             cls, env={"SM_HP_MP_PARAMETERS": '{"partitions": 2}', "SM_FRAMEWORK_PARAMS": mpi}),
        case("SM_HP_MP_PARAMETERS that is a number", cls, env={"SM_HP_MP_PARAMETERS": "2"}),
        case("SM_FRAMEWORK_PARAMS that is a list", cls,
             env={"SM_FRAMEWORK_PARAMS": '["sagemaker_mpi_enabled"]'}),
        case("SM_HOSTS without SM_CURRENT_HOST", cls, env={"SM_HOSTS": '["algo-1"]'}),
        case("SM_CURRENT_HOST not among SM_HOSTS", cls,
             env={"SM_HOSTS": '["algo-1"]', "SM_CURRENT_HOST": "algo-3"}),
        case("SM_HOSTS that is not JSON", cls,
             env={"SM_HOSTS": "algo-1", "SM_CURRENT_HOST": "algo-1"}),
        case("a word for SM_NUM_GPUS", cls, env=dict(CLUSTER, SM_NUM_GPUS="eight")),
        case("SM_CHANNEL_TRAIN names a missing folder", GLUE_CHANNELS,
             env={"SM_CHANNEL_TRAIN": "channel"}),
        case("SM_CHANNEL_TRAIN holds two files and no train.tsv", GLUE_CHANNELS,
             env={"SM_CHANNEL_TRAIN": "channel"},
             files={"channel/a.tsv": "x\n", "channel/b.tsv": "y\n"}),
        case("a checkpointconfig.json that is not JSON (spot jobs)", cls,
             env={"SM_INPUT_CONFIG_DIR": "config"},
             files={"config/checkpointconfig.json": '{"LocalPath": '}),
        case("a LocalPath that is not a path", cls, env={"SM_INPUT_CONFIG_DIR": "config"},
             files={"config/checkpointconfig.json": '{"LocalPath": ["/opt/ml/checkpoints"]}'}),
        case("SM_CHECKPOINT_CONFIG_FILE names a missing file", cls,
             env={"SM_CHECKPOINT_CONFIG_FILE": "checkpointconfig.json"}),
    ]
