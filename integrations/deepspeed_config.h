#pragma once
/// \file A DeepSpeed JSON config (--deepspeed ds_config.json) read the way transformers' Trainer
/// reads it: keys checked against what ctrainer implements, "auto" values filled from the
/// training arguments and the model exactly as transformers' HfTrainerDeepSpeedConfig
/// (trainer_config_process / trainer_config_finalize) fills them, and explicit values that
/// disagree with the arguments reported together in transformers' words. The Trainer-side glue
/// (trainer/sharding/) turns the result into ShardingOptions, precision and optimizer settings.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ctrainer {

/// The TrainingArguments values that HfTrainerDeepSpeedConfig reads, as a plain struct (this
/// layer does not know the Trainer). Defaults are transformers'.
struct DeepSpeedTrainerArgs {
  int64_t world_size = 1;
  int64_t per_device_train_batch_size = 8;
  int64_t gradient_accumulation_steps = 1;
  double max_grad_norm = 1.0;
  double learning_rate = 5e-5;
  double adam_beta1 = 0.9;
  double adam_beta2 = 0.999;
  double adam_epsilon = 1e-8;
  double weight_decay = 0.0;
  bool fp16 = false;
  bool fp16_full_eval = false;
  bool bf16 = false;
  bool bf16_full_eval = false;
};

/// The training dtype the config selects (HfTrainerDeepSpeedConfig.dtype(): bf16 if
/// bf16.enabled, else fp16 if fp16.enabled, else fp32).
enum class DeepSpeedDtype { kFp32, kFp16, kBf16 };

/// The "fp16" section's loss scaling (deepspeed/runtime/constants.py defaults).
struct DeepSpeedLossScale {
  /// > 0: a static scale; 0: dynamic scaling.
  double loss_scale = 0.0;
  int64_t initial_scale_power = 16;
  int64_t loss_scale_window = 1000;
  int64_t hysteresis = 2;
  bool consecutive_hysteresis = false;
  double min_loss_scale = 1.0;
};

/// An "optimizer" or "scheduler" section: DeepSpeed's type name as written and its params.
struct DeepSpeedSection {
  std::string type;
  nlohmann::json params = nlohmann::json::object();
};

/// The "zero_optimization" section, resolved with DeepSpeed's defaults
/// (deepspeed/runtime/zero/config.py).
struct DeepSpeedZeroSettings {
  int stage = 0;
  bool offload_optimizer = false;  ///< offload_optimizer.device "cpu"
  bool offload_param = false;      ///< offload_param.device "cpu" (read at stage 3 only)
  bool overlap_comm = false;       ///< DeepSpeed's default: true at stage 3, false below
  int64_t reduce_bucket_size = 500'000'000;
  int64_t param_persistence_threshold = 100'000;
  bool gather_16bit_weights_on_model_save = false;
};

/// A DeepSpeed config as transformers' Trainer processes it. Use in HF's order:
///   DeepSpeedConfig ds = DeepSpeedConfig::from_file(path);   // keys and values checked
///   ds.trainer_config_process(args);                          // "auto" from the arguments
///   ds.trainer_config_finalize(hidden_size, steps, warmup);  // model / schedule "auto"; throws
///                                                             // every mismatch at once
/// then read the typed sections. Errors are ArgumentError naming --deepspeed, the file and the
/// key.
class DeepSpeedConfig {
 public:
  /// Checks every key and every value that is not "auto": unknown keys, values ctrainer does
  /// not implement (NVMe offload, optimizer types other than Adam/AdamW/SGD, ...) and "auto"
  /// where transformers fills nothing are errors naming the key; keys that change no result
  /// (steps_per_print, contiguous_gradients, pin_memory, ...) are logged as ignored at info.
  /// `source` names the config in messages (its path).
  DeepSpeedConfig(nlohmann::json config, std::string source);
  /// Reads the file (a syntax error names FILE:LINE:COLUMN) and checks it as above.
  static DeepSpeedConfig from_file(const std::filesystem::path& path);
  /// --deepspeed's value as transformers 5 reads it: inline JSON ('{...}', named "(inline
  /// JSON)" in messages, or `inline_name` when given) or the path of a file.
  static DeepSpeedConfig from_flag(const std::string& value,
                                   const std::optional<std::string>& inline_name = std::nullopt);

  /// transformers' trainer_config_process: fills the batch sizes, gradient_clipping, optimizer
  /// params (lr, betas, eps, weight_decay), scheduler warmup_min_lr / warmup_max_lr, fp16 /
  /// bf16 enabled, and records explicit values that disagree (raised by finalize).
  void trainer_config_process(const DeepSpeedTrainerArgs& args);
  /// The hidden-size half of trainer_config_finalize: reduce_bucket_size = h*h and, at stage 3,
  /// stage3_prefetch_bucket_size = int(0.9*h*h) and stage3_param_persistence_threshold = 10*h
  /// where they are "auto". Throws transformers' error when one is "auto" and `hidden_size` is
  /// unknown. Fills only, so calling it again changes nothing.
  void fill_hidden_size_keys(std::optional<int64_t> hidden_size);
  /// transformers' trainer_config_finalize: fill_hidden_size_keys, then scheduler
  /// total_num_steps and warmup_num_steps (max(1, warmup_steps)); then throws one ArgumentError
  /// listing every mismatch recorded since trainer_config_process, in transformers' format
  /// ("- ds <key>=<value> vs hf <argument>=<value>"), and one naming any "auto" left unfilled.
  void trainer_config_finalize(std::optional<int64_t> hidden_size, int64_t num_training_steps,
                               int64_t warmup_steps);

  /// The config as filled so far (what DeepSpeed would be given).
  const nlohmann::json& config() const { return config_; }
  const std::string& source() const { return source_; }
  /// "- ds <key>=<value> vs hf <argument>=<value>" lines recorded so far.
  const std::vector<std::string>& mismatches() const { return mismatches_; }

  /// zero_optimization.stage (0 when absent).
  int zero_stage() const;
  /// After trainer_config_process.
  DeepSpeedDtype dtype() const;
  DeepSpeedLossScale loss_scale() const;
  /// gradient_clipping when present (after filling).
  std::optional<double> gradient_clipping() const;
  std::optional<DeepSpeedSection> optimizer() const;
  std::optional<DeepSpeedSection> scheduler() const;
  /// Needs the hidden-size keys filled (fill_hidden_size_keys) when they were "auto".
  DeepSpeedZeroSettings zero() const;

 private:
  void fill_match(const std::string& key, const nlohmann::json& hf_value,
                  const std::string& hf_name, bool must_match = true);
  void fill_only(const std::string& key, const nlohmann::json& value) {
    fill_match(key, value, "", false);
  }
  [[noreturn]] void fail(const std::string& message) const;

  nlohmann::json config_;
  std::string source_;
  std::vector<std::string> mismatches_;
  std::optional<DeepSpeedDtype> dtype_;
};

/// The hidden size transformers takes from a model config: hidden_size, else the largest of
/// hidden_sizes, else the same from text_config; std::nullopt when there is none.
std::optional<int64_t> hidden_size_from_model_config(const nlohmann::json& model_config);

/// `value` as Python's str() prints the json.load()ed value (transformers formats mismatches
/// with f-strings): True/False/None, floats as repr (1e-05, 200000000.0), lists as
/// "[0.9, 0.999]", strings unquoted at the top level and quoted inside containers.
std::string python_str(const nlohmann::json& value);

/// Python's ==, as transformers compares a config value with an argument: numbers and bools by
/// value (1 == 1.0 == True), lists element by element, anything else exactly.
bool python_equal(const nlohmann::json& a, const nlohmann::json& b);

}  // namespace ctrainer
