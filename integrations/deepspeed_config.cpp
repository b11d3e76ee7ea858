#include <ctrainer/integrations/deepspeed_config.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include <ctrainer/core/errors.h>
#include <ctrainer/core/json_config.h>
#include <ctrainer/core/logging.h>
#include <ctrainer/integrations/deepspeed_config_keys.h>

namespace ctrainer {
namespace {
using json = nlohmann::json;

/// Python's repr() of a float: the shortest digits that read back, positional notation for
/// decimal exponents in [-4, 16), else scientific with at least two exponent digits.
std::string python_float(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  char buffer[64];
  const auto result =
      std::to_chars(buffer, buffer + sizeof(buffer), value, std::chars_format::scientific);
  const std::string text(buffer, result.ptr);  // "-d.ddde+XX"
  const size_t e = text.find('e');
  const bool negative = text[0] == '-';
  std::string digits;
  for (size_t i = negative ? 1 : 0; i < e; ++i)
    if (text[i] != '.') digits += text[i];
  const int exponent = std::stoi(text.substr(e + 1));
  const int point = exponent + 1;  // digits before the decimal point
  std::string out = negative ? "-" : "";
  if (exponent >= -4 && exponent < 16) {
    if (point <= 0) {
      out += "0." + std::string(static_cast<size_t>(-point), '0') + digits;
    } else if (static_cast<size_t>(point) >= digits.size()) {
      out += digits + std::string(static_cast<size_t>(point) - digits.size(), '0') + ".0";
    } else {
      out += digits.substr(0, static_cast<size_t>(point)) + "." +
             digits.substr(static_cast<size_t>(point));
    }
    return out;
  }
  out += digits.substr(0, 1);
  if (digits.size() > 1) out += "." + digits.substr(1);
  char exp_text[16];
  std::snprintf(exp_text, sizeof(exp_text), "e%c%02d", exponent < 0 ? '-' : '+',
                std::abs(exponent));
  return out + exp_text;
}

std::string python_repr(const json& value);

std::string python_container(const json& value) {
  std::string out;
  if (value.is_array()) {
    out = "[";
    for (size_t i = 0; i < value.size(); ++i) out += (i ? ", " : "") + python_repr(value[i]);
    return out + "]";
  }
  out = "{";
  bool first = true;
  for (const auto& [key, item] : value.items()) {
    out += (first ? "" : ", ") + python_repr(json(key)) + ": " + python_repr(item);
    first = false;
  }
  return out + "}";
}

std::string python_repr(const json& value) {
  if (value.is_string()) {
    // repr() quotes with ' unless the text holds ' and no ".
    const std::string s = value.get<std::string>();
    const char quote =
        s.find('\'') != std::string::npos && s.find('"') == std::string::npos ? '"' : '\'';
    std::string out(1, quote);
    for (char c : s) {
      if (c == quote || c == '\\') out += '\\';
      out += c;
    }
    return out + quote;
  }
  return python_str(value);
}

/// The node holding the last component of a dotted key, or null when a parent is missing
/// (accelerate's HfDeepSpeedConfig.find_config_node).
json* find_node(json& config, const std::string& dotted, std::string& last) {
  json* node = &config;
  size_t start = 0;
  for (size_t dot; (dot = dotted.find('.', start)) != std::string::npos; start = dot + 1) {
    const std::string part = dotted.substr(start, dot - start);
    if (!node->is_object() || !node->contains(part) || (*node)[part].is_null()) return nullptr;
    node = &(*node)[part];
  }
  last = dotted.substr(start);
  return node->is_object() ? node : nullptr;
}

const json* get_value(const json& config, const std::string& dotted) {
  std::string last;
  const json* node = find_node(const_cast<json&>(config), dotted, last);
  if (!node || !node->contains(last)) return nullptr;
  return &(*node)[last];
}

/// accelerate's is_true: set and truthy.
bool is_true(const json& config, const std::string& dotted) {
  const json* value = get_value(config, dotted);
  if (!value || value->is_null()) return false;
  if (value->is_boolean()) return value->get<bool>();
  if (value->is_number()) return value->get<double>() != 0;
  if (value->is_string()) return !value->get<std::string>().empty();
  return !value->empty();
}

bool is_auto(const json* value) {
  return value && value->is_string() && *value == "auto";
}

int64_t as_int(const json& value) {
  return static_cast<int64_t>(std::llround(value.get<double>()));
}

}  // namespace

std::string python_str(const json& value) {
  switch (value.type()) {
    case json::value_t::null:
      return "None";
    case json::value_t::boolean:
      return value.get<bool>() ? "True" : "False";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      return value.dump();
    case json::value_t::number_float:
      return python_float(value.get<double>());
    case json::value_t::string:
      return value.get<std::string>();
    default:
      return python_container(value);
  }
}

bool python_equal(const json& a, const json& b) {
  const auto numeric = [](const json& v) { return v.is_number() || v.is_boolean(); };
  const auto as_double = [](const json& v) {
    return v.is_boolean() ? (v.get<bool>() ? 1.0 : 0.0) : v.get<double>();
  };
  if (numeric(a) && numeric(b)) return as_double(a) == as_double(b);
  if (a.is_array() && b.is_array()) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (!python_equal(a[i], b[i])) return false;
    return true;
  }
  return a == b;
}

std::optional<int64_t> hidden_size_from_model_config(const json& model_config) {
  const auto from = [](const json& config) -> std::optional<int64_t> {
    if (!config.is_object()) return std::nullopt;
    if (config.contains("hidden_size") && config["hidden_size"].is_number())
      return config["hidden_size"].get<int64_t>();
    if (config.contains("hidden_sizes") && config["hidden_sizes"].is_array() &&
        !config["hidden_sizes"].empty()) {
      int64_t largest = 0;
      for (const json& size : config["hidden_sizes"])
        largest = std::max(largest, size.get<int64_t>());
      return largest;
    }
    return std::nullopt;
  };
  if (auto size = from(model_config)) return size;
  if (model_config.is_object() && model_config.contains("text_config"))
    return from(model_config["text_config"]);
  return std::nullopt;
}

DeepSpeedConfig::DeepSpeedConfig(json config, std::string source)
    : config_(std::move(config)), source_(std::move(source)) {
  deepspeed_keys::check(config_, source_);
  // Accelerate's DeepSpeedPlugin refuses a config without this section.
  if (!config_.contains("zero_optimization"))
    fail(
        "zero_optimization is missing: transformers (Accelerate's DeepSpeedPlugin) requires "
        "it (\"Please specify the ZeRO optimization config in the DeepSpeed config.\"); add "
        "\"zero_optimization\": {\"stage\": 0} for no sharding, or stage 1, 2 or 3");
}

DeepSpeedConfig DeepSpeedConfig::from_file(const std::filesystem::path& path) {
  return DeepSpeedConfig(read_json_config(path, "deepspeed"), path.string());
}

DeepSpeedConfig DeepSpeedConfig::from_flag(const std::string& value,
                                           const std::optional<std::string>& inline_name) {
  return DeepSpeedConfig(read_json_config_value(value, "deepspeed"),
                         is_inline_json(value) ? inline_name.value_or("(inline JSON)") : value);
}

void DeepSpeedConfig::fail(const std::string& message) const {
  throw ArgumentError("--deepspeed " + source_ + ": " + message);
}

void DeepSpeedConfig::fill_match(const std::string& key, const json& hf_value,
                                 const std::string& hf_name, bool must_match) {
  std::string last;
  json* node = find_node(config_, key, last);
  if (!node) return;
  if (node->contains(last) && (*node)[last] == "auto") {
    (*node)[last] = hf_value;
    return;
  }
  if (!must_match || !node->contains(last)) return;
  const json& ds_value = (*node)[last];
  if (!ds_value.is_null() && !python_equal(ds_value, hf_value))
    mismatches_.push_back("- ds " + key + "=" + python_str(ds_value) + " vs hf " + hf_name + "=" +
                          python_str(hf_value));
}

void DeepSpeedConfig::trainer_config_process(const DeepSpeedTrainerArgs& args) {
  const int64_t train_batch_size =
      args.world_size * args.per_device_train_batch_size * args.gradient_accumulation_steps;
  fill_match("train_micro_batch_size_per_gpu", args.per_device_train_batch_size,
             "per_device_train_batch_size");
  fill_match("gradient_accumulation_steps", args.gradient_accumulation_steps,
             "gradient_accumulation_steps");
  fill_match("train_batch_size", train_batch_size, "train_batch_size (calculated)");
  fill_match("gradient_clipping", args.max_grad_norm, "max_grad_norm");
  fill_match("optimizer.params.lr", args.learning_rate, "learning_rate");
  fill_match("optimizer.params.betas", json::array({args.adam_beta1, args.adam_beta2}),
             "adam_beta1+adam_beta2");
  fill_match("optimizer.params.eps", args.adam_epsilon, "adam_epsilon");
  fill_match("optimizer.params.weight_decay", args.weight_decay, "weight_decay");
  fill_only("scheduler.params.warmup_min_lr", 0);  // not a Trainer argument
  fill_match("scheduler.params.warmup_max_lr", args.learning_rate, "learning_rate");
  fill_match("fp16.enabled", args.fp16 || args.fp16_full_eval, "fp16|fp16_full_eval");
  fill_match("bf16.enabled", args.bf16 || args.bf16_full_eval, "bf16|bf16_full_eval");
  // DeepSpeed trains in fp16 unless the config says otherwise; bf16 wins over fp16.
  dtype_ = is_true(config_, "bf16.enabled")   ? DeepSpeedDtype::kBf16
           : is_true(config_, "fp16.enabled") ? DeepSpeedDtype::kFp16
                                              : DeepSpeedDtype::kFp32;
}

void DeepSpeedConfig::fill_hidden_size_keys(std::optional<int64_t> hidden_size) {
  std::vector<std::string> auto_keys;
  for (const char* key :
       {"zero_optimization.reduce_bucket_size", "zero_optimization.stage3_prefetch_bucket_size",
        "zero_optimization.stage3_param_persistence_threshold"})
    if (is_auto(get_value(config_, key))) auto_keys.push_back(key);
  if (auto_keys.empty()) return;
  if (!hidden_size) {
    json listed = auto_keys;
    fail(
        "The model's config file has neither `hidden_size` nor `hidden_sizes` entry, therefore "
        "it's not possible to automatically fill out the following `auto` entries in the "
        "DeepSpeed config file: " +
        python_str(listed) +
        ". You can fix that by replacing `auto` values for these keys with an integer value of "
        "your choice.");
  }
  const int64_t h = *hidden_size;
  fill_only("zero_optimization.reduce_bucket_size", h * h);
  if (zero_stage() == 3) {
    // Python's int(0.9 * h * h): the product in double precision, truncated.
    fill_only("zero_optimization.stage3_prefetch_bucket_size",
              static_cast<int64_t>(0.9 * static_cast<double>(h) * static_cast<double>(h)));
    fill_only("zero_optimization.stage3_param_persistence_threshold", 10 * h);
  }
}

void DeepSpeedConfig::trainer_config_finalize(std::optional<int64_t> hidden_size,
                                              int64_t num_training_steps, int64_t warmup_steps) {
  if (!dtype_) throw std::logic_error("DeepSpeedConfig: trainer_config_process was not called");
  fill_hidden_size_keys(hidden_size);
  fill_match("scheduler.params.total_num_steps", num_training_steps,
             "num_training_steps (calculated)");
  // deepspeed>=0.19.6 rejects warmup_num_steps <= 0; transformers keeps it positive.
  fill_match("scheduler.params.warmup_num_steps", std::max<int64_t>(1, warmup_steps),
             "warmup_steps");
  if (!mismatches_.empty()) {
    std::string lines;
    for (const std::string& line : mismatches_) lines += line + "\n";
    fail(
        "Please correct the following DeepSpeed config values that mismatch TrainingArguments "
        "values:\n" +
        lines + "The easiest method is to set these DeepSpeed config values to 'auto'.");
  }
  // Accelerate fills this one from its plugin (zero3_save_16bit_model, default false).
  fill_only("zero_optimization.stage3_gather_16bit_weights_on_model_save", false);
  for (const std::string& key : deepspeed_keys::auto_keys())
    if (is_auto(get_value(config_, key)))
      fail(key + " is \"auto\", but transformers fills it only " +
           (key.rfind("zero_optimization.stage3_", 0) == 0
                ? std::string("at ZeRO stage 3; give a number or remove it")
                : std::string("when its section is complete; give a value")));
}

int DeepSpeedConfig::zero_stage() const {
  const json* stage = get_value(config_, "zero_optimization.stage");
  return stage && stage->is_number_integer() ? stage->get<int>() : 0;
}

DeepSpeedDtype DeepSpeedConfig::dtype() const {
  if (!dtype_) throw std::logic_error("trainer_config_process() wasn't called yet to tell dtype");
  return *dtype_;
}

DeepSpeedLossScale DeepSpeedConfig::loss_scale() const {
  DeepSpeedLossScale out;
  const json* fp16 = get_value(config_, "fp16");
  if (!fp16 || !fp16->is_object()) return out;
  const auto read = [&](const char* key, auto& field) {
    if (fp16->contains(key) && !(*fp16)[key].is_null())
      field = (*fp16)[key].get<std::decay_t<decltype(field)>>();
  };
  read("loss_scale", out.loss_scale);
  if (fp16->contains("initial_scale_power"))
    out.initial_scale_power = as_int((*fp16)["initial_scale_power"]);
  if (fp16->contains("loss_scale_window"))
    out.loss_scale_window = as_int((*fp16)["loss_scale_window"]);
  if (fp16->contains("hysteresis")) out.hysteresis = as_int((*fp16)["hysteresis"]);
  read("consecutive_hysteresis", out.consecutive_hysteresis);
  read("min_loss_scale", out.min_loss_scale);
  return out;
}

std::optional<double> DeepSpeedConfig::gradient_clipping() const {
  const json* value = get_value(config_, "gradient_clipping");
  if (!value || !value->is_number()) return std::nullopt;
  return value->get<double>();
}

std::optional<DeepSpeedSection> DeepSpeedConfig::optimizer() const {
  const json* node = get_value(config_, "optimizer");
  if (!node || node->is_null()) return std::nullopt;
  return DeepSpeedSection{(*node)["type"].get<std::string>(),
                          node->value("params", json::object())};
}

std::optional<DeepSpeedSection> DeepSpeedConfig::scheduler() const {
  const json* node = get_value(config_, "scheduler");
  if (!node || node->is_null()) return std::nullopt;
  return DeepSpeedSection{(*node)["type"].get<std::string>(),
                          node->value("params", json::object())};
}

DeepSpeedZeroSettings DeepSpeedConfig::zero() const {
  DeepSpeedZeroSettings out;
  const json* zero = get_value(config_, "zero_optimization");
  if (!zero || !zero->is_object()) return out;
  out.stage = zero_stage();
  const auto device = [&](const char* section) {
    const json* value = get_value(config_, std::string("zero_optimization.") + section + ".device");
    return value && *value == "cpu";
  };
  out.offload_optimizer = device("offload_optimizer") || zero->value("cpu_offload", false);
  out.offload_param = device("offload_param") || zero->value("cpu_offload_param", false);
  out.overlap_comm = zero->value("overlap_comm", out.stage == 3);
  const auto integer = [&](const char* key, int64_t& field) {
    if (!zero->contains(key)) return;
    const json& value = (*zero)[key];
    if (!value.is_number())
      fail(std::string("zero_optimization.") + key + " is " + value.dump() +
           " after filling; give a number");
    field = as_int(value);
  };
  integer("reduce_bucket_size", out.reduce_bucket_size);
  integer("param_persistence_threshold", out.param_persistence_threshold);
  integer("stage3_param_persistence_threshold", out.param_persistence_threshold);
  // Three spellings of one option (DeepSpeed's field, its alias, the deprecated fp16 name);
  // they must agree when several are given.
  std::optional<bool> gather;
  for (const char* key :
       {"gather_16bit_weights_on_model_save", "stage3_gather_16bit_weights_on_model_save",
        "stage3_gather_fp16_weights_on_model_save"}) {
    if (!zero->contains(key) || !(*zero)[key].is_boolean()) continue;
    const bool value = (*zero)[key].get<bool>();
    if (gather && *gather != value)
      fail(std::string("zero_optimization.") + key +
           " contradicts another spelling of the same option "
           "(gather_16bit_weights_on_model_save); keep one");
    gather = value;
  }
  out.gather_16bit_weights_on_model_save = gather.value_or(false);
  return out;
}

}  // namespace ctrainer
