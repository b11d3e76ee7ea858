#pragma once
/// \file What the fuzz targets (fuzz/*_fuzzer.cpp) share: a scratch folder per process for the
/// readers that take a path, multi-file inputs, a JSON parse that never throws, and a silent
/// library logger.
///
/// A harness calls the API the way ctrainer does on a user's file, catches the exceptions the API
/// documents for bad input and lets everything else escape: a crash, a sanitizer report, an
/// abort or an undocumented exception (nlohmann::json::exception, std::out_of_range,
/// std::bad_alloc, c10::Error, ...) is a finding.
#include <stdlib.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <spdlog/sinks/null_sink.h>
#include <nlohmann/json.hpp>

#include <ctrainer/core/logging.h>

namespace ctrainer::fuzz {

/// The input bytes.
inline std::string_view bytes_of(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

/// The input as a command line: one argv token per line (a last token needs no newline).
inline std::vector<std::string> argv_tokens(const uint8_t* data, size_t size) {
  std::vector<std::string> tokens;
  std::string token;
  for (const char c : bytes_of(data, size)) {
    if (c == '\n') {
      tokens.push_back(token);
      token.clear();
    } else {
      token += c;
    }
  }
  if (!token.empty()) tokens.push_back(token);
  return tokens;
}

/// A folder of this process under $TMPDIR (else /tmp), created on first use and deleted when the
/// process exits normally.
inline const std::filesystem::path& scratch_dir() {
  struct Scratch {
    std::filesystem::path path;
    Scratch() {
      const char* tmp = std::getenv("TMPDIR");
      std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/ctrainer-fuzz-XXXXXX";
      if (::mkdtemp(pattern.data()) == nullptr)
        throw std::runtime_error("fuzz: cannot create a scratch folder " + pattern);
      path = pattern;
    }
    ~Scratch() {
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
    }
  };
  static const Scratch scratch;
  return scratch.path;
}

/// Writes `bytes` to `path` (replacing it).
inline void write_file(const std::filesystem::path& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("fuzz: cannot write " + path.string());
}

/// scratch_dir()/name holding `bytes`.
inline std::filesystem::path scratch_file(const std::string& name, std::string_view bytes) {
  const std::filesystem::path path = scratch_dir() / name;
  write_file(path, bytes);
  return path;
}

/// An empty folder scratch_dir()/name (emptied when it exists).
inline std::filesystem::path fresh_scratch_folder(const std::string& name) {
  const std::filesystem::path path = scratch_dir() / name;
  std::filesystem::remove_all(path);
  std::filesystem::create_directories(path);
  return path;
}

/// `bytes` as JSON, or nothing when it is not valid JSON (the readers' own "not valid JSON"
/// errors are read_json_file's, which the harnesses that take files exercise).
inline std::optional<nlohmann::json> parse_json(std::string_view bytes) {
  nlohmann::json value = nlohmann::json::parse(bytes.begin(), bytes.end(), nullptr,
                                               /*allow_exceptions=*/false);
  if (value.is_discarded()) return std::nullopt;
  return value;
}

/// The separator of the parts of a multi-file input (a line "@@").
inline constexpr std::string_view kPartSeparator = "\n@@\n";

/// `bytes` cut at every kPartSeparator, at most `max_parts` parts (the last keeps the rest).
inline std::vector<std::string_view> split_parts(std::string_view bytes, size_t max_parts) {
  std::vector<std::string_view> parts;
  while (parts.size() + 1 < max_parts) {
    const size_t at = bytes.find(kPartSeparator);
    if (at == std::string_view::npos) break;
    parts.push_back(bytes.substr(0, at));
    bytes.remove_prefix(at + kPartSeparator.size());
  }
  parts.push_back(bytes);
  return parts;
}

/// The library logger at its most verbose level into a null sink: every log call's formatting
/// runs, nothing is printed.
inline void quiet_logging() {
  static const bool done = [] {
    ctrainer::logging::configure(0, spdlog::level::trace,
                                 std::make_shared<spdlog::sinks::null_sink_mt>());
    return true;
  }();
  (void)done;
}

}  // namespace ctrainer::fuzz
