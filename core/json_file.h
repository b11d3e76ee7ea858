#pragma once
/// \file Reading and writing JSON files: every JSON state file ctrainer writes (trainer_state.json,
/// training_args.json, checkpoint state, config.json, *_results.json, ...) goes through
/// write_json_file, so a crash or a full disk never leaves a half-written file in place of a good
/// one.
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

namespace ctrainer {

/// Parses the JSON file at `path`. Throws std::runtime_error "<what> <path> is missing or
/// unreadable" or "<what> <path> is not valid JSON: <parser's reason>"; `what` names the file's
/// role for the user ("checkpoint file", "trainer state").
nlohmann::json read_json_file(const std::filesystem::path& path,
                              const std::string& what = "JSON file");

/// Writes `value` (pretty-printed with `indent` spaces, or on one line with -1; newline-terminated)
/// to `path` atomically: into a temporary sibling first, flushed and fsynced, then renamed over
/// `path`. Readers see the old file or the complete new one, never a torn one; on failure the old
/// file is untouched, the temporary is removed and std::runtime_error names the path.
void write_json_file(const std::filesystem::path& path, const nlohmann::json& value,
                     int indent = 2);

}  // namespace ctrainer
