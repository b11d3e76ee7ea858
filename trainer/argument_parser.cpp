#include <ctrainer/trainer/argument_parser.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>

#include <ctrainer/trainer/errors.h>

namespace ctrainer {
namespace {

namespace po = boost::program_options;
using nlohmann::json;

constexpr size_t kHelpWidth = 100;
constexpr size_t kHelpIndent = 6;

std::string to_lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// Hugging Face's string_to_bool: yes/true/t/y/1 and no/false/f/n/0, case-insensitive.
std::optional<bool> parse_bool_literal(const std::string& text) {
  const std::string s = to_lower(text);
  if (s == "yes" || s == "true" || s == "t" || s == "y" || s == "1") return true;
  if (s == "no" || s == "false" || s == "f" || s == "n" || s == "0") return false;
  return std::nullopt;
}

/// Python's spelling of "no value": HF scripts pass it for optional arguments.
bool is_none_literal(const std::string& s) {
  return s == "None" || s == "none";
}

ArgumentError json_type_error(const std::string& expected, const json& value) {
  return ArgumentError("expected " + expected + ", got " + value.dump() + " (" + value.type_name() +
                       ")");
}

// ---- one codec per C++ value type: parse a command-line token or JSON value, encode to JSON ----

template <typename T>
struct Codec;

template <>
struct Codec<bool> {
  static constexpr OptionKind kKind = OptionKind::kBool;
  static bool from_tokens(const std::vector<std::string>& tokens) {
    const std::optional<bool> value = parse_bool_literal(tokens.at(0));
    if (!value) {
      throw ArgumentError("expected a boolean (true/false, yes/no, 1/0), got '" + tokens[0] + "'");
    }
    return *value;
  }
  static bool from_json(const json& j) {
    if (!j.is_boolean()) throw json_type_error("a boolean (true or false)", j);
    return j.get<bool>();
  }
  static json encode(bool v) { return v; }
};

template <>
struct Codec<int64_t> {
  static constexpr OptionKind kKind = OptionKind::kInt64;
  static int64_t from_tokens(const std::vector<std::string>& tokens) {
    const std::string& text = tokens.at(0);
    // Python's int() accepts a leading '+'; std::from_chars does not.
    const size_t skip = (text.size() > 1 && text[0] == '+') ? 1 : 0;
    int64_t value = 0;
    const char* end = text.data() + text.size();
    const auto [ptr, ec] = std::from_chars(text.data() + skip, end, value);
    if (ec == std::errc::result_out_of_range) {
      throw ArgumentError("integer out of range: '" + text + "'");
    }
    if (ec != std::errc() || ptr != end || text.empty()) {
      throw ArgumentError("expected an integer, got '" + text + "'");
    }
    return value;
  }
  static int64_t from_json(const json& j) {
    if (j.is_number_unsigned()) {
      if (j.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        throw ArgumentError("integer out of range: " + j.dump());
      }
      return static_cast<int64_t>(j.get<uint64_t>());
    }
    if (j.is_number_integer()) return j.get<int64_t>();
    // 3.0 is an integer to Python and to JSON writers that print every number as a double.
    if (j.is_number_float()) {
      const double d = j.get<double>();
      if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.0e18) {
        return static_cast<int64_t>(d);
      }
    }
    throw json_type_error("an integer", j);
  }
  static json encode(int64_t v) { return v; }
};

template <>
struct Codec<double> {
  static constexpr OptionKind kKind = OptionKind::kDouble;
  static double from_tokens(const std::vector<std::string>& tokens) {
    const std::string& text = tokens.at(0);
    const size_t skip = (text.size() > 1 && text[0] == '+') ? 1 : 0;
    double value = 0;
    const char* end = text.data() + text.size();
    const auto [ptr, ec] = std::from_chars(text.data() + skip, end, value);
    if (ec != std::errc() || ptr != end || text.empty()) {
      throw ArgumentError("expected a number, got '" + text + "'");
    }
    if (!std::isfinite(value)) throw ArgumentError("expected a finite number, got '" + text + "'");
    return value;
  }
  static double from_json(const json& j) {
    if (!j.is_number()) throw json_type_error("a number", j);
    return j.get<double>();
  }
  static json encode(double v) { return v; }
};

template <>
struct Codec<std::string> {
  static constexpr OptionKind kKind = OptionKind::kString;
  static std::string from_tokens(const std::vector<std::string>& tokens) { return tokens.at(0); }
  static std::string from_json(const json& j) {
    if (!j.is_string()) throw json_type_error("a string", j);
    return j.get<std::string>();
  }
  static json encode(const std::string& v) { return v; }
};

template <>
struct Codec<std::vector<std::string>> {
  static constexpr OptionKind kKind = OptionKind::kStringList;
  static std::vector<std::string> from_tokens(const std::vector<std::string>& tokens) {
    return tokens;
  }
  static std::vector<std::string> from_json(const json& j) {
    // HF configs often hold a single string ("report_to": "none").
    if (j.is_string()) return {j.get<std::string>()};
    if (!j.is_array()) throw json_type_error("a list of strings", j);
    std::vector<std::string> out;
    for (const json& item : j) {
      if (!item.is_string()) throw json_type_error("a list of strings", j);
      out.push_back(item.get<std::string>());
    }
    return out;
  }
  static json encode(const std::vector<std::string>& v) { return v; }
};

template <typename T>
struct Unwrap {
  using Value = T;
  static constexpr bool kOptional = false;
};
template <typename T>
struct Unwrap<std::optional<T>> {
  using Value = T;
  static constexpr bool kOptional = true;
};

/// Reaches a TrainingArguments member.
template <typename Field>
struct MemberAccess {
  Field TrainingArguments::*member;
  Field& operator()(TrainingArguments& a) const { return a.*member; }
  const Field& operator()(const TrainingArguments& a) const { return a.*member; }
};

/// Reaches an application variable (the TrainingArguments argument is ignored).
template <typename Field>
struct PointerAccess {
  Field* target;
  Field& operator()(TrainingArguments&) const { return *target; }
  const Field& operator()(const TrainingArguments&) const { return *target; }
};

/// Builds the setters and the getter of a flag from an accessor; Field is T or std::optional<T>.
template <typename Field, typename Access>
OptionSpec make_spec(std::string name, std::string help, Access access) {
  using U = Unwrap<Field>;
  using C = Codec<typename U::Value>;
  OptionSpec spec;
  spec.name = std::move(name);
  spec.help = std::move(help);
  spec.kind = C::kKind;
  spec.optional = U::kOptional;
  spec.set_from_tokens = [access](TrainingArguments& a, const std::vector<std::string>& tokens) {
    if constexpr (U::kOptional) {
      if (tokens.size() == 1 && is_none_literal(tokens[0])) {
        access(a).reset();
        return;
      }
    }
    access(a) = C::from_tokens(tokens);
  };
  spec.set_from_json = [access](TrainingArguments& a, const json& j) {
    if constexpr (U::kOptional) {
      if (j.is_null()) {
        access(a).reset();
        return;
      }
    }
    access(a) = C::from_json(j);
  };
  spec.get_json = [access](const TrainingArguments& a) -> json {
    const Field& value = access(a);
    if constexpr (U::kOptional) {
      if (!value) return nullptr;
      return C::encode(*value);
    } else {
      return C::encode(value);
    }
  };
  return spec;
}

/// How --help shows a value.
std::string display(const json& value) {
  if (value.is_null()) return "None";
  if (value.is_string()) return value.get<std::string>();
  if (value.is_array()) {
    std::string out;
    for (const json& item : value) {
      if (!out.empty()) out += ' ';
      out += item.is_string() ? item.get<std::string>() : item.dump();
    }
    return out.empty() ? "[]" : out;
  }
  return value.dump();
}

// ---- the TrainingArguments registry ------------------------------------------------------------

class TableBuilder {
 public:
  void group(std::string name) { group_ = std::move(name); }

  template <typename Field>
  OptionSpec& add(Field TrainingArguments::*member, std::string name, std::string help) {
    specs_.push_back(
        make_spec<Field>(std::move(name), std::move(help), MemberAccess<Field>{member}));
    specs_.back().group = group_;
    return specs_.back();
  }

  template <typename Field>
  OptionSpec& add_enum(Field TrainingArguments::*member, std::string name, std::string help,
                       std::vector<std::string> choices) {
    OptionSpec& spec = add(member, std::move(name), std::move(help));
    spec.kind = OptionKind::kEnum;
    spec.choices = std::move(choices);
    return spec;
  }

  std::vector<OptionSpec> finish() {
    const TrainingArguments defaults;
    for (OptionSpec& spec : specs_) spec.default_text = display(spec.get_json(defaults));
    return std::move(specs_);
  }

 private:
  std::string group_;
  std::vector<OptionSpec> specs_;
};

std::vector<OptionSpec> build_training_args_options() {
  using TA = TrainingArguments;
  const std::vector<std::string> intervals = {"no", "steps", "epoch"};
  const std::vector<std::string> log_levels = {"passive", "debug", "info",
                                               "warning", "error", "critical"};
  TableBuilder t;

  t.group("output");
  t.add(&TA::output_dir, "output_dir",
        "Directory for logs, training_args.json and (later) checkpoints.");
  t.add(&TA::overwrite_output_dir, "overwrite_output_dir",
        "Allow writing into an output_dir that already holds files.");
  t.add(&TA::do_train, "do_train", "Run training (read by scripts, not by the Trainer).");
  t.add(&TA::do_eval, "do_eval",
        "Run evaluation on the validation set (set automatically when eval_strategy is not no).");
  t.add(&TA::do_predict, "do_predict", "Run predictions on the test set (read by scripts).");
  t.add(&TA::run_name, "run_name", "Name of the run in logs. Defaults to output_dir.");

  t.group("evaluation, logging and saving strategies");
  t.add_enum(&TA::eval_strategy, "eval_strategy",
             "When to evaluate: no, steps (every eval_steps) or epoch (end of each epoch).",
             intervals)
      .aliases = {"evaluation_strategy"};
  t.add(&TA::eval_steps, "eval_steps",
        "Evaluate every N optimizer steps with eval_strategy=steps; a value below 1 is a ratio of "
        "the total training steps. Defaults to logging_steps.");
  t.add_enum(&TA::logging_strategy, "logging_strategy",
             "When to log: no, steps (every logging_steps) or epoch.", intervals);
  t.add(&TA::logging_steps, "logging_steps",
        "Log every N optimizer steps with logging_strategy=steps; a value below 1 is a ratio of "
        "the total training steps.");
  t.add(&TA::logging_first_step, "logging_first_step", "Also log after the first optimizer step.");
  t.add_enum(&TA::save_strategy, "save_strategy",
             "When to save checkpoints: no, steps, epoch or best. ctrainer defaults to no (HF: "
             "steps) until checkpointing lands.",
             {"no", "steps", "epoch", "best"});
  t.add(&TA::save_steps, "save_steps",
        "Save every N optimizer steps with save_strategy=steps; a value below 1 is a ratio of the "
        "total training steps.");
  t.add(&TA::save_total_limit, "save_total_limit",
        "Keep at most this many checkpoints, deleting the oldest (unset: keep all).");
  t.add(&TA::save_only_model, "save_only_model",
        "Save only the model in checkpoints, not the optimizer, scheduler and RNG states.");

  t.group("batch sizes");
  t.add(&TA::per_device_train_batch_size, "per_device_train_batch_size",
        "Training batch size per device (process).");
  t.add(&TA::per_device_eval_batch_size, "per_device_eval_batch_size",
        "Evaluation batch size per device (process).");
  t.add(&TA::gradient_accumulation_steps, "gradient_accumulation_steps",
        "Number of batches whose gradients are accumulated before each optimizer step.");
  t.add(&TA::eval_accumulation_steps, "eval_accumulation_steps",
        "Move accumulated predictions to the host every N evaluation steps (unset: at the end).");

  t.group("optimizer");
  t.add(&TA::learning_rate, "learning_rate", "Peak learning rate of the optimizer.");
  t.add(&TA::weight_decay, "weight_decay",
        "Decoupled weight decay, applied to all parameters except biases and LayerNorm weights.");
  t.add(&TA::adam_beta1, "adam_beta1", "beta1 of Adam/AdamW.");
  t.add(&TA::adam_beta2, "adam_beta2", "beta2 of Adam/AdamW.");
  t.add(&TA::adam_epsilon, "adam_epsilon", "epsilon of Adam/AdamW.");
  t.add(&TA::max_grad_norm, "max_grad_norm",
        "Clip the global L2 norm of the gradients to this value (0 disables clipping).");
  t.add_enum(&TA::optim, "optim", "Optimizer: adamw_torch (= adamw_hf) or sgd.",
             {"adamw_torch", "adamw_hf", "sgd"});

  t.group("schedule");
  t.add(&TA::num_train_epochs, "num_train_epochs",
        "Number of training epochs; a fractional value trains part of the last epoch.");
  t.add(&TA::max_steps, "max_steps",
        "If > 0, the total number of optimizer steps; overrides num_train_epochs. -1: unset.");
  t.add_enum(&TA::lr_scheduler_type, "lr_scheduler_type", "Learning-rate schedule.",
             {"linear", "cosine", "cosine_with_restarts", "polynomial", "constant",
              "constant_with_warmup", "inverse_sqrt"});
  t.add(&TA::warmup_steps, "warmup_steps",
        "Linear warm-up over this many optimizer steps (overrides warmup_ratio when > 0).");
  t.add(&TA::warmup_ratio, "warmup_ratio",
        "Fraction of the total optimizer steps used for linear warm-up, in [0, 1].");

  t.group("reproducibility");
  t.add(&TA::seed, "seed", "Random seed set at the beginning of training.");
  t.add(&TA::data_seed, "data_seed", "Seed of the data samplers. Defaults to seed.");
  t.add(&TA::full_determinism, "full_determinism",
        "Use deterministic algorithms everywhere (slower; for debugging).");

  t.group("logging");
  t.add_enum(&TA::log_level, "log_level",
             "Log level of the main process; passive keeps the application's level.", log_levels);
  t.add_enum(&TA::log_level_replica, "log_level_replica", "Log level of the other processes.",
             log_levels);
  t.add(&TA::log_on_each_node, "log_on_each_node",
        "In multi-node training, log from the main process of each node, not only of node 0.");
  t.add(&TA::disable_tqdm, "disable_tqdm", "Disable the progress bars.");
  t.add(&TA::report_to, "report_to",
        "Integrations to report results and logs to: none or all (no external integration is "
        "available yet).");

  t.group("data loading");
  t.add(&TA::dataloader_num_workers, "dataloader_num_workers",
        "Number of worker processes for data loading (0: load in the main process).");
  t.add(&TA::dataloader_drop_last, "dataloader_drop_last",
        "Drop the last incomplete batch of each epoch.");
  t.add(&TA::dataloader_pin_memory, "dataloader_pin_memory",
        "Pin host memory of batches (set to false by use_cpu).");
  t.add(&TA::label_names, "label_names", "Batch keys that hold the labels. Defaults to labels.");
  t.add(&TA::group_by_length, "group_by_length",
        "Group training examples of similar length into batches to reduce padding.");

  t.group("best model and resuming");
  t.add(&TA::load_best_model_at_end, "load_best_model_at_end",
        "Load the best checkpoint (by metric_for_best_model) at the end of training. Requires "
        "save_strategy to match eval_strategy.");
  t.add(&TA::metric_for_best_model, "metric_for_best_model",
        "Metric that compares checkpoints. Defaults to loss with load_best_model_at_end.");
  t.add(&TA::greater_is_better, "greater_is_better",
        "Whether a higher metric_for_best_model is better. Defaults to false when the metric "
        "ends with loss, true otherwise.");
  t.add(&TA::resume_from_checkpoint, "resume_from_checkpoint",
        "Path of a checkpoint folder to resume training from.");
  t.add(&TA::ignore_data_skip, "ignore_data_skip",
        "When resuming, do not skip the batches already seen in the interrupted epoch.");

  t.group("device and precision");
  t.add(&TA::use_cpu, "use_cpu", "Train on the CPU even when an accelerator is available.")
      .aliases = {"no_cuda"};
  t.add(&TA::fp16, "fp16", "float16 mixed-precision training.");
  t.add(&TA::bf16, "bf16", "bfloat16 mixed-precision training.");
  t.add(&TA::label_smoothing_factor, "label_smoothing_factor",
        "Label smoothing epsilon in [0, 1) for the cross-entropy loss (0: none).");
  t.add(&TA::gradient_checkpointing, "gradient_checkpointing",
        "Recompute activations in the backward pass to save memory.");

  t.group("distributed");
  t.add(&TA::local_rank, "local_rank",
        "Rank of the process on its node, as passed by launchers (-1: not distributed).");
  t.add_enum(&TA::ddp_backend, "ddp_backend", "Distributed backend: gloo or nccl.",
             {"gloo", "nccl"});
  t.add(&TA::ddp_timeout, "ddp_timeout", "Timeout of the process-group operations, in seconds.");
  t.add(&TA::ddp_find_unused_parameters, "ddp_find_unused_parameters",
        "find_unused_parameters of DistributedDataParallel.");
  t.add(&TA::ddp_bucket_cap_mb, "ddp_bucket_cap_mb",
        "Gradient bucket size of DistributedDataParallel, in MiB.");
  t.add(&TA::fsdp, "fsdp",
        "Fully sharded data parallel options, space separated (full_shard, shard_grad_op, "
        "hybrid_shard, hybrid_shard_zero2, offload, auto_wrap, no_shard).");
  t.add(&TA::fsdp_config, "fsdp_config", "Path of an FSDP JSON config file.");
  t.add(&TA::deepspeed, "deepspeed", "Path of a DeepSpeed JSON config file.");

  return t.finish();
}

// ---- suggestions -------------------------------------------------------------------------------

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

/// The candidate closest to `name`, if close enough to be a plausible typo or abbreviation.
std::optional<std::string> closest(const std::string& name,
                                   const std::vector<std::string>& candidates) {
  std::optional<std::string> best;
  size_t best_distance = std::max<size_t>(2, name.size() / 3) + 1;
  for (const std::string& candidate : candidates) {
    const size_t d = edit_distance(name, candidate);
    if (d < best_distance) {
      best_distance = d;
      best = candidate;
    }
  }
  if (best) return best;
  // Prefix guessing is disabled, so an abbreviation gets the full name as a hint instead.
  if (name.size() >= 3) {
    for (const std::string& candidate : candidates) {
      if (candidate.rfind(name, 0) == 0) return candidate;
    }
  }
  return std::nullopt;
}

// ---- --help layout -----------------------------------------------------------------------------

void append_wrapped(std::string& out, const std::string& text, size_t indent = kHelpIndent) {
  std::istringstream words(text);
  std::string word;
  std::string line(indent, ' ');
  bool line_empty = true;
  while (words >> word) {
    if (!line_empty && line.size() + 1 + word.size() > kHelpWidth) {
      out += line + '\n';
      line.assign(indent, ' ');
      line_empty = true;
    }
    if (!line_empty) line += ' ';
    line += word;
    line_empty = false;
  }
  if (!line_empty) out += line + '\n';
}

std::string value_placeholder(const OptionSpec& spec) {
  switch (spec.kind) {
    case OptionKind::kBool:
      return "[BOOL]";
    case OptionKind::kInt64:
      return "INT";
    case OptionKind::kDouble:
      return "FLOAT";
    case OptionKind::kString:
      return "STR";
    case OptionKind::kEnum: {
      std::string out = "{";
      for (size_t i = 0; i < spec.choices.size(); ++i) out += (i ? "," : "") + spec.choices[i];
      return out + "}";
    }
    case OptionKind::kStringList:
      return "STR [STR ...]";
  }
  return "VALUE";
}

void append_option_help(std::string& out, const OptionSpec& spec) {
  std::string text = spec.help;
  const std::string default_part = "  (default: " + spec.default_text + ")";
  std::string header = "  --" + spec.name + " " + value_placeholder(spec);
  if (spec.kind == OptionKind::kEnum && header.size() + default_part.size() > kHelpWidth) {
    // Too many choices for one line: list them in the wrapped text instead.
    header = "  --" + spec.name + " CHOICE";
    std::string listed;
    for (const std::string& choice : spec.choices) listed += (listed.empty() ? "" : ", ") + choice;
    text += " Choices: " + listed + ".";
  }
  if (header.size() + default_part.size() <= kHelpWidth) {
    header += default_part;
  } else {
    text += " Default: " + spec.default_text + ".";
  }
  out += header + "\n";
  for (const std::string& alias : spec.aliases) text += " Alias: --" + alias + ".";
  if (spec.kind == OptionKind::kBool && !spec.optional && spec.default_text == "true") {
    text += " Disable with --no_" + spec.name + ".";
  }
  if (spec.optional) text += " Pass None to unset.";
  append_wrapped(out, text);
}

bool is_valid_option_name(const std::string& name) {
  if (name.empty()) return false;
  return std::all_of(name.begin(), name.end(), [](unsigned char c) {
    return std::islower(c) || std::isdigit(c) || c == '_';
  });
}

/// Flags the parser itself handles.
const std::vector<std::string> kReservedNames = {"config", "help"};

}  // namespace

const std::vector<OptionSpec>& training_args_options() {
  static const std::vector<OptionSpec> options = build_training_args_options();
  return options;
}

const OptionSpec* find_training_args_option(const std::string& name) {
  for (const OptionSpec& spec : training_args_options()) {
    if (spec.name == name) return &spec;
  }
  return nullptr;
}

// ---- ArgumentParser ----------------------------------------------------------------------------

ArgumentParser::ArgumentParser(std::string program_description)
    : description_(std::move(program_description)) {}

void ArgumentParser::add_app_option(OptionSpec spec) {
  if (!is_valid_option_name(spec.name)) {
    throw std::invalid_argument("ArgumentParser::add_option: invalid flag name '" + spec.name +
                                "' (use lower-case letters, digits and _)");
  }
  const bool reserved =
      std::find(kReservedNames.begin(), kReservedNames.end(), spec.name) != kReservedNames.end();
  if (reserved || find(spec.name) != nullptr) {
    throw std::invalid_argument("ArgumentParser::add_option: flag --" + spec.name +
                                " already exists");
  }
  spec.group = "application";
  spec.default_text = display(spec.get_json(TrainingArguments{}));
  app_options_.push_back(std::move(spec));
}

void ArgumentParser::add_option(const std::string& name, int64_t* target, const std::string& help) {
  add_app_option(make_spec<int64_t>(name, help, PointerAccess<int64_t>{target}));
}
void ArgumentParser::add_option(const std::string& name, double* target, const std::string& help) {
  add_app_option(make_spec<double>(name, help, PointerAccess<double>{target}));
}
void ArgumentParser::add_option(const std::string& name, std::string* target,
                                const std::string& help) {
  add_app_option(make_spec<std::string>(name, help, PointerAccess<std::string>{target}));
}
void ArgumentParser::add_option(const std::string& name, bool* target, const std::string& help) {
  add_app_option(make_spec<bool>(name, help, PointerAccess<bool>{target}));
}
void ArgumentParser::add_option(const std::string& name, std::vector<std::string>* target,
                                const std::string& help) {
  add_app_option(make_spec<std::vector<std::string>>(
      name, help, PointerAccess<std::vector<std::string>>{target}));
}

/// Looks up a flag by canonical name or alias.
const OptionSpec* ArgumentParser::find(const std::string& name) const {
  for (const OptionSpec& spec : training_args_options()) {
    if (spec.name == name) return &spec;
    if (std::find(spec.aliases.begin(), spec.aliases.end(), name) != spec.aliases.end()) {
      return &spec;
    }
  }
  for (const OptionSpec& spec : app_options_) {
    if (spec.name == name) return &spec;
  }
  return nullptr;
}

namespace {

std::vector<std::string> all_flag_names(const std::vector<OptionSpec>& app_options) {
  std::vector<std::string> names = kReservedNames;
  for (const auto* list : {&training_args_options(), &app_options}) {
    for (const OptionSpec& spec : *list) {
      names.push_back(spec.name);
      names.insert(names.end(), spec.aliases.begin(), spec.aliases.end());
    }
  }
  return names;
}

std::string unknown_flag_message(const std::string& flag, const std::vector<OptionSpec>& app) {
  std::string message = "unknown flag " + flag;
  std::string bare = flag.substr(
      flag.find_first_not_of('-') == std::string::npos ? flag.size() : flag.find_first_not_of('-'));
  if (const auto hint = closest(bare, all_flag_names(app))) {
    message += "; did you mean --" + *hint + "?";
  } else {
    message += " (run with --help to list the flags)";
  }
  return message;
}

}  // namespace

void ArgumentParser::apply_json_file(const std::string& path, TrainingArguments& args) const {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    throw ArgumentError("cannot read config file '" + path + "': no such file");
  }
  std::ifstream in(path);
  if (!in) throw ArgumentError("cannot read config file '" + path + "'");
  json config;
  try {
    config = json::parse(in);
  } catch (const json::exception& e) {
    throw ArgumentError("config file '" + path + "' is not valid JSON: " + e.what());
  }
  if (!config.is_object()) {
    throw ArgumentError("config file '" + path +
                        "' must hold a JSON object mapping flag names to values, not a " +
                        config.type_name());
  }
  std::map<std::string, std::string> seen;  // canonical name -> key that set it
  for (const auto& [key, value] : config.items()) {
    const OptionSpec* spec = find(key);
    if (spec == nullptr) {
      std::string message = "config file '" + path + "': unknown key \"" + key + "\"";
      if (const auto hint = closest(key, all_flag_names(app_options_))) {
        message += "; did you mean \"" + *hint + "\"?";
      }
      throw ArgumentError(message);
    }
    if (const auto it = seen.find(spec->name); it != seen.end()) {
      throw ArgumentError("config file '" + path + "': keys \"" + it->second + "\" and \"" + key +
                          "\" both set " + spec->name + "; keep one");
    }
    seen.emplace(spec->name, key);
    try {
      spec->set_from_json(args, value);
    } catch (const ArgumentError& e) {
      throw ArgumentError("config file '" + path + "', key \"" + key + "\": " + e.what());
    }
  }
}

bool ArgumentParser::parse(int argc, const char* const argv[], TrainingArguments& args) {
  if (argc > 0 && argv != nullptr && argv[0] != nullptr) {
    program_ = std::filesystem::path(argv[0]).filename().string();
  }
  const std::vector<std::string> raw =
      argc > 1 ? std::vector<std::string>(argv + 1, argv + argc) : std::vector<std::string>{};

  // --help wins over everything else, as with argparse.
  for (const std::string& token : raw) {
    if (token == "--") break;
    if (token == "-h" || token == "--help") {
      std::cout << help() << std::flush;
      return false;
    }
  }

  // Normalise to a form Boost parses unambiguously: canonical names (aliases, `--foo-bar`,
  // `--no_foo`) and every bool flag as `--flag=value`. Boost's implicit values never take a
  // separate token, and an optional-value flag would swallow a following positional .json.
  std::vector<std::string> tokens;
  for (size_t i = 0; i < raw.size(); ++i) {
    const std::string& token = raw[i];
    if (token == "--") {
      tokens.insert(tokens.end(), raw.begin() + static_cast<std::ptrdiff_t>(i), raw.end());
      break;
    }
    if (token.size() <= 2 || token.rfind("--", 0) != 0) {
      tokens.push_back(token);
      continue;
    }
    const size_t eq = token.find('=');
    std::string name = token.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    const std::optional<std::string> value =
        eq == std::string::npos ? std::nullopt : std::optional<std::string>(token.substr(eq + 1));
    std::replace(name.begin(), name.end(), '-', '_');  // HF accepts --local-rank for local_rank

    if (name == "config") {
      tokens.push_back(value ? "--config=" + *value : "--config");
      continue;
    }
    const OptionSpec* spec = find(name);
    bool negated = false;
    if (spec == nullptr && name.rfind("no_", 0) == 0) {
      // HfArgumentParser's complement flag for bools that default to true.
      const OptionSpec* positive = find(name.substr(3));
      if (positive != nullptr && positive->kind == OptionKind::kBool && !positive->optional &&
          positive->default_text == "true") {
        spec = positive;
        negated = true;
      }
    }
    if (spec == nullptr) throw ArgumentError(unknown_flag_message("--" + name, app_options_));

    if (negated) {
      if (value) {
        throw ArgumentError("--" + name + " takes no value; use --" + spec->name +
                            " true|false instead");
      }
      tokens.push_back("--" + spec->name + "=false");
    } else if (spec->kind == OptionKind::kBool) {
      std::string bool_value = "true";
      if (value) {
        bool_value = *value;
      } else if (i + 1 < raw.size() && (parse_bool_literal(raw[i + 1]) ||
                                        (spec->optional && is_none_literal(raw[i + 1])))) {
        bool_value = raw[++i];
      }
      tokens.push_back("--" + spec->name + "=" + bool_value);
    } else if (value && value->empty()) {
      // Boost refuses `--flag=` with nothing after '=', but takes an empty separate token.
      tokens.push_back("--" + spec->name);
      tokens.push_back("");
    } else {
      tokens.push_back("--" + spec->name + (value ? "=" + *value : ""));
    }
  }

  po::options_description description;
  description.add_options()("config", po::value<std::string>(), "JSON config file");
  const std::vector<OptionSpec>& app_options = app_options_;
  for (const auto* list : {&training_args_options(), &app_options}) {
    for (const OptionSpec& spec : *list) {
      if (spec.kind == OptionKind::kStringList) {
        description.add_options()(spec.name.c_str(),
                                  po::value<std::vector<std::string>>()->multitoken());
      } else {
        description.add_options()(spec.name.c_str(), po::value<std::string>());
      }
    }
  }
  const int style = po::command_line_style::default_style & ~po::command_line_style::allow_guessing;

  po::parsed_options parsed(&description);
  try {
    parsed = po::command_line_parser(tokens).options(description).style(style).run();
  } catch (const po::unknown_option& e) {
    throw ArgumentError(unknown_flag_message(e.get_option_name(), app_options_));
  } catch (const po::error& e) {
    throw ArgumentError(e.what());
  }

  // Boost keeps every occurrence in command-line order; applying them in order makes the last
  // occurrence win, as with argparse.
  std::vector<std::string> config_files;
  std::vector<std::pair<const OptionSpec*, std::vector<std::string>>> flags;
  size_t positionals = 0;
  for (const po::option& option : parsed.options) {
    if (option.string_key.empty()) {
      const std::string& token = option.value.at(0);
      if (positionals++ > 0 || !ends_with(token, ".json")) {
        throw ArgumentError("unexpected argument '" + token +
                            "': flags start with --, and the only positional argument allowed "
                            "is one .json config file");
      }
      config_files.push_back(token);
    } else if (option.string_key == "config") {
      config_files.push_back(option.value.at(0));
    } else {
      flags.emplace_back(find(option.string_key), option.value);
    }
  }

  TrainingArguments result = args;
  for (const std::string& path : config_files) apply_json_file(path, result);
  for (const auto& [spec, values] : flags) {
    try {
      spec->set_from_tokens(result, values);
    } catch (const ArgumentError& e) {
      throw ArgumentError("--" + spec->name + ": " + e.what());
    }
  }
  result.validate();
  args = std::move(result);
  return true;
}

std::string ArgumentParser::help() const {
  std::string out;
  if (!description_.empty()) out += description_ + "\n\n";
  out += "usage: " + program_ + " [FILE.json] [--config FILE.json] [--<flag> VALUE ...]\n\n";
  append_wrapped(out,
                 "Flags are Hugging Face TrainingArguments names. A JSON config file maps flag "
                 "names to values; flags on the command line override it. Booleans: --flag, "
                 "--flag true|false. Lists: --flag a b c.",
                 /*indent=*/0);
  out += "\ngeneral:\n";
  out += "  -h, --help\n";
  append_wrapped(out, "Show this help and exit.");
  out += "  --config FILE.json\n";
  append_wrapped(out,
                 "Read flag values from a JSON object (as written to output_dir/"
                 "training_args.json). A single positional FILE.json does the same.");

  std::string group;
  for (const OptionSpec& spec : training_args_options()) {
    if (spec.group != group) {
      group = spec.group;
      out += "\ntraining arguments: " + group + ":\n";
    }
    append_option_help(out, spec);
  }
  if (!app_options_.empty()) {
    out += "\napplication:\n";
    for (const OptionSpec& spec : app_options_) append_option_help(out, spec);
  }
  return out;
}

TrainingArguments parse_args_or_exit(ArgumentParser& parser, int argc, char** argv) {
  TrainingArguments args;
  try {
    if (!parser.parse(argc, argv, args)) {
      std::cout.flush();
      std::exit(0);
    }
  } catch (const ArgumentError& e) {
    std::cerr << "error: " << e.what() << std::endl;
    std::exit(2);
  }
  return args;
}

}  // namespace ctrainer
