#include <ctrainer/distributed/launcher/accelerate_deepspeed_section.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <set>

#include <yaml-cpp/yaml.h>

#include <ctrainer/core/errors.h>
#include <ctrainer/core/strings.h>

namespace ctrainer::launcher {
namespace {

/// Python's repr() of a finite double: the shortest digits that read back, in fixed notation
/// for exponents -4..15 (with ".0" when integral), else d.ddde+XX.
std::string python_float_repr(double value) {
  char buffer[64];
  const auto result =
      std::to_chars(buffer, buffer + sizeof buffer, value, std::chars_format::scientific);
  const std::string text(buffer, result.ptr);
  const size_t e = text.find('e');
  std::string digits = text.substr(0, e);
  const int exponent = std::stoi(text.substr(e + 1));
  const bool negative = digits.front() == '-';
  if (negative) digits.erase(0, 1);
  digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
  std::string out;
  if (exponent >= -4 && exponent < 16) {
    if (exponent < 0) {
      out = "0." + std::string(static_cast<size_t>(-exponent - 1), '0') + digits;
    } else if (static_cast<size_t>(exponent) + 1 >= digits.size()) {
      out = digits + std::string(static_cast<size_t>(exponent) + 1 - digits.size(), '0') + ".0";
    } else {
      out = digits.substr(0, exponent + 1) + "." + digits.substr(exponent + 1);
    }
  } else {
    out = digits.substr(0, 1) + (digits.size() > 1 ? "." + digits.substr(1) : "") + "e" +
          (exponent < 0 ? "-" : "+") + (std::abs(exponent) < 10 ? "0" : "") +
          std::to_string(std::abs(exponent));
  }
  return (negative ? "-" : "") + out;
}

bool digit(char c) {
  return c >= '0' && c <= '9';
}

/// [-+]?(0|[1-9][0-9_]*): a YAML 1.1 decimal integer.
bool is_yaml_integer(const std::string& text) {
  size_t i = (!text.empty() && (text[0] == '-' || text[0] == '+')) ? 1 : 0;
  if (i >= text.size()) return false;
  if (text[i] == '0') return i + 1 == text.size();
  if (!digit(text[i])) return false;
  for (++i; i < text.size(); ++i)
    if (!digit(text[i]) && text[i] != '_') return false;
  return true;
}

/// [-+]?([0-9][0-9_]*)?\.[0-9_]*([eE][-+][0-9]+)?: a YAML 1.1 float with a dot.
bool is_yaml_float(const std::string& text) {
  size_t i = (!text.empty() && (text[0] == '-' || text[0] == '+')) ? 1 : 0;
  if (i < text.size() && digit(text[i]))
    while (i < text.size() && (digit(text[i]) || text[i] == '_')) ++i;
  if (i >= text.size() || text[i] != '.') return false;
  for (++i; i < text.size() && (digit(text[i]) || text[i] == '_');) ++i;
  if (i == text.size()) return true;
  if (text[i] != 'e' && text[i] != 'E') return false;
  if (++i >= text.size() || (text[i] != '-' && text[i] != '+')) return false;
  if (++i >= text.size()) return false;
  for (; i < text.size(); ++i)
    if (!digit(text[i])) return false;
  return true;
}

struct SectionKey {
  const char* key;
  const char* variable;  ///< nullptr: accelerate launch passes it to no process
  bool lowered;          ///< str(value).lower() rather than str(value)
};
constexpr SectionKey kSectionKeys[] = {
    {"zero_stage", "ACCELERATE_DEEPSPEED_ZERO_STAGE", false},
    {"gradient_accumulation_steps", "ACCELERATE_GRADIENT_ACCUMULATION_STEPS", false},
    {"gradient_clipping", "ACCELERATE_GRADIENT_CLIPPING", true},
    {"offload_optimizer_device", "ACCELERATE_DEEPSPEED_OFFLOAD_OPTIMIZER_DEVICE", true},
    {"offload_param_device", "ACCELERATE_DEEPSPEED_OFFLOAD_PARAM_DEVICE", true},
    {"zero3_init_flag", "ACCELERATE_DEEPSPEED_ZERO3_INIT", true},
    {"zero3_save_16bit_model", "ACCELERATE_DEEPSPEED_ZERO3_SAVE_16BIT_MODEL", true},
    {"deepspeed_config_file", "ACCELERATE_DEEPSPEED_CONFIG_FILE", false},
    {"deepspeed_moe_layer_cls_names", "ACCELERATE_DEEPSPEED_MOE_LAYER_CLS_NAMES", false},
    {"offload_optimizer_nvme_path", nullptr, false},
    {"offload_param_nvme_path", nullptr, false},
    {"deepspeed_hostfile", nullptr, false},
    {"deepspeed_exclusion_filter", nullptr, false},
    {"deepspeed_inclusion_filter", nullptr, false},
    {"deepspeed_multinode_launcher", nullptr, false},
};

}  // namespace

std::optional<std::string> python_str_of_yaml(const YAML::Node& scalar) {
  if (!scalar || scalar.IsNull()) return std::nullopt;
  const std::string text = scalar.Scalar();
  if (scalar.Tag() != "?") return text;  // quoted: a string as written
  // PyYAML's YAML 1.1 resolver (resolver.py) for plain scalars, matched by hand: std::regex
  // recurses per character, and a long value would overflow the stack.
  static const std::set<std::string> truths = {"yes",  "Yes", "YES", "true", "True",
                                               "TRUE", "on",  "On",  "ON"};
  static const std::set<std::string> falsities = {"no",    "No",  "NO",  "false", "False",
                                                  "FALSE", "off", "Off", "OFF"};
  if (truths.count(text)) return "True";
  if (falsities.count(text)) return "False";
  std::string plain = text;
  plain.erase(std::remove(plain.begin(), plain.end(), '_'), plain.end());
  if (is_yaml_integer(text)) {
    if (plain.front() == '+') plain.erase(0, 1);
    return plain == "-0" ? "0" : plain;
  }
  if (is_yaml_float(text) && plain.find_first_of("0123456789") != std::string::npos) {
    const double value = std::strtod(plain.c_str(), nullptr);
    if (std::isfinite(value)) return python_float_repr(value);
  }
  return text;
}

bool is_deepspeed_config_key(const std::string& key) {
  for (const SectionKey& k : kSectionKeys)
    if (key == k.key) return true;
  return false;
}

void add_deepspeed_environment(
    const std::vector<std::pair<std::string, std::optional<std::string>>>& section,
    int64_t num_machines, const std::string& where, std::map<std::string, std::string>& env) {
  std::string fields;
  for (const auto& entry : section) fields += entry.first + ",";
  // accelerate launch appends mixed_precision when the config file gave it, as every file does.
  env["ACCELERATE_CONFIG_DS_FIELDS"] = lower(fields + "mixed_precision");
  env["ACCELERATE_USE_DEEPSPEED"] = "true";
  for (const auto& [key, value] : section) {
    if (!value) continue;
    for (const SectionKey& k : kSectionKeys)
      if (key == k.key && k.variable != nullptr)
        env[k.variable] = k.lowered ? lower(*value) : *value;
  }
  if (num_machines > 1) {
    std::string launcher = "pdsh";  // accelerate's default
    for (const auto& [key, value] : section)
      if (key == "deepspeed_multinode_launcher" && value) launcher = *value;
    if (launcher != "standard")
      throw ArgumentError(where + "deepspeed_multinode_launcher " + launcher +
                          " with num_machines > 1 starts every machine's workers from one over "
                          "ssh; ctrainer-run starts one machine's, as torchrun does: set "
                          "deepspeed_multinode_launcher: standard and run ctrainer-run "
                          "--config_file on each machine (with its machine_rank)");
  }
}

}  // namespace ctrainer::launcher
