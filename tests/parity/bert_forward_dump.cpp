// ctrainer_parity_bert_dump: loads a BertForSequenceClassification from a model folder the way
// --model_name_or_path does, runs one forward + backward pass in eval mode (no dropout) on
// inputs read from a safetensors file, and writes what the parity tests compare with
// transformers to another safetensors file.
//
//   ctrainer_parity_bert_dump --model DIR --inputs in.safetensors --output out.safetensors
//
// Inputs: input_ids [B, T] int64, and optionally attention_mask, token_type_ids [B, T] int64 and
// labels (int64 [B], or float [B] / [B, num_labels]).
// Outputs: last_hidden_state [B, T, H] and pooler_output [B, H] (the bare BertModel), logits, and
// with labels: loss and grad.<name> for every parameter (HF state-dict names). Metadata:
// missing_keys / unexpected_keys (JSON arrays, the load report) and problem_type.
#include <cstdio>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <ctrainer/core/errors.h>
#include <ctrainer/integrations/safetensors.h>
#include <ctrainer/models/bert/bert_for_sequence_classification.h>
#include <ctrainer/models/pretrained_weights.h>
#include <ctrainer/trainer/args/argument_parser.h>

#include "dump_flags.h"

namespace {

constexpr const char* kUsage =
    "usage: ctrainer_parity_bert_dump --model DIR --inputs FILE.safetensors --output "
    "FILE.safetensors\n";

struct Args {
  std::string model, inputs, output;
};

Args parse_args(int argc, char** argv) {
  auto flags =
      ctrainer::parity::parse_dump_flags(argc, argv, {"model", "inputs", "output"}, kUsage);
  Args args{flags["model"], flags["inputs"], flags["output"]};
  if (args.model.empty() || args.inputs.empty() || args.output.empty())
    throw ctrainer::ArgumentError(std::string("--model, --inputs and --output are required\n") +
                                  kUsage);
  return args;
}

/// The dump's own checks, before Python compares values: a wrong shape or a non-finite number is
/// a failure of this program (exit 1), not a confusing mismatch later.
void require(bool ok, const std::string& what) {
  if (!ok) throw std::runtime_error("bert_forward_dump: " + what);
}

void require_shape(const at::Tensor& tensor, const std::vector<int64_t>& shape,
                   const std::string& name) {
  require(tensor.defined() && tensor.sizes().vec() == shape,
          name + " has shape " + (tensor.defined() ? c10::str(tensor.sizes()) : "undefined") +
              ", expected " + c10::str(at::IntArrayRef(shape)));
  require(at::isfinite(tensor).all().item<bool>(), name + " holds inf or NaN");
}

int run(const Args& args) {
  namespace fs = std::filesystem;
  // As run_glue does for --model_name_or_path: config.json, then model.safetensors with the
  // checkpoint-matching rules of the class (prefix, ignored buffers, reported keys).
  const ctrainer::BertConfig config =
      ctrainer::BertConfig::from_json_file((fs::path(args.model) / "config.json").string());
  auto model = std::make_shared<ctrainer::BertForSequenceClassification>(config);
  const ctrainer::WeightLoadReport report = ctrainer::load_pretrained_weights(
      *model, args.model, ctrainer::BertForSequenceClassification::weight_load_options());
  model->eval();

  ctrainer::SafetensorsFile inputs = ctrainer::load_safetensors(args.inputs);
  ctrainer::Batch batch;
  for (const auto& [name, tensor] : inputs.tensors) batch.set(name, tensor);

  std::map<std::string, at::Tensor> out;
  {
    torch::NoGradGuard no_grad;
    const at::Tensor mask =
        batch.contains("attention_mask") ? batch.at("attention_mask") : at::Tensor();
    const at::Tensor types =
        batch.contains("token_type_ids") ? batch.at("token_type_ids") : at::Tensor();
    const auto base = model->bert->forward(batch.at("input_ids"), mask, types);
    out["last_hidden_state"] = base.last_hidden_state;
    out["pooler_output"] = base.pooler_output;
  }
  const ctrainer::ModelOutput result = model->forward(batch);
  out["logits"] = result.logits.detach();
  if (result.loss.defined()) {
    result.loss.backward();
    out["loss"] = result.loss.detach();
    for (const auto& item : model->named_parameters(/*recurse=*/true)) {
      if (!item.value().grad().defined())
        throw std::runtime_error("parameter " + item.key() + " got no gradient");
      out["grad." + item.key()] = item.value().grad();
    }
  }
  const int64_t batch_size = batch.at("input_ids").size(0);
  const int64_t length = batch.at("input_ids").size(1);
  const int64_t hidden = config.hidden_size;
  require_shape(out["last_hidden_state"], {batch_size, length, hidden}, "last_hidden_state");
  require_shape(out["pooler_output"], {batch_size, hidden}, "pooler_output");
  require_shape(out["logits"], {batch_size, config.num_labels()}, "logits");
  if (result.loss.defined()) {
    require_shape(out["loss"], {}, "loss");
    for (const auto& item : model->named_parameters(/*recurse=*/true))
      require_shape(out["grad." + item.key()], item.value().sizes().vec(), "grad." + item.key());
  }
  ctrainer::save_safetensors(args.output, out,
                             {{"missing_keys", nlohmann::json(report.missing_keys).dump()},
                              {"unexpected_keys", nlohmann::json(report.unexpected_keys).dump()},
                              {"problem_type", model->bert_config().problem_type.value_or("")}});
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return ctrainer::run_reporting_errors([&] { return run(parse_args(argc, argv)); });
}
