#include <ctrainer/core/confined_path.h>

namespace ctrainer {
namespace fs = std::filesystem;

bool is_inside(const fs::path& folder, const fs::path& path) {
  std::error_code error;
  const fs::path base = fs::weakly_canonical(folder, error);
  if (error) return false;
  const fs::path resolved = fs::weakly_canonical(path, error);
  if (error) return false;
  // Compare component by component: "/a/bc" is not inside "/a/b".
  auto b = base.begin();
  auto r = resolved.begin();
  for (; b != base.end(); ++b, ++r) {
    if (b->empty() && std::next(b) == base.end()) break;  // a trailing separator
    if (r == resolved.end() || *r != *b) return false;
  }
  return true;
}

std::optional<fs::path> path_inside(const fs::path& folder, const std::string& relative,
                                    std::string* why) {
  auto refuse = [&](const std::string& reason) -> std::optional<fs::path> {
    if (why != nullptr) *why = reason;
    return std::nullopt;
  };
  if (relative.empty()) return refuse("an empty path");
  if (relative.find('\0') != std::string::npos) return refuse("a path with a NUL byte");
  const fs::path candidate(relative);
  if (candidate.is_absolute() || candidate.has_root_name() || candidate.has_root_directory())
    return refuse("\"" + relative + "\" is absolute; paths in the file are relative to " +
                  folder.string());
  for (const auto& part : candidate)
    if (part == "..")
      return refuse("\"" + relative + "\" climbs out of " + folder.string() + " with \"..\"");
  const fs::path full = folder / candidate;
  if (!is_inside(folder, full))
    return refuse("\"" + relative + "\" leads out of " + folder.string() + " through a link");
  return full;
}

}  // namespace ctrainer
