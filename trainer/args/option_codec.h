#pragma once
/// \file Internal to the argument parser: how each C++ value type is read from a command-line
/// token or a JSON value and written back to JSON, and how an OptionSpec is built from an
/// accessor. Shared by the TrainingArguments registry and ArgumentParser's application flags.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <ctrainer/core/errors.h>
#include <ctrainer/trainer/args/argument_parser.h>
#include <ctrainer/trainer/args/choices.h>

namespace ctrainer::args_detail {

using nlohmann::json;

inline std::string to_lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

inline bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// Hugging Face's string_to_bool: yes/true/t/y/1 and no/false/f/n/0, case-insensitive.
inline std::optional<bool> parse_bool_literal(const std::string& text) {
  const std::string s = to_lower(text);
  if (s == "yes" || s == "true" || s == "t" || s == "y" || s == "1") return true;
  if (s == "no" || s == "false" || s == "f" || s == "n" || s == "0") return false;
  return std::nullopt;
}

/// Python's spelling of "no value": HF scripts pass it for optional arguments.
inline bool is_none_literal(const std::string& s) {
  return s == "None" || s == "none";
}

inline ArgumentError json_type_error(const std::string& expected, const json& value) {
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

template <>
struct Codec<JsonObjectText> {
  static constexpr OptionKind kKind = OptionKind::kJsonObject;
  static JsonObjectText from_tokens(const std::vector<std::string>& tokens) {
    json parsed;
    try {
      parsed = json::parse(tokens.at(0));
    } catch (const json::exception&) {  // parse_error, or out_of_range for 1e400
      throw ArgumentError("expected a JSON object such as '{\"num_cycles\": 2}', got '" +
                          tokens[0] + "'");
    }
    return from_json(parsed);
  }
  static JsonObjectText from_json(const json& j) {
    // HF also takes the object's text in a JSON config (a string starting with "{").
    if (j.is_string() && j.get<std::string>().starts_with("{"))
      return from_tokens({j.get<std::string>()});
    if (!j.is_object()) throw json_type_error("a JSON object", j);
    return {j.dump()};
  }
  static json encode(const JsonObjectText& v) { return json::parse(v.text); }
};

/// include_num_input_tokens_seen: one of its choices, or (as transformers maps them) a boolean,
/// true for "all" and false for "no", spelled as the command line and JSON spell booleans.
template <>
struct Codec<InputTokensSeen> {
  static constexpr OptionKind kKind = OptionKind::kEnum;
  static std::vector<std::string> choices() { return choice_names<InputTokensSeen>(); }
  static InputTokensSeen from_tokens(const std::vector<std::string>& tokens,
                                     const std::string& flag) {
    if (const std::optional<bool> value = parse_bool_literal(tokens.at(0)))
      return *value ? InputTokensSeen::kAll : InputTokensSeen::kNo;
    return parse_choice<InputTokensSeen>(tokens.at(0), flag);
  }
  static InputTokensSeen from_json(const json& j, const std::string& flag) {
    if (j.is_boolean()) return j.get<bool>() ? InputTokensSeen::kAll : InputTokensSeen::kNo;
    if (!j.is_string()) throw json_type_error("a string or a boolean", j);
    return from_tokens({j.get<std::string>()}, flag);
  }
  static json encode(InputTokensSeen v) { return to_string(v); }
};

/// An enum of a closed set (args/choices.h): its ChoiceTable gives the accepted spellings, the
/// choices --help lists and the JSON spelling, so no list of names is written twice. Reading
/// needs the flag's name, which the errors carry (ChoiceError, NotSupportedYet).
template <ChoiceEnum E>
struct Codec<E> {
  static constexpr OptionKind kKind = OptionKind::kEnum;
  static std::vector<std::string> choices() { return choice_names<E>(); }
  static E from_tokens(const std::vector<std::string>& tokens, const std::string& flag) {
    return parse_choice<E>(tokens.at(0), flag);
  }
  static E from_json(const json& j, const std::string& flag) {
    if (!j.is_string()) throw json_type_error("a string", j);
    return parse_choice<E>(j.get<std::string>(), flag);
  }
  static json encode(E v) { return to_string(v); }
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
  constexpr bool kEnum = C::kKind == OptionKind::kEnum;
  OptionSpec spec;
  spec.name = std::move(name);
  spec.help = std::move(help);
  spec.kind = C::kKind;
  spec.optional = U::kOptional;
  if constexpr (kEnum) {
    spec.choices = C::choices();
    for (std::string_view later : ChoiceTable<typename U::Value>::kLater)
      spec.not_yet.emplace_back(later);
  }
  spec.set_from_tokens = [access, flag = spec.name](TrainingArguments& a,
                                                    const std::vector<std::string>& tokens) {
    if constexpr (U::kOptional) {
      if (tokens.size() == 1 && is_none_literal(tokens[0])) {
        access(a).reset();
        return;
      }
    }
    if constexpr (kEnum) {
      access(a) = C::from_tokens(tokens, flag);
    } else {
      access(a) = C::from_tokens(tokens);
    }
  };
  spec.set_from_json = [access, flag = spec.name](TrainingArguments& a, const json& j) {
    if constexpr (U::kOptional) {
      if (j.is_null()) {
        access(a).reset();
        return;
      }
    }
    if constexpr (kEnum) {
      access(a) = C::from_json(j, flag);
    } else {
      access(a) = C::from_json(j);
    }
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
inline std::string display(const json& value) {
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

/// How --help and the "needs a value" message show a flag's value: [BOOL], INT, FLOAT, STR, the
/// choices of an enum, STR [STR ...] (argument_help.cpp).
std::string value_placeholder(const OptionSpec& spec);

}  // namespace ctrainer::args_detail
