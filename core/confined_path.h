#pragma once
/// \file Paths read from files stay inside the folder that holds them: a checkpoint manifest or
/// a saved state must never make us read, verify or overwrite a file elsewhere ("../../x",
/// "/etc/passwd", or a link leading out of the folder).
#include <filesystem>
#include <optional>
#include <string>

namespace ctrainer {

/// `folder / relative` when `relative` is a plain relative path that stays inside `folder`: not
/// empty, not absolute, no ".." component, and (once links are resolved) still under `folder`.
/// Otherwise nothing, and `why` (when given) says what is wrong.
std::optional<std::filesystem::path> path_inside(const std::filesystem::path& folder,
                                                 const std::string& relative,
                                                 std::string* why = nullptr);

/// Whether `path`, links resolved, is `folder` itself or inside it.
bool is_inside(const std::filesystem::path& folder, const std::filesystem::path& path);

}  // namespace ctrainer
