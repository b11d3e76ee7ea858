#pragma once
/// \file Reading a JSON configuration file a user named with a flag (--deepspeed, --fsdp_config):
/// a syntax error is reported as "FILE:LINE:COLUMN" so an editor jumps to it, and every error
/// is an ArgumentError naming the flag.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

namespace ctrainer {

/// A 1-based line and column in a text.
struct TextPosition {
  int64_t line = 1;
  int64_t column = 1;
};

/// The line and column of the `byte`-th byte of `text` (1-based, as nlohmann's
/// parse_error::byte counts; 0 or past the end is clamped to the text). Columns count bytes.
TextPosition text_position(const std::string& text, size_t byte);

/// Parses `text` (the contents of `source`, for messages) as one JSON value. Throws
/// ArgumentError "--<flag> <source>:<line>:<column>: invalid JSON: <reason>".
nlohmann::json parse_json_config(const std::string& text, const std::string& source,
                                 const std::string& flag);

/// Reads and parses the file at `path`, which must hold a JSON object. Throws ArgumentError
/// naming --<flag> and the file when it is missing or unreadable, not JSON (with line and
/// column) or not an object.
nlohmann::json read_json_config(const std::filesystem::path& path, const std::string& flag);

/// What transformers 5 calls inline JSON in a dict-or-path flag (--deepspeed, --fsdp_config,
/// --lr_scheduler_kwargs): a value that starts with '{'.
bool is_inline_json(const std::string& value);

/// A flag's value as transformers 5 reads a dict-or-path field: inline JSON (is_inline_json) is
/// parsed, as its __post_init__ json.loads it; anything else is a file, read with
/// read_json_config. Either must hold an object; errors name --<flag> and where the text came
/// from ("inline JSON:<line>:<column>" for the former).
nlohmann::json read_json_config_value(const std::string& value, const std::string& flag);

}  // namespace ctrainer
