#include <ctrainer/trainer/args/training_args.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <ctrainer/core/errors.h>
#include <ctrainer/core/strings.h>
#include <ctrainer/trainer/args/argument_parser.h>
#include <ctrainer/trainer/args/schedule_options.h>
#include <ctrainer/trainer/args/sharding_files.h>

namespace ctrainer {
namespace {

// Integrations transformers knows: validate() answers them with NotSupportedYet, while anything
// else is a typo and gets an ArgumentError. (The enums' own lists are in args/choices.h.)
/// --report_to integrations ctrainer has (report_to.cpp) and those transformers knows that it
/// lacks.
const std::vector<std::string> kIntegrations = {"mlflow", "tensorboard"};
const std::vector<std::string> kIntegrationsLater = {
    "azure_ml", "clearml",  "codecarbon", "comet_ml", "dagshub", "dvclive",
    "flyte",    "kubeflow", "neptune",    "swanlab",  "trackio", "wandb"};

bool contains(const std::vector<std::string>& list, const std::string& value) {
  return std::find(list.begin(), list.end(), value) != list.end();
}

/// Shortest text that reads back as the same number (5e-05, 0.1, 500.0).
std::string num(double value) {
  return nlohmann::json(value).dump();
}

/// The parser only ever stores values of the table; a struct filled in code may hold an
/// integer cast to the enum.
template <ChoiceEnum E>
void check_choice(const std::string& flag, E value) {
  if (is_choice(value)) return;
  throw ChoiceError("--" + flag + " must be one of " + choices_text<E>() + " (got the value " +
                    std::to_string(static_cast<int64_t>(value)) + ")");
}

/// save_strategy as the eval_strategy it equals, if any (HF compares the two strings).
std::optional<IntervalStrategy> as_interval(SaveStrategy save) {
  switch (save) {
    case SaveStrategy::kNo:
      return IntervalStrategy::kNo;
    case SaveStrategy::kSteps:
      return IntervalStrategy::kSteps;
    case SaveStrategy::kEpoch:
      return IntervalStrategy::kEpoch;
    case SaveStrategy::kBest:
      break;
  }
  return std::nullopt;
}

/// transformers' rule for logging_steps, eval_steps and save_steps under the "steps" strategy.
void check_steps(const std::string& flag, double value, const std::string& strategy_flag) {
  if (!(value > 0)) {
    throw ArgumentError("--" + flag + " must be > 0 with --" + strategy_flag + " steps (got " +
                        num(value) + "); give a number of steps, or a ratio of the total " +
                        "training steps in (0, 1)");
  }
  if (value >= 1 && value != std::floor(value)) {
    throw ArgumentError("--" + flag + " must be an integer when >= 1 (got " + num(value) +
                        "); values below 1 are ratios of the total training steps");
  }
}

void check_at_least(const std::string& flag, int64_t value, int64_t minimum,
                    const std::string& why = "") {
  if (value < minimum) {
    throw ArgumentError("--" + flag + " must be >= " + std::to_string(minimum) + " (got " +
                        std::to_string(value) + ")" + (why.empty() ? "" : "; " + why));
  }
}

void check_non_negative(const std::string& flag, double value, const std::string& why = "") {
  if (!(value >= 0)) {
    throw ArgumentError("--" + flag + " must be >= 0 (got " + num(value) + ")" +
                        (why.empty() ? "" : "; " + why));
  }
}

/// `value` in [0, 1) (or [0, 1] with `closed`).
void check_unit_interval(const std::string& flag, double value, bool closed = false) {
  const bool ok = value >= 0 && (closed ? value <= 1 : value < 1);
  if (!ok) {
    throw ArgumentError("--" + flag + " must be in [0, 1" + (closed ? "]" : ")") + " (got " +
                        num(value) + ")");
  }
}

}  // namespace

const std::vector<std::string>& report_to_integrations_not_built() {
  return kIntegrationsLater;
}

void TrainingArguments::validate() {
  // ---- 1. closed sets: the parser refused typos and unbuilt values already ----
  check_choice("eval_strategy", eval_strategy);
  check_choice("logging_strategy", logging_strategy);
  check_choice("save_strategy", save_strategy);
  check_choice("optim", optim);
  check_choice("lr_scheduler_type", lr_scheduler_type);
  // The schedule's arguments must be ones it takes (HF: a TypeError when the scheduler is built).
  (void)schedule_options(lr_scheduler_type, lr_scheduler_kwargs
                                                ? nlohmann::json::parse(lr_scheduler_kwargs->text)
                                                : nlohmann::json());
  check_choice("log_level", log_level);
  check_choice("log_level_replica", log_level_replica);
  check_choice("half_precision_backend", half_precision_backend);
  check_choice("train_sampling_strategy", train_sampling_strategy);
  if (ddp_backend) check_choice("ddp_backend", *ddp_backend);
  for (const std::string& target : report_to) {
    if (target == "none" || target == "all") {
      if (report_to.size() > 1) {
        throw ArgumentError("--report_to " + target +
                            " cannot be combined with other integrations (got " +
                            join(report_to, " ") + ")");
      }
    } else if (!contains(kIntegrations, target) && !contains(kIntegrationsLater, target)) {
      throw ArgumentError(
          "--report_to: unknown integration '" + target + "'; use " + join(kIntegrations) +
          ", all or none (integrations known to transformers that ctrainer lacks: " +
          join(kIntegrationsLater) + ")");
    }
  }

  // TensorBoard writes into --logging_dir: a file there would fail only at train begin.
  const bool reports_to_tensorboard =
      contains(report_to, "tensorboard") || contains(report_to, "all");
  std::error_code unreadable;  // a folder we may not look into: left to the writer's error
  if (reports_to_tensorboard && logging_dir &&
      std::filesystem::is_regular_file(*logging_dir, unreadable)) {
    throw ArgumentError("--logging_dir " + *logging_dir +
                        " is a file; --report_to tensorboard writes its event files into a "
                        "folder: give a folder (created if missing)");
  }

  // ---- 2. derived defaults, as transformers' TrainingArguments.__post_init__ ----
  if (eval_strategy != IntervalStrategy::kNo) do_eval = true;
  if (eval_strategy == IntervalStrategy::kSteps && (!eval_steps || *eval_steps == 0)) {
    if (!(logging_steps > 0)) {
      throw ArgumentError(
          "--eval_strategy steps requires a positive --eval_steps (or --logging_steps, its "
          "default)");
    }
    eval_steps = logging_steps;
  }
  if (load_best_model_at_end && !metric_for_best_model) metric_for_best_model = "loss";
  if (metric_for_best_model && !greater_is_better) {
    const std::string& metric = *metric_for_best_model;
    const bool ends_with_loss =
        metric.size() >= 4 && metric.compare(metric.size() - 4, 4, "loss") == 0;
    greater_is_better = !ends_with_loss;
  }
  if (!run_name) run_name = output_dir;
  // group_by_length is transformers 4's spelling of train_sampling_strategy=group_by_length.
  if (group_by_length && train_sampling_strategy == TrainSamplingStrategy::kRandom)
    train_sampling_strategy = TrainSamplingStrategy::kGroupByLength;
  if (group_by_length && train_sampling_strategy != TrainSamplingStrategy::kGroupByLength) {
    throw ArgumentError("--group_by_length contradicts --train_sampling_strategy " +
                        to_string(train_sampling_strategy) + "; give only one of them");
  }
  group_by_length = train_sampling_strategy == TrainSamplingStrategy::kGroupByLength;
  // Pinned memory needs an accelerator; transformers turns it off for CPU runs too.
  if (on_cpu_requested()) dataloader_pin_memory = false;

  // ---- 3. ranges ----
  if (output_dir.empty()) throw ArgumentError("--output_dir must not be empty");
  if (logging_strategy == IntervalStrategy::kSteps)
    check_steps("logging_steps", logging_steps, "logging_strategy");
  if (eval_strategy == IntervalStrategy::kSteps)
    check_steps("eval_steps", *eval_steps, "eval_strategy");
  if (save_strategy == SaveStrategy::kSteps) check_steps("save_steps", save_steps, "save_strategy");
  if (save_total_limit) {
    check_at_least("save_total_limit", *save_total_limit, 1,
                   "leave it unset to keep every checkpoint");
  }
  check_at_least("profile_steps", profile_steps, 0, "use 0 to profile nothing");
  check_at_least("per_device_train_batch_size", per_device_train_batch_size, 1);
  check_at_least("per_device_eval_batch_size", per_device_eval_batch_size, 1);
  check_at_least("gradient_accumulation_steps", gradient_accumulation_steps, 1);
  if (eval_accumulation_steps) {
    check_at_least("eval_accumulation_steps", *eval_accumulation_steps, 1,
                   "leave it unset to gather predictions at the end");
  }
  check_non_negative("learning_rate", learning_rate);
  check_non_negative("weight_decay", weight_decay);
  check_unit_interval("adam_beta1", adam_beta1);
  check_unit_interval("adam_beta2", adam_beta2);
  check_non_negative("adam_epsilon", adam_epsilon);
  check_non_negative("max_grad_norm", max_grad_norm, "use 0 to disable clipping");
  check_non_negative("num_train_epochs", num_train_epochs);
  if (max_steps == 0 || max_steps < -1) {
    throw ArgumentError("--max_steps must be -1 (train for num_train_epochs) or > 0 (got " +
                        std::to_string(max_steps) + ")");
  }
  check_non_negative("warmup_steps", warmup_steps);
  if (neftune_noise_alpha) check_non_negative("neftune_noise_alpha", *neftune_noise_alpha);
  if (warmup_steps >= 1 && warmup_steps != std::floor(warmup_steps))
    throw ArgumentError("--warmup_steps must be a whole number of steps when >= 1 (got " +
                        num(warmup_steps) + "); values below 1 are ratios of the total steps");
  // transformers 5: the new name wins; the alias counts only when it is not given.
  if (activation_checkpointing) {
    gradient_checkpointing = *activation_checkpointing;
    activation_checkpointing.reset();
  }
  check_unit_interval("warmup_ratio", warmup_ratio, /*closed=*/true);
  check_at_least("dataloader_num_workers", dataloader_num_workers, 0);
  if (dataloader_prefetch_factor) {
    check_at_least("dataloader_prefetch_factor", *dataloader_prefetch_factor, 1);
    if (dataloader_num_workers == 0) {
      throw ArgumentError(
          "--dataloader_prefetch_factor only applies when batches are built by workers; set "
          "--dataloader_num_workers > 0 or leave it unset");
    }
  }
  check_unit_interval("label_smoothing_factor", label_smoothing_factor);
  check_at_least("local_rank", local_rank, -1, "-1 means not distributed");
  check_at_least("ddp_timeout", ddp_timeout, 1, "it is in seconds");
  if (ddp_bucket_cap_mb) check_at_least("ddp_bucket_cap_mb", *ddp_bucket_cap_mb, 1);

  // ---- 4. contradictions ----
  if (fp16 && bf16) {
    throw ArgumentError("--fp16 and --bf16 cannot both be set; choose one mixed precision");
  }
  if (fp16_full_eval && bf16_full_eval) {
    throw ArgumentError(
        "--fp16_full_eval and --bf16_full_eval cannot both be set; choose one evaluation dtype");
  }
  if (save_strategy == SaveStrategy::kBest && !metric_for_best_model) {
    throw ArgumentError(
        "--save_strategy best needs --metric_for_best_model (for example "
        "--metric_for_best_model loss) to know which checkpoint is best");
  }
  if (load_best_model_at_end && save_strategy != SaveStrategy::kBest) {
    if (as_interval(save_strategy) != eval_strategy) {
      throw ArgumentError(
          "--load_best_model_at_end requires --save_strategy to match "
          "--eval_strategy (got eval_strategy " +
          to_string(eval_strategy) + ", save_strategy " + to_string(save_strategy) +
          "); set both to steps or epoch, or use --save_strategy best");
    }
    if (eval_strategy == IntervalStrategy::kSteps && std::fmod(save_steps, *eval_steps) != 0) {
      const double eval = *eval_steps;
      if (eval < 1 || save_steps < 1) {
        if (!(eval < 1 && save_steps < 1)) {
          throw ArgumentError(
              "--load_best_model_at_end requires --save_steps to be a multiple of "
              "--eval_steps, which cannot be guaranteed when mixing a ratio and "
              "a number of steps (save_steps " +
              num(save_steps) + ", eval_steps " + num(eval) + ")");
        }
        // Both are ratios: compare in millionths, as transformers does, to avoid float noise.
        const auto save_millionths = std::llround(save_steps * 1e6);
        const auto eval_millionths = std::llround(eval * 1e6);
        if (eval_millionths == 0 || save_millionths % eval_millionths != 0) {
          throw ArgumentError("--load_best_model_at_end requires --save_steps (" + num(save_steps) +
                              ") to be a multiple of --eval_steps (" + num(eval) + ")");
        }
      } else {
        throw ArgumentError("--load_best_model_at_end requires --save_steps (" + num(save_steps) +
                            ") to be a round multiple of --eval_steps (" + num(eval) + ")");
      }
    }
  }

  // ---- 5. sharding: --fsdp / --fsdp_config / --deepspeed read and checked now, once, so that a
  // bad file fails before any training (args/sharding_files.h) ----
  sharding_files = read_sharding_files(*this);

  // ---- 6. features that have not landed yet ----
  // One line per feature, after the checks above so that a bad value still gets its specific
  // message. Delete a line when its feature lands.
  // Values of a closed set that transformers knows and ctrainer lacks (ChoiceTable::kLater) are
  // never stored: ArgumentParser refuses them once validate() has passed, in the same order.
  if (half_precision_backend == HalfPrecisionBackend::kApex) {
    throw NotSupportedYet("half_precision_backend apex",
                          "NVIDIA apex is a Python extension; auto uses native autocast");
  }
  for (const std::string& target : report_to) {
    if (contains(kIntegrationsLater, target)) {
      throw NotSupportedYet("report_to " + target,
                            "ctrainer reports to " + join(kIntegrations) + "; use those or none");
    }
  }
}

nlohmann::json to_json(const TrainingArguments& args) {
  nlohmann::json out = nlohmann::json::object();
  for (const OptionSpec& spec : training_args_options()) out[spec.name] = spec.get_json(args);
  // Both names carry the one setting, as transformers 5 mirrors them after __post_init__.
  out["activation_checkpointing"] =
      args.activation_checkpointing.value_or(args.gradient_checkpointing);
  return out;
}

}  // namespace ctrainer
