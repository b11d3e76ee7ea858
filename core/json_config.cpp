#include <ctrainer/core/json_config.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>

#include <ctrainer/core/errors.h>

namespace ctrainer {
namespace {

/// nlohmann's message without its "[json.exception.parse_error.101] parse error at line 1,
/// column 2: " prefix: our own prefix names the file and position.
std::string parser_reason(const std::string& what) {
  std::string reason = what;
  if (const size_t bracket = reason.find("] ");
      reason.rfind("[json.exception", 0) == 0 && bracket != std::string::npos)
    reason = reason.substr(bracket + 2);
  if (const size_t colon = reason.find(": ");
      reason.rfind("parse error", 0) == 0 && colon != std::string::npos)
    reason = reason.substr(colon + 2);
  return reason;
}

/// parse_error::byte is where the parser stopped: the last byte of the offending token. Editors
/// should jump to the token's first byte, so step back over a string literal or a bare word.
size_t token_start(const std::string& text, size_t byte) {
  if (byte == 0 || byte > text.size()) return byte;
  size_t i = byte - 1;  // 0-based index of the last byte read
  const auto word = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '+' || c == '-';
  };
  if (text[i] == '"') {
    for (size_t j = i; j-- > 0;) {
      if (text[j] != '"') continue;
      size_t backslashes = 0;
      while (j > backslashes && text[j - 1 - backslashes] == '\\') ++backslashes;
      if (backslashes % 2 == 0) return j + 1;
    }
    return byte;
  }
  if (!word(text[i])) return byte;
  while (i > 0 && word(text[i - 1])) --i;
  return i + 1;
}

}  // namespace

TextPosition text_position(const std::string& text, size_t byte) {
  // parse_error::byte is the 1-based index of the byte the parser stopped at; at the end of
  // the input it is one past the last byte.
  const size_t index = std::min(byte == 0 ? size_t{0} : byte - 1, text.size());
  TextPosition position;
  size_t line_start = 0;
  for (size_t i = 0; i < index; ++i) {
    if (text[i] == '\n') {
      ++position.line;
      line_start = i + 1;
    }
  }
  position.column = static_cast<int64_t>(index - line_start) + 1;
  return position;
}

nlohmann::json parse_json_config(const std::string& text, const std::string& source,
                                 const std::string& flag) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    const TextPosition at = text_position(text, token_start(text, e.byte));
    throw ArgumentError("--" + flag + " " + source + ":" + std::to_string(at.line) + ":" +
                        std::to_string(at.column) + ": invalid JSON: " + parser_reason(e.what()));
  } catch (const nlohmann::json::exception& e) {
    // The parser's other errors carry no position: a number too large for a double (1e400,
    // out_of_range.406), ...
    throw ArgumentError("--" + flag + " " + source + ": invalid JSON: " + parser_reason(e.what()));
  }
}

nlohmann::json read_json_config(const std::filesystem::path& path, const std::string& flag) {
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error))
    throw ArgumentError("--" + flag + " " + path.string() +
                        ": no such file; give the path of a JSON config file");
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in && !in.eof())
    throw ArgumentError("--" + flag + " " + path.string() + ": cannot read the file");
  nlohmann::json value = parse_json_config(text.str(), path.string(), flag);
  if (!value.is_object())
    throw ArgumentError("--" + flag + " " + path.string() +
                        ": must hold a JSON object ({...}), got " + std::string(value.type_name()));
  return value;
}

bool is_inline_json(const std::string& value) {
  return !value.empty() && value.front() == '{';
}

nlohmann::json read_json_config_value(const std::string& value, const std::string& flag) {
  if (!is_inline_json(value)) return read_json_config(value, flag);
  // Starting with '{', it is an object or invalid JSON (the parser's error names the spot).
  return parse_json_config(value, "inline JSON", flag);
}

}  // namespace ctrainer
