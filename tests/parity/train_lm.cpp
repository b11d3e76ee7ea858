// ctrainer_parity_train_lm: the Trainer on a causal LM, for the comparison with transformers'
// Trainer (tests/parity/clm_trainer_vs_hf.py). Loads --model_dir with AutoModel (causal_lm),
// trains on the rows of --data (a safetensors file of input_ids, attention_mask and labels, one
// row per example, taken in order with --train_sampling_strategy sequential) with every
// TrainingArguments flag, and writes the log history to --log_history_file as JSON.
#include <fstream>

#include <ctrainer/core/errors.h>
#include <ctrainer/integrations/safetensors.h>
#include <ctrainer/models/registry/model_registry.h>
#include <ctrainer/trainer/args/argument_parser.h>
#include <ctrainer/trainer/trainer.h>

namespace {

struct Files {
  std::string model_dir, data, log_history_file;
};

int run(const ctrainer::TrainingArguments& args, const Files& files) {
  if (files.model_dir.empty() || files.data.empty() || files.log_history_file.empty())
    throw ctrainer::ArgumentError("give --model_dir, --data and --log_history_file");
  auto model =
      ctrainer::AutoModel::from_pretrained(files.model_dir, ctrainer::ModelTask::kCausalLM);
  const ctrainer::SafetensorsFile data = ctrainer::load_safetensors(files.data);
  auto dataset = std::make_shared<ctrainer::TensorDataset>(data.tensors);
  ctrainer::Trainer trainer(model, args, {.train_dataset = dataset});
  trainer.train();
  std::ofstream out(files.log_history_file);
  out << nlohmann::json(trainer.state().log_history).dump(1) << '\n';
  return out ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  Files files;
  ctrainer::ArgumentParser parser("Trains a causal LM for the parity test with transformers.");
  parser.add_option("model_dir", &files.model_dir, "A model folder (config.json, safetensors).");
  parser.add_option("data", &files.data, "Training rows as a safetensors file.");
  parser.add_option("log_history_file", &files.log_history_file, "Where the log history goes.");
  const ctrainer::TrainingArguments args = ctrainer::parse_args_or_exit(parser, argc, argv);
  return ctrainer::run_reporting_errors([&] { return run(args, files); });
}
