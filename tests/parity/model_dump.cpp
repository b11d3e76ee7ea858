// ctrainer_parity_model_dump: any registered model through the registry, as programs load it,
// run once forward + backward in eval mode (no dropout) on inputs read from a safetensors file;
// writes what the parity tests compare with transformers to another safetensors file.
//
//   ctrainer_parity_model_dump --task TASK (--model DIR | --config FILE --seed N --save DIR
//                              [--max_shard_size SIZE]) [--lora_config FILE|DIR]
//                              --inputs in.safetensors --output out.safetensors
//
// TASK: causal_lm, masked_lm, seq2seq_lm or sequence_classification. --model loads a folder with AutoModel's
// from_pretrained; --config creates a model with new weights (our initialisation after
// torch::manual_seed(N)) and writes it with save_pretrained to --save, for transformers to load
// (in shards past --max_shard_size, "20KB" as transformers reads it; default its 50GB).
// --lora_config attaches LoRA adapters from a PEFT adapter_config.json (a file, or a folder whose
// adapter_model.safetensors is then loaded too), as PeftModel.from_pretrained does.
// Inputs: input_ids [B, T] int64, optional attention_mask, token_type_ids, position_ids and
// labels.
// Outputs: logits, and with labels: loss and grad.<name> for every parameter (HF state-dict
// names). Metadata: problem_type (config.json's after the forward).
#include <cstdio>
#include <filesystem>
#include <string>

#include <torch/utils.h>

#include <ctrainer/core/errors.h>
#include <ctrainer/integrations/safetensors.h>
#include <ctrainer/integrations/safetensors_index.h>
#include <ctrainer/models/lora/lora_model.h>
#include <ctrainer/models/pretrained_weights.h>
#include <ctrainer/models/registry/model_registry.h>
#include <ctrainer/trainer/args/argument_parser.h>

#include "dump_flags.h"

namespace {

constexpr const char* kUsage =
    "usage: ctrainer_parity_model_dump --task causal_lm|masked_lm|seq2seq_lm|sequence_classification (--model "
    "DIR | "
    "--config FILE --seed N --save DIR [--max_shard_size SIZE]) [--lora_config FILE|DIR] "
    "--inputs FILE.safetensors --output FILE.safetensors\n";

struct Args {
  std::string task, model, config, save, inputs, output, lora_config;
  uint64_t seed = 0;
  int64_t max_shard_bytes = ctrainer::kDefaultMaxShardBytes;
};

Args parse_args(int argc, char** argv) {
  auto flags =
      ctrainer::parity::parse_dump_flags(argc, argv,
                                         {"task", "model", "config", "seed", "save",
                                          "max_shard_size", "lora_config", "inputs", "output"},
                                         kUsage);
  Args args{flags["task"], flags["model"],  flags["config"],
            flags["save"], flags["inputs"], flags["output"]};
  args.lora_config = flags["lora_config"];
  if (!flags["seed"].empty()) args.seed = std::stoull(flags["seed"]);
  if (!flags["max_shard_size"].empty())
    args.max_shard_bytes = ctrainer::parse_shard_size(flags["max_shard_size"], "--max_shard_size");
  if (args.task.empty() || args.inputs.empty() || args.output.empty() ||
      args.model.empty() == args.config.empty() || args.config.empty() != args.save.empty())
    throw ctrainer::ArgumentError(std::string("missing or conflicting flags\n") + kUsage);
  return args;
}

ctrainer::ModelTask task_of(const std::string& name) {
  if (name == "causal_lm") return ctrainer::ModelTask::kCausalLM;
  if (name == "sequence_classification") return ctrainer::ModelTask::kSequenceClassification;
  if (name == "masked_lm") return ctrainer::ModelTask::kMaskedLM;
  if (name == "seq2seq_lm") return ctrainer::ModelTask::kSeq2SeqLM;
  throw ctrainer::ArgumentError("--task " + name +
                                ": use causal_lm, masked_lm, seq2seq_lm or sequence_classification");
}

int run(const Args& args) {
  const ctrainer::ModelTask task = task_of(args.task);
  std::shared_ptr<ctrainer::Model> model;
  if (!args.model.empty()) {
    model = ctrainer::AutoModel::from_pretrained(args.model, task);
  } else {
    torch::manual_seed(args.seed);
    const auto config = ctrainer::AutoConfig::from_pretrained(args.config);
    model = ctrainer::AutoModel::from_config(*config, task);
    ctrainer::save_pretrained(*model, args.save, "", args.max_shard_bytes);
  }
  if (!args.lora_config.empty()) {
    ctrainer::attach_lora(*model, ctrainer::LoraConfig::from_file(args.lora_config));
    if (std::filesystem::is_directory(args.lora_config))
      ctrainer::load_lora_adapter(*model, args.lora_config);
  }
  model->eval();

  ctrainer::SafetensorsFile inputs = ctrainer::load_safetensors(args.inputs);
  ctrainer::Batch batch;
  for (const auto& [name, tensor] : inputs.tensors) batch.set(name, tensor);
  const ctrainer::ModelOutput result = model->forward(batch);
  std::map<std::string, at::Tensor> out;
  out["logits"] = result.logits.detach();
  if (result.loss.defined()) {
    result.loss.backward();
    out["loss"] = result.loss.detach();
    for (const auto& item : model->named_parameters(/*recurse=*/true)) {
      if (!item.value().requires_grad()) {  // frozen: zeros, as transformers' side reports
        out["grad." + item.key()] = at::zeros_like(item.value());
        continue;
      }
      if (!item.value().grad().defined())
        throw std::runtime_error("parameter " + item.key() + " got no gradient");
      out["grad." + item.key()] = item.value().grad();
    }
  }
  const auto config = model->config();
  const std::string problem_type =
      config && config->contains("problem_type") && (*config)["problem_type"].is_string()
          ? (*config)["problem_type"].get<std::string>()
          : "";
  ctrainer::save_safetensors(args.output, out, {{"problem_type", problem_type}});
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return ctrainer::run_reporting_errors([&] { return run(parse_args(argc, argv)); });
}
