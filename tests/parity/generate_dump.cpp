// ctrainer_parity_generate_dump: generate() on model folders, for
// tests/parity/generate_parity.py to compare with transformers' generate().
//
//   ctrainer_parity_generate_dump --cases cases.json
//
// cases.json: a list of {"model": FOLDER, "config": FILE, "inputs": FILE, "output": FILE,
// "seed": N (optional)}, all run in this one process (each folder loaded once). The model is
// AutoModelForSeq2SeqLM's when config.json says is_encoder_decoder, else AutoModelForCausalLM's,
// in eval mode, with its folder's generation settings; the config file
// holds the call's settings (generate()'s keyword arguments). Inputs: input_ids [B, P] int64 and
// an optional attention_mask. A seed gives the draws their own CPU generator seeded with it (as
// torch.manual_seed does to the global one). Output: "sequences" and, after beam search,
// "sequence_scores". Prints one JSON line per case: {"ok": true} or {"error": message}.
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>

#include <ATen/CPUGeneratorImpl.h>
#include <nlohmann/json.hpp>

#include <ctrainer/core/errors.h>
#include <ctrainer/integrations/safetensors.h>
#include <ctrainer/models/causal_lm.h>
#include <ctrainer/models/generation/generate.h>
#include <ctrainer/models/registry/model_registry.h>
#include <ctrainer/models/seq2seq_lm.h>

#include "dump_flags.h"

namespace {

/// The folder's model: AutoModelForSeq2SeqLM when config.json says is_encoder_decoder, else
/// AutoModelForCausalLM.
std::shared_ptr<ctrainer::Model> load_model(const std::string& folder) {
  static std::map<std::string, std::shared_ptr<ctrainer::Model>> loaded;
  auto& model = loaded[folder];
  if (!model) {
    std::ifstream in(std::filesystem::path(folder) / "config.json");
    const bool encoder_decoder = nlohmann::json::parse(in).value("is_encoder_decoder", false);
    model = ctrainer::AutoModel::from_pretrained(
        folder, encoder_decoder ? ctrainer::ModelTask::kSeq2SeqLM : ctrainer::ModelTask::kCausalLM);
    model->eval();
  }
  return model;
}

nlohmann::json run_case(const nlohmann::json& c) {
  using namespace ctrainer::generation;
  try {
    const std::string folder = c.at("model").get<std::string>();
    const auto model = load_model(folder);
    auto inputs = ctrainer::load_safetensors(c.at("inputs").get<std::string>()).tensors;
    const at::Tensor mask =
        inputs.count("attention_mask") ? inputs["attention_mask"] : at::Tensor();
    std::optional<at::Generator> generator;
    if (c.contains("seed"))
      generator = at::make_generator<at::CPUGeneratorImpl>(c.at("seed").get<uint64_t>());
    const auto call = GenerationConfig::from_file(c.at("config").get<std::string>());
    const auto defaults = GenerationConfig::for_model_folder(folder);
    GenerateOutput out;
    if (auto* decoder = dynamic_cast<ctrainer::CausalLanguageModel*>(model.get()))
      out = generate(*decoder, inputs.at("input_ids"), mask, call, defaults, generator);
    else if (auto* seq2seq = dynamic_cast<ctrainer::Seq2SeqLanguageModel*>(model.get()))
      out = generate(*seq2seq, inputs.at("input_ids"), mask, call, defaults, generator);
    else
      throw ctrainer::ArgumentError(folder + ": this model class cannot generate");
    std::map<std::string, at::Tensor> tensors{{"sequences", out.sequences.contiguous()}};
    if (out.sequence_scores.defined())
      tensors["sequence_scores"] = out.sequence_scores.contiguous();
    ctrainer::save_safetensors(c.at("output").get<std::string>(), tensors);
    return {{"ok", true}};
  } catch (const ctrainer::ArgumentError& e) {
    return {{"error", e.what()}};
  }
}

}  // namespace

int main(int argc, char** argv) {
  return ctrainer::parity::run_cases_main(argc, argv, "ctrainer_parity_generate_dump", run_case);
}
