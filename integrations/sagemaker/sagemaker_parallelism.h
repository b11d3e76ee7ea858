#pragma once
/// \file Whether a SageMaker job asks for smdistributed's data or model parallelism, decided by
/// transformers' own rules (utils/import_utils.py, is_sagemaker_dp_enabled and
/// is_sagemaker_mp_enabled) so that a job means here what it means to HF's Trainer:
///   - data parallelism: SM_FRAMEWORK_PARAMS (default "{}") parses as JSON and its
///     "sagemaker_distributed_dataparallel_enabled" is truthy in Python's sense;
///   - model parallelism: SM_HP_MP_PARAMETERS (default "{}") parses as JSON and `"partitions" in`
///     it holds (a key of an object, an element of a list, a substring of a string), and
///     SM_FRAMEWORK_PARAMS parses and its "sagemaker_mpi_enabled" is truthy.
/// Malformed JSON means "not enabled", as in transformers. transformers also requires the
/// smdistributed Python package; C++ has no such package, so the environment alone decides.
/// Where transformers' rule raises (TypeError or AttributeError: `"partitions" in 5`,
/// `[1].get(...)`) an ArgumentError names the variable instead. No torch here.
#include <functional>
#include <optional>
#include <string>

namespace ctrainer {

/// What the job's environment asks for.
struct SageMakerParallelism {
  /// smdistributed.dataparallel: HF trains with DDP over the mpirun ranks on the "smddp"
  /// backend, the local rank from SMDATAPARALLEL_LOCAL_RANK.
  bool data_parallel = false;
  /// smdistributed.modelparallel (pipeline and tensor parallelism), which ctrainer refuses.
  bool model_parallel = false;
};

/// Looks a variable up; std::nullopt when unset (an empty value counts as unset).
using SageMakerVariableLookup = std::function<std::optional<std::string>(const std::string&)>;

/// Reads SM_FRAMEWORK_PARAMS and SM_HP_MP_PARAMETERS by transformers' rules (above).
SageMakerParallelism read_sagemaker_parallelism(const SageMakerVariableLookup& lookup);

/// Throws ArgumentError when the job asks for SageMaker model parallelism, naming the variables
/// and what to use instead (--deepspeed or --fsdp).
void refuse_sagemaker_model_parallelism(const SageMakerVariableLookup& lookup);

}  // namespace ctrainer
