// ctrainer-generate: continues prompts with any registered causal language model folder, as
// transformers' model.generate() after AutoModelForCausalLM / AutoTokenizer.from_pretrained.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <ctrainer/core/errors.h>
#include <ctrainer/distributed/cuda_support.h>
#include <ctrainer/models/causal_lm.h>
#include <ctrainer/models/generation/generate.h>
#include <ctrainer/models/registry/model_registry.h>
#include <ctrainer/models/seq2seq_lm.h>
#include <ctrainer/models/tokenizers/tokenizer_registry.h>

namespace {

using ctrainer::ArgumentError;
using ctrainer::generation::GenerationConfig;
using nlohmann::json;

constexpr const char* kUsage =
    "usage: ctrainer-generate --model_name_or_path DIR [--tokenizer_name DIR]\n"
    "                         [--prompt TEXT]... [--generation_config FILE] [--seed N]\n"
    "                         [--device cpu|cuda] [--output_format jsonl|text]\n"
    "                         [--<generation setting> VALUE]...\n"
    "\n"
    "Loads DIR as AutoModelForCausalLM (AutoModelForSeq2SeqLM when its config.json says\n"
    "is_encoder_decoder: T5) and its tokenizer (or --tokenizer_name's) as AutoTokenizer, encodes\n"
    "each --prompt (or, without one, each line of stdin) with the tokenizer's special tokens,\n"
    "left-pads the batch, and generates as transformers' generate() does. Settings: the\n"
    "model's generation_config.json (else config.json's token ids), under --generation_config\n"
    "FILE, under the command line's: any generation_config.json key as a flag, its value JSON\n"
    "or a word (--max_new_tokens 40 --do_sample true --top_p 0.9 --num_beams 4\n"
    "--early_stopping never --eos_token_id [2,3]). --seed N seeds the draws as torch.manual_seed.\n"
    "Prints one line per returned sequence (num_return_sequences per prompt, prompts in order):\n"
    "jsonl {\"prompt\", \"generated_text\" (prompt + continuation; an encoder-decoder's: the\n"
    "continuation alone), \"continuation\",\n"
    "\"generated_token_ids\"}; text: generated_text with newlines as spaces.\n";

struct Args {
  std::string model, tokenizer, generation_config, device = "cpu", output_format = "jsonl";
  std::vector<std::string> prompts;
  std::optional<uint64_t> seed;
  json settings = json::object();  // the generation flags
};

/// A flag's value as JSON (numbers, true/false, lists), else as the string it is.
json setting_value(const std::string& value) {
  const json parsed = json::parse(value, nullptr, /*allow_exceptions=*/false);
  return parsed.is_discarded() ? json(value) : parsed;
}

Args parse_args(int argc, char** argv) {
  Args args;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "-h" || flag == "--help") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    }
    if (!flag.starts_with("--") || flag.size() == 2)
      throw ArgumentError("unexpected argument '" + flag + "'");
    const std::string name = flag.substr(2);
    if (i + 1 >= argc) throw ArgumentError(flag + " needs a value");
    const std::string value = argv[++i];
    if (name == "model_name_or_path") {
      args.model = value;
    } else if (name == "tokenizer_name") {
      args.tokenizer = value;
    } else if (name == "prompt") {
      args.prompts.push_back(value);
    } else if (name == "generation_config") {
      args.generation_config = value;
    } else if (name == "device") {
      if (value != "cpu" && value != "cuda")
        throw ArgumentError("--device must be cpu or cuda, got '" + value + "'");
      args.device = value;
    } else if (name == "output_format") {
      if (value != "jsonl" && value != "text")
        throw ArgumentError("--output_format must be jsonl or text, got '" + value + "'");
      args.output_format = value;
    } else if (name == "seed") {
      try {
        size_t used = 0;
        if (value.empty() || value.front() == '-') throw std::invalid_argument(value);
        args.seed = std::stoull(value, &used);
        if (used != value.size()) throw std::invalid_argument(value);
      } catch (const std::exception&) {
        throw ArgumentError("--seed must be a non-negative integer, got '" + value + "'");
      }
    } else {
      if (args.settings.contains(name)) throw ArgumentError(flag + " is given twice");
      args.settings[name] = setting_value(value);
    }
  }
  if (args.model.empty()) throw ArgumentError("--model_name_or_path is required");
  return args;
}

/// The command line's generation settings over --generation_config's; a flag that is no
/// generation setting ctrainer reads is refused by name (GenerationConfig refuses bad values).
GenerationConfig call_settings(const Args& args) {
  const GenerationConfig flags =
      GenerationConfig::from_json(args.settings, "the generation flags (--key value)");
  if (!flags.other.empty())
    throw ArgumentError("unknown flag --" + flags.other.begin().key() +
                        ": not a generation setting (see --help)");
  if (args.generation_config.empty()) return flags;
  return flags.merged_over(GenerationConfig::from_file(args.generation_config));
}

std::vector<std::string> read_prompts(const Args& args) {
  if (!args.prompts.empty()) return args.prompts;
  std::vector<std::string> prompts;
  for (std::string line; std::getline(std::cin, line);) prompts.push_back(line);
  if (prompts.empty()) throw ArgumentError("no prompt: give --prompt TEXT or lines on stdin");
  return prompts;
}

int run(const Args& args) {
  const GenerationConfig call = call_settings(args);
  const GenerationConfig model_defaults = GenerationConfig::for_model_folder(args.model);
  const auto tokenizer = ctrainer::AutoTokenizer::from_pretrained(
      args.tokenizer.empty() ? args.model : args.tokenizer);
  // An encoder-decoder (config.json's is_encoder_decoder: T5, ...) continues nothing: it writes
  // a new text for each prompt, which is its encoder's input.
  const bool encoder_decoder = ctrainer::AutoConfig::from_pretrained(args.model)
                                   ->to_json()
                                   .value("is_encoder_decoder", false);
  const auto model = ctrainer::AutoModel::from_pretrained(
      args.model,
      encoder_decoder ? ctrainer::ModelTask::kSeq2SeqLM : ctrainer::ModelTask::kCausalLM);
  auto* decoder = dynamic_cast<ctrainer::CausalLanguageModel*>(model.get());
  auto* seq2seq = dynamic_cast<ctrainer::Seq2SeqLanguageModel*>(model.get());
  if (!decoder && !seq2seq) throw ArgumentError(args.model + ": this model class cannot generate");
  // libtorch's CUDA half is loaded before main() by the module this call links in.
  if (args.device == "cuda" && !ctrainer::cuda_support())
    throw ArgumentError("--device cuda: no usable CUDA device (" + ctrainer::cuda_support_status() +
                        ")");
  const at::Device device(args.device == "cuda" ? at::kCUDA : at::kCPU);
  model->to(device);
  model->eval();

  // The batch, left-padded as transformers' tokenizer pads for decoder-only generation.
  const std::vector<std::string> prompts = read_prompts(args);
  std::vector<std::vector<int64_t>> encoded;
  size_t width = 0;
  for (const std::string& prompt : prompts) {
    encoded.push_back(tokenizer->encode(prompt).input_ids);
    if (encoded.back().empty())
      throw ArgumentError("a prompt encodes to no token: '" + prompt + "'");
    width = std::max(width, encoded.back().size());
  }
  std::optional<int64_t> pad;
  if (const auto token = tokenizer->special_tokens().pad) pad = tokenizer->token_to_id(*token);
  if (!pad) pad = call.merged_over(model_defaults).pad_token_id;
  if (!pad) {
    const auto eos = call.merged_over(model_defaults).eos_token_id;
    if (eos && !eos->ids.empty()) pad = eos->ids.front();
  }
  const auto rows = static_cast<int64_t>(prompts.size());
  at::Tensor ids = at::full({rows, static_cast<int64_t>(width)}, pad.value_or(0), at::kLong);
  at::Tensor mask = at::zeros({rows, static_cast<int64_t>(width)}, at::kLong);
  for (int64_t r = 0; r < rows; ++r) {
    const auto& row = encoded[static_cast<size_t>(r)];
    const auto n = static_cast<int64_t>(row.size());
    ids[r].narrow(0, static_cast<int64_t>(width) - n, n).copy_(at::tensor(row, at::kLong));
    mask[r].narrow(0, static_cast<int64_t>(width) - n, n).fill_(1);
  }
  if (args.seed) at::manual_seed(*args.seed);  // every default generator, as torch.manual_seed
  const auto out = decoder ? ctrainer::generation::generate(*decoder, ids.to(device),
                                                            mask.to(device), call, model_defaults)
                           : ctrainer::generation::generate(*seq2seq, ids.to(device),
                                                            mask.to(device), call, model_defaults);
  const at::Tensor sequences = out.sequences.cpu();
  // The sequences start with the prompt (decoder-only) or the decoder's start token.
  const int64_t skipped = decoder ? static_cast<int64_t>(width) : 1;
  const int64_t per_prompt = sequences.size(0) / rows;
  for (int64_t s = 0; s < sequences.size(0); ++s) {
    const at::Tensor generated = sequences[s].narrow(0, skipped, sequences.size(1) - skipped);
    const std::vector<int64_t> tokens(generated.data_ptr<int64_t>(),
                                      generated.data_ptr<int64_t>() + generated.numel());
    const std::string& prompt = prompts[static_cast<size_t>(s / per_prompt)];
    const std::string continuation = tokenizer->decode(tokens, /*skip_special_tokens=*/true);
    const std::string generated_text = decoder ? prompt + continuation : continuation;
    if (args.output_format == "jsonl") {
      std::printf("%s\n", json({{"prompt", prompt},
                                {"generated_text", generated_text},
                                {"continuation", continuation},
                                {"generated_token_ids", tokens}})
                              .dump(-1, ' ', false, json::error_handler_t::replace)
                              .c_str());
    } else {
      std::string line = generated_text;
      for (char& c : line)
        if (c == '\n' || c == '\r') c = ' ';
      std::printf("%s\n", line.c_str());
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(parse_args(argc, argv));
  } catch (const ArgumentError& e) {
    std::fprintf(stderr, "ctrainer-generate: error: %s\n%s", e.what(), kUsage);
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ctrainer-generate: error: %s\n", e.what());
    return 1;
  }
}
