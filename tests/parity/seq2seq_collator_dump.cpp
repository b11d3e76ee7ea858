// ctrainer_parity_seq2seq_collator: DataCollatorForSeq2Seq on examples from safetensors files,
// for tests/parity/seq2seq_collator_parity.py to compare with transformers'.
//
//   ctrainer_parity_seq2seq_collator --cases cases.json
//
// cases.json: a list of {"examples": FILE, "options": {...}, "output": FILE}, all run in this one
// process. FILE holds example i's tensors as "<i>.<key>" (1-D int64). options: pad_token_id,
// pad_left, max_length, pad_to_multiple_of, label_pad_token_id, decoder_start_token_id,
// decoder_pad_token_id (Seq2SeqCollatorOptions' fields). Output: the batch's tensors. Prints one
// JSON line per case: {"keys": [...]} or {"error": message}.
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include <ctrainer/core/errors.h>
#include <ctrainer/integrations/safetensors.h>
#include <ctrainer/trainer/data/seq2seq_collator.h>

#include "dump_flags.h"

namespace {

nlohmann::json run_case(const nlohmann::json& c) {
  try {
    const auto& o = c.at("options");
    ctrainer::Seq2SeqCollatorOptions options;
    options.pad_token_id = o.value("pad_token_id", int64_t{0});
    options.pad_left = o.value("pad_left", false);
    if (o.contains("max_length")) options.max_length = o.at("max_length").get<int64_t>();
    if (o.contains("pad_to_multiple_of"))
      options.pad_to_multiple_of = o.at("pad_to_multiple_of").get<int64_t>();
    options.label_pad_token_id = o.value("label_pad_token_id", int64_t{-100});
    if (o.contains("decoder_start_token_id"))
      options.decoder_start_token_id = o.at("decoder_start_token_id").get<int64_t>();
    options.decoder_pad_token_id = o.value("decoder_pad_token_id", int64_t{0});
    std::map<int64_t, ctrainer::Example> examples;
    for (const auto& [name, tensor] :
         ctrainer::load_safetensors(c.at("examples").get<std::string>()).tensors) {
      const auto dot = name.find('.');
      examples[std::stoll(name.substr(0, dot))].set(name.substr(dot + 1), tensor);
    }
    std::vector<ctrainer::Example> list;
    for (auto& [index, example] : examples) list.push_back(std::move(example));
    const ctrainer::Batch batch = ctrainer::DataCollatorForSeq2Seq(options)(list);
    std::map<std::string, at::Tensor> out;
    nlohmann::json keys = nlohmann::json::array();
    for (const auto& key : batch.keys()) {
      out[key] = batch.at(key);
      keys.push_back(key);
    }
    ctrainer::save_safetensors(c.at("output").get<std::string>(), out);
    return {{"keys", keys}};
  } catch (const ctrainer::ArgumentError& e) {
    return {{"error", e.what()}};
  }
}

}  // namespace

int main(int argc, char** argv) {
  return ctrainer::parity::run_cases_main(argc, argv, "ctrainer_parity_seq2seq_collator", run_case);
}
