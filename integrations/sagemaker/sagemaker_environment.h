#pragma once
/// \file What a SageMaker training job tells a program through its environment, as values for
/// the program's flags. SageMaker's training toolkit passes the estimator's hyperparameters as
/// SM_HPS (one JSON object, values typed: {"learning_rate": 2e-05, "fp16": true}) and as
/// SM_HP_<NAME> (one variable each: SM_HP_FP16=true), and the job's folders as SM_MODEL_DIR
/// (uploaded as the model when the job ends), SM_OUTPUT_DATA_DIR (other outputs, uploaded as
/// output.tar.gz) and SM_CHANNEL_<NAME> (each input channel's folder). The cluster layout
/// (SM_HOSTS, ...) is distributed/sagemaker_cluster.h's.
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ctrainer {

/// The environment as a name -> value map (SM_HP_* and SM_CHANNEL_* are found by prefix).
using EnvironmentMap = std::map<std::string, std::string>;

/// This process's environment variables.
EnvironmentMap process_environment();

/// A value the environment gives a flag.
struct EnvironmentFlagValue {
  std::string flag;                 ///< the flag's name, without "--"
  std::vector<std::string> tokens;  ///< the value as command-line tokens
  std::string source;               ///< where it came from, e.g. `SM_HPS key "fp16"`
};

/// The flag values SageMaker gives, lowest precedence first: SM_MODEL_DIR as output_dir (HF's
/// SageMaker examples save the model there), then the hyperparameters: SM_HPS when set, else
/// every SM_HP_<NAME> (named by the lower-cased suffix). JSON values become tokens: strings as
/// they are (SageMaker's "True"/"False" included), booleans "true"/"false", numbers as written,
/// null "None", arrays one token per element. Keys SageMaker reserves for itself (sagemaker_*)
/// are skipped. Throws ArgumentError when SM_HPS is not a JSON object or a value is an object,
/// and when the job asks for SageMaker model parallelism (sagemaker_parallelism.h's rule). With
/// a SageMaker checkpoint folder (sagemaker_checkpoint_dir) the default output_dir is that
/// folder instead of SM_MODEL_DIR: checkpoints land where SageMaker keeps them across spot
/// restarts, and a restarted job finds and resumes the latest one.
std::vector<EnvironmentFlagValue> sagemaker_flag_values(const EnvironmentMap& environment);

/// The file of input channel `channel` (SM_CHANNEL_<CHANNEL>, upper case) for one split: the
/// first of `preferred_names` present in the channel's folder, else the folder's only file.
/// std::nullopt when the variable is unset; ArgumentError naming the variable when the folder
/// is missing or holds several candidate files and none of the preferred names.
std::optional<std::string> sagemaker_channel_file(const EnvironmentMap& environment,
                                                  const std::string& channel,
                                                  const std::vector<std::string>& preferred_names);

/// The checkpoint folder SageMaker syncs with the estimator's checkpoint_s3_uri (managed spot
/// training keeps it across restarts): "LocalPath" of the checkpoint configuration SageMaker
/// writes as checkpointconfig.json in SM_INPUT_CONFIG_DIR (or the file SM_CHECKPOINT_CONFIG_FILE
/// names), "/opt/ml/checkpoints" when LocalPath is absent or empty (the API's default).
/// std::nullopt when neither variable is set or the folder holds no checkpointconfig.json (the
/// job has no checkpoint_s3_uri). ArgumentError naming the file when it is unreadable or not a
/// JSON object with a string LocalPath, or SM_CHECKPOINT_CONFIG_FILE names a missing file.
std::optional<std::string> sagemaker_checkpoint_dir(const EnvironmentMap& environment);

/// SM_MODEL_DIR, when set.
std::optional<std::string> sagemaker_model_dir(const EnvironmentMap& environment);

/// SM_OUTPUT_DATA_DIR, when set.
std::optional<std::string> sagemaker_output_data_dir(const EnvironmentMap& environment);

}  // namespace ctrainer
