#pragma once
/// \file Seq2SeqTrainer: transformers' Seq2SeqTrainer. Training is the Trainer's (plus
/// sortish_sampler); with predict_with_generate, evaluate() and predict() generate with the model
/// and return the generated ids as the predictions, so that compute_metrics can score text
/// (ROUGE, BLEU), and still report the loss of a normal forward.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <ctrainer/models/causal_lm.h>
#include <ctrainer/models/generation/generation_config.h>
#include <ctrainer/models/seq2seq_lm.h>
#include <ctrainer/trainer/args/seq2seq_training_args.h>
#include <ctrainer/trainer/trainer.h>

namespace ctrainer {

/// What transformers' Seq2SeqTrainer reads from the model and the tokenizer besides the weights.
struct Seq2SeqGenerationSetup {
  /// The model's generation config (transformers' model.generation_config): pass
  /// GenerationConfig::for_model_folder(folder) for a model loaded from a folder. Default:
  /// GenerationConfig::from_model_config of the model's config(). --generation_config replaces it.
  std::optional<generation::GenerationConfig> model_generation_config;
  /// The id that pads generated ids and labels to the generation length: the tokenizer's
  /// pad_token_id, else its eos_token_id (transformers takes it from the processing_class).
  /// Default: the model config's pad_token_id.
  std::optional<int64_t> pad_token_id;
};

/// transformers' Seq2SeqTrainer, for encoder-decoders (Seq2SeqLanguageModel: T5, BART) and
/// decoder-only models (CausalLanguageModel: generated rows then begin with the prompt).
///
/// With predict_with_generate, each evaluation batch is generated with the call's settings
/// (evaluate / predict's `gen_kwargs`, then generation_max_length as max_length unless
/// max_length or max_new_tokens is given, generation_num_beams as num_beams unless given) over
/// the model's generation config. The generated ids and the labels shorter than that config's
/// max_length (default 20; not the call's) are padded to it with the pad id, and to
/// max_new_tokens + 1 when the config sets max_new_tokens, as transformers 5.24 pads them; rows
/// of different batches are then padded with -100, as the Trainer's predictions are.
class Seq2SeqTrainer : public Trainer {
 public:
  /// The Trainer's construction, then --generation_config (validated as transformers does) or
  /// `generation.model_generation_config`. With predict_with_generate, throws ArgumentError when
  /// the model cannot generate, or its parameters are sharded (ZeRO-3 / FSDP full_shard).
  Seq2SeqTrainer(std::shared_ptr<Model> model, Seq2SeqTrainingArguments args,
                 TrainerComponents components = {}, Seq2SeqGenerationSetup generation = {});

  Metrics evaluate(std::shared_ptr<Dataset> eval_dataset = nullptr,
                   const std::string& metric_key_prefix = "eval") override;
  /// evaluate() whose generation uses `gen_kwargs` over the model's generation config (fields it
  /// leaves unset follow the arguments, as above).
  Metrics evaluate(std::shared_ptr<Dataset> eval_dataset, const std::string& metric_key_prefix,
                   const generation::GenerationConfig& gen_kwargs);
  PredictionOutput predict(std::shared_ptr<Dataset> test_dataset,
                           const std::string& metric_key_prefix = "test") override;
  PredictionOutput predict(std::shared_ptr<Dataset> test_dataset,
                           const std::string& metric_key_prefix,
                           const generation::GenerationConfig& gen_kwargs);

  /// Without predict_with_generate (or for the loss only): the Trainer's. Otherwise: the
  /// generated ids as the logits, padded as above; the loss of a forward with the labels; the
  /// labels padded the same way.
  PredictionStepOutput prediction_step(Model& model, const Batch& inputs,
                                       bool prediction_loss_only) override;

  const Seq2SeqTrainingArguments& seq2seq_args() const { return seq2seq_args_; }
  /// The model's generation config the generation falls back to (transformers'
  /// model.generation_config).
  const generation::GenerationConfig& generation_config() const { return model_generation_config_; }

 protected:
  TrainSamplerOptions train_sampler_options() const override;
  nlohmann::json training_args_json() const override;

 private:
  /// The generation settings of an evaluate / predict call (transformers' _gen_kwargs).
  generation::GenerationConfig call_settings(const generation::GenerationConfig& gen_kwargs) const;
  /// `tensor` [rows, length] widened to the padding length of the model's generation config.
  at::Tensor pad_to_generation_length(const at::Tensor& tensor) const;

  Seq2SeqTrainingArguments seq2seq_args_;
  generation::GenerationConfig model_generation_config_;
  std::optional<int64_t> pad_token_id_;
  /// The settings of the running evaluate / predict.
  generation::GenerationConfig gen_kwargs_;
  /// The model as a generator (one of the two; both null when it cannot generate).
  Seq2SeqLanguageModel* seq2seq_model_ = nullptr;
  CausalLanguageModel* causal_model_ = nullptr;
};

}  // namespace ctrainer
