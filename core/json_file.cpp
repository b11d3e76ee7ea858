#include <ctrainer/core/json_file.h>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <system_error>

#include <ctrainer/core/write_faults.h>

namespace ctrainer {
namespace fs = std::filesystem;
namespace {

/// Data first, then rename: without the fsync a crash after the rename can leave an empty file
/// under the final name on file systems that reorder metadata and data (ext4 delalloc).
void fsync_file(const fs::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    throw std::runtime_error("cannot open " + path.string() + ": " + std::strerror(errno));
  const int rc = ::fsync(fd);
  const int saved_errno = errno;
  ::close(fd);
  if (rc != 0)
    throw std::runtime_error("cannot write " + path.string() +
                             " (disk full?): " + std::strerror(saved_errno));
}

}  // namespace

nlohmann::json read_json_file(const fs::path& path, const std::string& what) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(what + " " + path.string() + " is missing or unreadable");
  try {
    return nlohmann::json::parse(in);
  } catch (const std::exception& e) {
    throw std::runtime_error(what + " " + path.string() + " is not valid JSON: " + e.what());
  }
}

void write_json_file(const fs::path& path, const nlohmann::json& value, int indent) {
  // The temporary is a sibling (same file system, so the rename is atomic) whose name no reader
  // looks for; the pid keeps processes that write the same folder apart.
  // (Appended piece by piece: GCC 12 at -O3 warns falsely about "." + string.)
  std::string temporary_name = ".";
  temporary_name += path.filename().string();
  temporary_name += ".tmp-" + std::to_string(::getpid());
  const fs::path temporary = path.parent_path() / temporary_name;
  try {
    if (const int injected = write_fault(path))  // tests: a failing disk (write_faults.h)
      throw std::system_error(injected, std::generic_category(), "cannot write " + path.string());
    {
      std::ofstream out(temporary, std::ios::trunc);
      if (!out)
        throw std::runtime_error("cannot write " + path.string() + ": cannot create " +
                                 temporary.string() + " (is the folder there and writable?)");
      out << value.dump(indent) << '\n';
      out.flush();
      if (!out) throw std::runtime_error("cannot write " + path.string() + " (disk full?)");
    }
    fsync_file(temporary);
    fs::rename(temporary, path);
  } catch (...) {
    std::error_code ignored;
    fs::remove(temporary, ignored);
    throw;
  }
}

}  // namespace ctrainer
