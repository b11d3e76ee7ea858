#pragma once
/// \file The closed sets of TrainingArguments (eval_strategy, optim, log_level, ...) as enums.
/// Each enum has one table, ChoiceTable<E>, holding Hugging Face's spelling of every value; the
/// argument parser, --help, training_args.json and log text read it, and the code compares
/// enum values, never strings.
///
///   to_string(SaveStrategy::kBest)                        // "best"
///   parse_choice<SaveStrategy>("epoch", "save_strategy")  // SaveStrategy::kEpoch
///   parse_choice<SaveStrategy>("often", "save_strategy")  // throws ChoiceError:
///       --save_strategy must be one of no, steps, epoch, best (got 'often')
#include <array>
#include <concepts>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <ctrainer/core/errors.h>
#include <ctrainer/core/strings.h>

namespace ctrainer {

/// HF IntervalStrategy: when to evaluate (eval_strategy) or log (logging_strategy).
enum class IntervalStrategy { kNo, kSteps, kEpoch };
/// HF SaveStrategy: when to write a checkpoint (save_strategy).
enum class SaveStrategy { kNo, kSteps, kEpoch, kBest };
/// HF OptimizerNames that ctrainer implements (optim). kAdamWHf trains as kAdamWTorch; it stays
/// a value of its own so that training_args.json keeps what the user wrote. kAdamWTorchFused
/// (HF's default on torch >= 2.8) is the same update in one fused kernel (FusedAdamW).
enum class OptimizerName { kAdamWTorch, kAdamWHf, kSgd, kAdamWTorchFused };
/// HF SchedulerType values that ctrainer implements (lr_scheduler_type).
enum class SchedulerType {
  kLinear,
  kCosine,
  kCosineWithRestarts,
  kPolynomial,
  kConstant,
  kConstantWithWarmup,
  kInverseSqrt,
  kCosineWithMinLr,
  kCosineWarmupWithMinLr,
  kWarmupStableDecay,
};
/// HF's include_num_input_tokens_seen: which input tokens TrainerState::num_input_tokens_seen
/// counts (true and false are spellings of kAll and kNo).
enum class InputTokensSeen { kNo, kAll, kNonPadding };
/// HF's trainer log levels (log_level, log_level_replica); kPassive keeps the library's
/// verbosity.
enum class LogLevel { kPassive, kDebug, kInfo, kWarning, kError, kCritical };
/// Order of the training examples (train_sampling_strategy).
enum class TrainSamplingStrategy { kRandom, kSequential, kGroupByLength };
/// Mixed-precision backend (half_precision_backend). kApex is parsed, then refused by
/// TrainingArguments::validate() as not supported yet.
enum class HalfPrecisionBackend { kAuto, kApex, kCpuAmp };
/// Process-group backend (ddp_backend). The distributed layer takes its name as a string
/// (c10d's spelling, which is HF's); the Trainer converts with to_string().
enum class DdpBackend { kGloo, kNccl };

/// One value of a closed set and its Hugging Face spelling.
template <typename E>
struct Choice {
  E value;
  std::string_view name;
};

/// What a table may leave out: no value that transformers knows and ctrainer lacks.
struct ChoiceTableDefaults {
  /// Values transformers accepts whose feature ctrainer has not built: parse_choice answers
  /// them with NotSupportedYet instead of calling them typos.
  static constexpr std::array<std::string_view, 0> kLater{};
  /// Whether the "must be one of" message also lists kLater (worth it only for a short list).
  static constexpr bool kListLater = false;
  /// NotSupportedYet's hint for a kLater value; empty: "available: <the choices>".
  static constexpr std::string_view kLaterHint{};
};

/// The table of enum E: `kChoices`, every value once, in --help's order, plus the members of
/// ChoiceTableDefaults. Specialised below for each enum; the primary template has no table.
template <typename E>
struct ChoiceTable {};

template <>
struct ChoiceTable<IntervalStrategy> : ChoiceTableDefaults {
  using E = IntervalStrategy;
  static constexpr std::array<Choice<E>, 3> kChoices{{
      {E::kNo, "no"},
      {E::kSteps, "steps"},
      {E::kEpoch, "epoch"},
  }};
};

template <>
struct ChoiceTable<SaveStrategy> : ChoiceTableDefaults {
  using E = SaveStrategy;
  static constexpr std::array<Choice<E>, 4> kChoices{{
      {E::kNo, "no"},
      {E::kSteps, "steps"},
      {E::kEpoch, "epoch"},
      {E::kBest, "best"},
  }};
};

template <>
struct ChoiceTable<OptimizerName> : ChoiceTableDefaults {
  using E = OptimizerName;
  static constexpr std::array<Choice<E>, 4> kChoices{{
      {E::kAdamWTorchFused, "adamw_torch_fused"},
      {E::kAdamWTorch, "adamw_torch"},
      {E::kAdamWHf, "adamw_hf"},
      {E::kSgd, "sgd"},
  }};
  // clang-format off
  static constexpr std::array<std::string_view, 39> kLater{
      "adamw_torch_xla", "adamw_torch_npu_fused", "adamw_apex_fused",
      "adafactor", "adamw_anyprecision", "adamw_torch_4bit", "adamw_torch_8bit", "ademamix",
      "adagrad", "adamw_bnb_8bit", "adamw_8bit", "ademamix_8bit", "lion_8bit", "lion_32bit",
      "paged_adamw_32bit", "paged_adamw_8bit", "paged_ademamix_32bit", "paged_ademamix_8bit",
      "paged_lion_32bit", "paged_lion_8bit", "rmsprop", "rmsprop_bnb", "rmsprop_bnb_8bit",
      "rmsprop_bnb_32bit", "galore_adamw", "galore_adamw_8bit", "galore_adafactor",
      "galore_adamw_layerwise", "galore_adamw_8bit_layerwise", "galore_adafactor_layerwise",
      "lomo", "adalomo", "grokadamw", "schedule_free_radam", "schedule_free_adamw",
      "schedule_free_sgd", "apollo_adamw", "apollo_adamw_layerwise", "stable_adamw"};
  // clang-format on
};

template <>
struct ChoiceTable<SchedulerType> : ChoiceTableDefaults {
  using E = SchedulerType;
  static constexpr std::array<Choice<E>, 10> kChoices{{
      {E::kLinear, "linear"},
      {E::kCosine, "cosine"},
      {E::kCosineWithRestarts, "cosine_with_restarts"},
      {E::kPolynomial, "polynomial"},
      {E::kConstant, "constant"},
      {E::kConstantWithWarmup, "constant_with_warmup"},
      {E::kInverseSqrt, "inverse_sqrt"},
      {E::kCosineWithMinLr, "cosine_with_min_lr"},
      {E::kCosineWarmupWithMinLr, "cosine_warmup_with_min_lr"},
      {E::kWarmupStableDecay, "warmup_stable_decay"},
  }};
  // Schedules driven by evaluation metrics, which the Trainer does not feed to a scheduler.
  static constexpr std::array<std::string_view, 2> kLater{"reduce_lr_on_plateau", "greedy"};
};

template <>
struct ChoiceTable<InputTokensSeen> : ChoiceTableDefaults {
  using E = InputTokensSeen;
  static constexpr std::array<Choice<E>, 3> kChoices{{
      {E::kNo, "no"},
      {E::kAll, "all"},
      {E::kNonPadding, "non_padding"},
  }};
};

template <>
struct ChoiceTable<LogLevel> : ChoiceTableDefaults {
  using E = LogLevel;
  static constexpr std::array<Choice<E>, 6> kChoices{{
      {E::kPassive, "passive"},
      {E::kDebug, "debug"},
      {E::kInfo, "info"},
      {E::kWarning, "warning"},
      {E::kError, "error"},
      {E::kCritical, "critical"},
  }};
  static constexpr std::array<std::string_view, 1> kLater{"detail"};
};

template <>
struct ChoiceTable<TrainSamplingStrategy> : ChoiceTableDefaults {
  using E = TrainSamplingStrategy;
  static constexpr std::array<Choice<E>, 3> kChoices{{
      {E::kRandom, "random"},
      {E::kSequential, "sequential"},
      {E::kGroupByLength, "group_by_length"},
  }};
  static constexpr std::array<std::string_view, 1> kLater{"batch_rebalance"};
};

template <>
struct ChoiceTable<HalfPrecisionBackend> : ChoiceTableDefaults {
  using E = HalfPrecisionBackend;
  static constexpr std::array<Choice<E>, 3> kChoices{{
      {E::kAuto, "auto"},
      {E::kApex, "apex"},
      {E::kCpuAmp, "cpu_amp"},
  }};
};

template <>
struct ChoiceTable<DdpBackend> : ChoiceTableDefaults {
  using E = DdpBackend;
  static constexpr std::array<Choice<E>, 2> kChoices{{
      {E::kGloo, "gloo"},
      {E::kNccl, "nccl"},
  }};
  // transformers 5's other backends: MPI, and those of Intel (xccl), Ascend (hccl), Cambricon
  // (cncl) and Moore Threads (mccl) accelerators.
  static constexpr std::array<std::string_view, 5> kLater{"mpi", "xccl", "hccl", "cncl", "mccl"};
  static constexpr bool kListLater = true;
  static constexpr std::string_view kLaterHint = "use gloo or nccl";
};

/// An enum with a ChoiceTable.
template <typename E>
concept ChoiceEnum = std::is_enum_v<E> && requires {
  ChoiceTable<E>::kChoices;
};

/// A value outside a closed set. what() names the flag and the accepted values, e.g.
/// "--optim must be one of adamw_torch, adamw_hf, sgd (got 'adam')", so the argument parser
/// passes it on without a prefix of its own.
class ChoiceError : public ArgumentError {
 public:
  using ArgumentError::ArgumentError;
};

/// The enum value spelled `name` (exactly, case-sensitive as in HF), or nullopt.
template <ChoiceEnum E>
constexpr std::optional<E> find_choice(std::string_view name) {
  for (const Choice<E>& choice : ChoiceTable<E>::kChoices) {
    if (choice.name == name) return choice.value;
  }
  return std::nullopt;
}

/// Whether `value` is in E's table (false only for a value cast from an integer).
template <ChoiceEnum E>
constexpr bool is_choice(E value) {
  for (const Choice<E>& choice : ChoiceTable<E>::kChoices) {
    if (choice.value == value) return true;
  }
  return false;
}

/// HF's spelling of `value`. Throws std::invalid_argument for a value outside the table (one
/// cast from an integer: a programming error).
template <ChoiceEnum E>
std::string to_string(E value) {
  for (const Choice<E>& choice : ChoiceTable<E>::kChoices) {
    if (choice.value == value) return std::string(choice.name);
  }
  throw std::invalid_argument("to_string: enum value " +
                              std::to_string(static_cast<long long>(value)) +
                              " is not in its ChoiceTable");
}

/// Every accepted spelling of E, in table order (what --help lists).
template <ChoiceEnum E>
std::vector<std::string> choice_names() {
  std::vector<std::string> names;
  for (const Choice<E>& choice : ChoiceTable<E>::kChoices) names.emplace_back(choice.name);
  return names;
}

/// The values an error message offers for E: the choices, then kLater when the table lists it.
template <ChoiceEnum E>
std::string choices_text() {
  std::vector<std::string> names = choice_names<E>();
  if constexpr (ChoiceTable<E>::kListLater) {
    for (std::string_view later : ChoiceTable<E>::kLater) names.emplace_back(later);
  }
  return join(names);
}

/// The enum value spelled `name`, for flag `--<flag>`. Throws NotSupportedYet for a value that
/// transformers accepts and ctrainer has not built (ChoiceTable<E>::kLater), ChoiceError for
/// anything else.
template <ChoiceEnum E>
E parse_choice(std::string_view name, std::string_view flag) {
  if (const std::optional<E> value = find_choice<E>(name)) return *value;
  using Table = ChoiceTable<E>;
  const std::string flag_text(flag);
  const std::string got(name);
  for (std::string_view later : Table::kLater) {
    if (later != name) continue;
    const std::string hint = Table::kLaterHint.empty() ? "available: " + join(choice_names<E>())
                                                       : std::string(Table::kLaterHint);
    throw NotSupportedYet(flag_text + " " + got, hint);
  }
  throw ChoiceError("--" + flag_text + " must be one of " + choices_text<E>() + " (got '" + got +
                    "')");
}

}  // namespace ctrainer
