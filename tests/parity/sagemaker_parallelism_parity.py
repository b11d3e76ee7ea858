"""parity.sagemaker_parallelism: whether a SageMaker job asks for smdistributed's data or model
parallelism, as ctrainer decides it (integrations/sagemaker/sagemaker_parallelism.h) and as
transformers' is_sagemaker_dp_enabled and is_sagemaker_mp_enabled decide it, over every pair of
a list of SM_FRAMEWORK_PARAMS and SM_HP_MP_PARAMETERS values: unset, empty, malformed JSON,
objects with truthy and falsy values of every JSON type, lists, strings, numbers, null.

transformers also asks that the smdistributed package be installed; C++ has no such package, so
the test makes transformers see it (its `_is_package_available("smdistributed")` answers yes).
Where transformers raises (TypeError for `"partitions" in 5`, AttributeError for `[].get`),
ctrainer must stop with an error naming the variable. Python's JSON also reads NaN and Infinity,
which are not JSON; those spellings are left out.
"""
import json
import os
import tempfile

from parity_support import binary, fail_if, run

import transformers.utils.import_utils as import_utils

FRAMEWORK_PARAMS = [
    None, "", "{}", "{not json", "[]", "5", '"text"', "null", "true",
    '{"sagemaker_distributed_dataparallel_enabled": true}',
    '{"sagemaker_distributed_dataparallel_enabled": false}',
    '{"sagemaker_distributed_dataparallel_enabled": "false"}',
    '{"sagemaker_distributed_dataparallel_enabled": ""}',
    '{"sagemaker_distributed_dataparallel_enabled": 0}',
    '{"sagemaker_distributed_dataparallel_enabled": 0.5}',
    '{"sagemaker_distributed_dataparallel_enabled": []}',
    '{"sagemaker_distributed_dataparallel_enabled": [0]}',
    '{"sagemaker_distributed_dataparallel_enabled": {}}',
    '{"sagemaker_distributed_dataparallel_enabled": null}',
    '{"sagemaker_mpi_enabled": true}',
    '{"sagemaker_mpi_enabled": 0, "sagemaker_distributed_dataparallel_enabled": 1}',
    '{"sagemaker_mpi_enabled": "yes", "sagemaker_instance_type": "ml.p4d.24xlarge"}',
    '{"sagemaker_mpi_enabled": {"a": 1}, "sagemaker_distributed_dataparallel_enabled": -0.0}',
]
MODEL_PARALLEL_PARAMS = [
    None, "", "{}", "{bad", "[]", "5", "null", "true", '"partitions=2"', '"none"',
    '{"partitions": 2, "microbatches": 4}', '{"partitions": null}', '{"microbatches": 4}',
    '["partitions"]', '["partition", 1]',
]


def transformers_answer(framework, model_parallel):
    for name, value in (("SM_FRAMEWORK_PARAMS", framework),
                        ("SM_HP_MP_PARAMETERS", model_parallel)):
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    try:
        return {"data_parallel": import_utils.is_sagemaker_dp_enabled(),
                "model_parallel": import_utils.is_sagemaker_mp_enabled()}
    except (TypeError, AttributeError) as error:
        return {"error": f"{type(error).__name__}: {error}"}


def main():
    original = import_utils._is_package_available
    import_utils._is_package_available = (
        lambda name, *rest: (True, "N/A") if name == "smdistributed" else original(name, *rest))
    cases = [{"SM_FRAMEWORK_PARAMS": f, "SM_HP_MP_PARAMETERS": m}
             for f in FRAMEWORK_PARAMS for m in MODEL_PARALLEL_PARAMS]
    expected = [transformers_answer(c["SM_FRAMEWORK_PARAMS"], c["SM_HP_MP_PARAMETERS"])
                for c in cases]
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(cases, f)
    lines = run([binary("ctrainer_parity_sagemaker_parallelism_dump"), f.name]).stdout.splitlines()
    os.unlink(f.name)
    if len(lines) != len(cases):
        fail_if([f"{len(lines)} answers for {len(cases)} cases"], "the dump's output")
    differences = []
    counts = {"data_parallel": 0, "model_parallel": 0, "error": 0}
    for case, want, line in zip(cases, expected, lines):
        got = json.loads(line)
        if "error" in want:
            counts["error"] += 1
            ok = "error" in got and ("SM_FRAMEWORK_PARAMS" in got["error"]
                                     or "SM_HP_MP_PARAMETERS" in got["error"])
        else:
            counts["data_parallel"] += want["data_parallel"]
            counts["model_parallel"] += want["model_parallel"]
            ok = got == want
        if not ok:
            differences.append(f"{json.dumps(case)}: transformers {want}, ctrainer {got}")
    print(f"parity: {len(cases)} cases; transformers enables data parallelism in "
          f"{counts['data_parallel']}, model parallelism in {counts['model_parallel']}, "
          f"raises in {counts['error']}")
    # Every outcome is exercised, or the table would test less than it claims.
    if min(counts.values()) == 0:
        fail_if([f"an outcome never happens: {counts}"], "the case table")
    fail_if(differences, "SageMaker parallelism switches")


if __name__ == "__main__":
    main()
