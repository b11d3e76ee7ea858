#include <ctrainer/integrations/mlflow/python_str.h>

#include <array>
#include <charconv>
#include <cmath>
#include <cstdlib>

namespace ctrainer::mlflow {
namespace {

/// Python's repr() of a str: single quotes unless the text holds ' and no ", backslash escapes
/// for the quote, backslash and control characters.
std::string python_string_repr(const std::string& text) {
  const bool has_single = text.find('\'') != std::string::npos;
  const bool has_double = text.find('"') != std::string::npos;
  const char quote = (has_single && !has_double) ? '"' : '\'';
  std::string out(1, quote);
  for (const char c : text) {
    if (c == quote || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      std::array<char, 8> escaped{};
      std::snprintf(escaped.data(), escaped.size(), "\\x%02x", static_cast<unsigned char>(c));
      out += escaped.data();
    } else {
      out += c;
    }
  }
  return out + quote;
}

/// repr() of a value inside a list or dict (strings quoted); str() at the top level.
std::string python_repr(const nlohmann::json& value) {
  return value.is_string() ? python_string_repr(value.get<std::string>()) : python_str(value);
}

void flatten_into(const nlohmann::json& object, const std::string& prefix, nlohmann::json& out) {
  for (const auto& [key, value] : object.items()) {
    const std::string name = prefix.empty() ? key : prefix + "." + key;
    if (value.is_object() && !value.empty())
      flatten_into(value, name, out);
    else
      out[name] = value;
  }
}

}  // namespace

std::string python_float_repr(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  // The shortest round-trip digits in scientific form ("5e-05", "1.2345e+02"), then Python's
  // layout: positional when -4 <= exponent < 16 (with ".0" for whole numbers), else scientific
  // with a sign and at least two exponent digits.
  std::array<char, 64> buffer{};
  const auto result = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value,
                                    std::chars_format::scientific);
  std::string text(buffer.data(), result.ptr);
  const size_t e = text.find('e');
  const int exponent = std::atoi(text.c_str() + e + 1);
  std::string mantissa = text.substr(0, e);
  const bool negative = mantissa[0] == '-';
  if (negative) mantissa.erase(0, 1);
  std::string digits;
  for (const char c : mantissa)
    if (c != '.') digits += c;
  std::string out = negative ? "-" : "";
  if (exponent >= -4 && exponent < 16) {
    if (exponent < 0) {
      out += "0." + std::string(static_cast<size_t>(-exponent - 1), '0') + digits;
    } else if (static_cast<int>(digits.size()) <= exponent + 1) {
      out += digits + std::string(static_cast<size_t>(exponent + 1) - digits.size(), '0') + ".0";
    } else {
      out += digits.substr(0, static_cast<size_t>(exponent) + 1) + "." +
             digits.substr(static_cast<size_t>(exponent) + 1);
    }
    return out;
  }
  out += digits.substr(0, 1);
  if (digits.size() > 1) out += "." + digits.substr(1);
  std::array<char, 16> exponent_text{};
  std::snprintf(exponent_text.data(), exponent_text.size(), "e%c%02d", exponent < 0 ? '-' : '+',
                std::abs(exponent));
  return out + exponent_text.data();
}

std::string python_str(const nlohmann::json& value) {
  switch (value.type()) {
    case nlohmann::json::value_t::string:
      return value.get<std::string>();
    case nlohmann::json::value_t::boolean:
      return value.get<bool>() ? "True" : "False";
    case nlohmann::json::value_t::null:
      return "None";
    case nlohmann::json::value_t::number_integer:
      return std::to_string(value.get<int64_t>());
    case nlohmann::json::value_t::number_unsigned:
      return std::to_string(value.get<uint64_t>());
    case nlohmann::json::value_t::number_float:
      return python_float_repr(value.get<double>());
    case nlohmann::json::value_t::array: {
      std::string out = "[";
      for (size_t i = 0; i < value.size(); ++i) out += (i ? ", " : "") + python_repr(value[i]);
      return out + "]";
    }
    case nlohmann::json::value_t::object: {
      std::string out = "{";
      bool first = true;
      for (const auto& [key, item] : value.items()) {
        out += (first ? "" : ", ") + python_string_repr(key) + ": " + python_repr(item);
        first = false;
      }
      return out + "}";
    }
    default:
      return value.dump();
  }
}

nlohmann::json flatten_dict(const nlohmann::json& object) {
  nlohmann::json out = nlohmann::json::object();
  flatten_into(object, "", out);
  return out;
}

std::string sanitize_metric_key(const std::string& key) {
  std::string out = key;
  for (char& c : out) {
    const bool allowed = (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') ||
                         (c >= 'a' && c <= 'z') || c == '_' || c == '-' || c == '.' || c == ' ' ||
                         c == ':' || c == '/';
    if (!allowed) c = '_';
  }
  return out;
}

}  // namespace ctrainer::mlflow
