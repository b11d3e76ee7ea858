// Seq2SeqTrainer: evaluate / predict with generation (transformers 5.24's trainer_seq2seq.py) and
// the sortish training order.
#include <ctrainer/trainer/seq2seq_trainer.h>

#include <torch/utils.h>

#include <ctrainer/core/errors.h>
#include <ctrainer/models/generation/generate.h>
#include <ctrainer/trainer/precision/autocast_scope.h>

namespace ctrainer {

using generation::GenerationConfig;

namespace {

GenerationConfig model_generation_config(const Model& model, const Seq2SeqTrainingArguments& args,
                                         const Seq2SeqGenerationSetup& setup) {
  // transformers: `self.model.generation_config = load_generation_config(args.generation_config)`.
  if (args.generation_config) return GenerationConfig::from_file(*args.generation_config);
  if (setup.model_generation_config) return *setup.model_generation_config;
  if (const auto config = model.config())
    return GenerationConfig::from_model_config(*config, "the model's config.json");
  return {};
}

std::optional<int64_t> config_pad_token_id(const Model& model) {
  const auto config = model.config();
  if (!config || !config->contains("pad_token_id") ||
      !(*config)["pad_token_id"].is_number_integer())
    return std::nullopt;
  return (*config)["pad_token_id"].get<int64_t>();
}

}  // namespace

Seq2SeqTrainer::Seq2SeqTrainer(std::shared_ptr<Model> model, Seq2SeqTrainingArguments args,
                               TrainerComponents components, Seq2SeqGenerationSetup generation)
    : Trainer(model, args, std::move(components)), seq2seq_args_(std::move(args)) {
  // The Trainer validated (and normalised) its copy of the TrainingArguments part.
  static_cast<TrainingArguments&>(seq2seq_args_) = Trainer::args();
  seq2seq_args_.check_seq2seq_fields();
  model_generation_config_ = model_generation_config(*model, seq2seq_args_, generation);
  pad_token_id_ = generation.pad_token_id ? generation.pad_token_id : config_pad_token_id(*model);
  seq2seq_model_ = dynamic_cast<Seq2SeqLanguageModel*>(model.get());
  if (!seq2seq_model_) causal_model_ = dynamic_cast<CausalLanguageModel*>(model.get());
  if (!seq2seq_args_.predict_with_generate) return;
  if (!seq2seq_model_ && !causal_model_)
    throw ArgumentError(
        "--predict_with_generate: this model cannot generate (it is neither an encoder-decoder "
        "language model such as T5 or BART nor a decoder-only one such as GPT-2 or Llama); "
        "drop --predict_with_generate or train a generative model");
  if (sharding().options.stage == ShardingStage::kParameters)
    throw ArgumentError(
        "--predict_with_generate with sharded parameters (" + sharding().source +
        ": ZeRO-3 / FSDP full_shard) is not supported yet: generation needs the whole model on "
        "every rank; use ZeRO-2 / FSDP shard_grad_op or DDP, or evaluate without generation");
}

TrainSamplerOptions Seq2SeqTrainer::train_sampler_options() const {
  TrainSamplerOptions options = Trainer::train_sampler_options();
  options.sortish = seq2seq_args_.sortish_sampler;
  return options;
}

nlohmann::json Seq2SeqTrainer::training_args_json() const {
  return to_json(seq2seq_args_);
}

GenerationConfig Seq2SeqTrainer::call_settings(const GenerationConfig& gen_kwargs) const {
  GenerationConfig call = gen_kwargs;
  if (!call.max_length && !call.max_new_tokens && seq2seq_args_.generation_max_length)
    call.max_length = seq2seq_args_.generation_max_length;
  if (!call.num_beams && seq2seq_args_.generation_num_beams)
    call.num_beams = seq2seq_args_.generation_num_beams;
  return call;
}

Metrics Seq2SeqTrainer::evaluate(std::shared_ptr<Dataset> eval_dataset,
                                 const std::string& metric_key_prefix) {
  return evaluate(std::move(eval_dataset), metric_key_prefix, GenerationConfig{});
}

Metrics Seq2SeqTrainer::evaluate(std::shared_ptr<Dataset> eval_dataset,
                                 const std::string& metric_key_prefix,
                                 const GenerationConfig& gen_kwargs) {
  gen_kwargs_ = call_settings(gen_kwargs);
  return Trainer::evaluate(std::move(eval_dataset), metric_key_prefix);
}

PredictionOutput Seq2SeqTrainer::predict(std::shared_ptr<Dataset> test_dataset,
                                         const std::string& metric_key_prefix) {
  return predict(std::move(test_dataset), metric_key_prefix, GenerationConfig{});
}

PredictionOutput Seq2SeqTrainer::predict(std::shared_ptr<Dataset> test_dataset,
                                         const std::string& metric_key_prefix,
                                         const GenerationConfig& gen_kwargs) {
  gen_kwargs_ = call_settings(gen_kwargs);
  return Trainer::predict(std::move(test_dataset), metric_key_prefix);
}

at::Tensor Seq2SeqTrainer::pad_to_generation_length(const at::Tensor& tensor) const {
  // transformers pads to model.generation_config's lengths after filling its unset fields with
  // the global defaults, not to the call's max_length.
  const GenerationConfig config = model_generation_config_.with_global_defaults();
  int64_t length = tensor.size(-1);
  if (length < *config.max_length)
    length = *config.max_length;
  else if (config.max_new_tokens && length < *config.max_new_tokens + 1)
    length = *config.max_new_tokens + 1;
  if (length == tensor.size(-1)) return tensor;
  if (!pad_token_id_)
    throw ArgumentError(
        "Seq2SeqTrainer: generated ids must be padded to the generation length but no pad id is "
        "known: set pad_token_id in the model's config.json or pass the tokenizer's as "
        "Seq2SeqGenerationSetup::pad_token_id");
  at::Tensor padded = at::full({tensor.size(0), length}, *pad_token_id_, tensor.options());
  padded.narrow(1, 0, tensor.size(-1)).copy_(tensor);
  return padded;
}

PredictionStepOutput Seq2SeqTrainer::prediction_step(Model& model, const Batch& inputs,
                                                     bool prediction_loss_only) {
  if (!seq2seq_args_.predict_with_generate || prediction_loss_only)
    return Trainer::prediction_step(model, inputs, prediction_loss_only);
  if (!inputs.contains("input_ids"))
    throw ArgumentError(
        "--predict_with_generate: the evaluation batch has no input_ids to generate from");
  const bool has_labels = inputs.contains("labels");
  at::Tensor generated;
  {
    torch::NoGradGuard no_grad;
    const at::Tensor input_ids = inputs.at("input_ids").to(device());
    const at::Tensor attention_mask =
        inputs.contains("attention_mask") ? inputs.at("attention_mask").to(device()) : at::Tensor();
    // accelerate runs the model's forward under autocast in mixed precision, generate() too.
    AutocastScope autocast(device().type(), precision().autocast_dtype());
    before_forward(model);
    generated = seq2seq_model_ ? generation::generate(*seq2seq_model_, input_ids, attention_mask,
                                                      gen_kwargs_, model_generation_config_)
                                     .sequences
                               : generation::generate(*causal_model_, input_ids, attention_mask,
                                                      gen_kwargs_, model_generation_config_)
                                     .sequences;
  }
  PredictionStepOutput out;
  // The loss of a normal forward with the labels (the Trainer's loss-only step).
  if (has_labels) out.loss = Trainer::prediction_step(model, inputs, true).loss;
  out.logits = pad_to_generation_length(generated);
  if (has_labels) out.labels = pad_to_generation_length(inputs.at("labels").to(device()));
  return out;
}

}  // namespace ctrainer
