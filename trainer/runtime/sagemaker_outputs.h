#pragma once
/// \file What a SageMaker job leaves for SageMaker to upload when it ends: SM_MODEL_DIR becomes
/// model.tar.gz and SM_OUTPUT_DATA_DIR output.tar.gz. HF's SageMaker examples save the model to
/// SM_MODEL_DIR and their results to SM_OUTPUT_DATA_DIR; our example programs call this once
/// training and evaluation are over, and a program of yours can too.
#include <ctrainer/integrations/sagemaker/sagemaker_environment.h>
#include <ctrainer/trainer/args/training_args.h>

namespace ctrainer {

/// On the world's main process, when output_dir exists:
///   - when SM_MODEL_DIR is set and is not output_dir (a spot job trains in SageMaker's
///     checkpoint folder), copies output_dir's files (the final model, its tokenizer and
///     configuration, the results; not the checkpoint-* folders) into SM_MODEL_DIR;
///   - when SM_OUTPUT_DATA_DIR is set, copies the result files there: *_results.json,
///     trainer_state.json, predict_results_*.txt and generated_predictions.txt.
/// Does nothing outside SageMaker. Each copy is logged; a failed copy throws.
void publish_sagemaker_outputs(const TrainingArguments& args,
                               const EnvironmentMap& environment = process_environment());

}  // namespace ctrainer
