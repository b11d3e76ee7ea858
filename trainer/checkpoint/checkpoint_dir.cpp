#include <ctrainer/trainer/checkpoint/checkpoint_dir.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include <ctrainer/core/confined_path.h>
#include <ctrainer/core/json_file.h>

namespace ctrainer {
namespace fs = std::filesystem;
namespace {

constexpr const char* kPrefix = "checkpoint-";

/// fsync a file or a directory: data must be on disk before the rename publishes it.
void fsync_path(const fs::path& path, bool directory) {
  const int fd = ::open(path.c_str(), (directory ? O_RDONLY | O_DIRECTORY : O_RDONLY) | O_CLOEXEC);
  if (fd < 0) throw std::system_error(errno, std::generic_category(), "open " + path.string());
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0) throw std::system_error(err, std::generic_category(), "fsync " + path.string());
}

std::vector<fs::path> regular_files(const fs::path& folder) {
  std::vector<fs::path> out;
  for (const auto& entry : fs::recursive_directory_iterator(folder))
    if (entry.is_regular_file()) out.push_back(entry.path());
  std::sort(out.begin(), out.end());
  return out;
}

/// Whether two paths name the same folder (false when either is gone).
bool same_folder(const fs::path& a, const fs::path& b) {
  std::error_code ec;
  return fs::equivalent(a, b, ec) && !ec;
}

}  // namespace

fs::path checkpoint_path(const fs::path& output_dir, int64_t step) {
  return output_dir / (kPrefix + std::to_string(step));
}

std::optional<int64_t> checkpoint_step(const fs::path& folder) {
  const std::string name = folder.filename().string();
  if (name.rfind(kPrefix, 0) != 0) return std::nullopt;
  const std::string digits = name.substr(std::char_traits<char>::length(kPrefix));
  if (digits.empty() || digits.size() > 18 ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  return std::stoll(digits);
}

uint32_t file_crc32(const fs::path& file) {
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    throw std::system_error(errno, std::generic_category(), "cannot read " + file.string());
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    throw std::system_error(err, std::generic_category(), "cannot stat " + file.string());
  }
  const auto size = static_cast<uint64_t>(st.st_size);
  // Checksumming is CPU-bound (zlib runs at ~3-4 GB/s per core), so large files are split across
  // the cores and the parts joined with crc32_combine: the save of a checkpoint then costs little
  // more than writing it.
  constexpr uint64_t kMinPart = 32ull << 20;
  const uint64_t cores = std::max(1u, std::thread::hardware_concurrency());
  const uint64_t parts = std::clamp<uint64_t>(size / kMinPart, 1, cores);
  const uint64_t part_size = (size + parts - 1) / parts;
  std::vector<uLong> crcs(parts, crc32(0L, Z_NULL, 0));
  std::vector<int> errors(parts, 0);
  auto checksum = [&](uint64_t part) {
    std::vector<unsigned char> buffer(8 << 20);
    uint64_t offset = part * part_size;
    const uint64_t end = std::min(size, offset + part_size);
    while (offset < end) {
      const auto want = static_cast<size_t>(std::min<uint64_t>(buffer.size(), end - offset));
      const ssize_t got = ::pread(fd, buffer.data(), want, static_cast<off_t>(offset));
      if (got <= 0) {
        errors[part] = got < 0 ? errno : EIO;
        return;
      }
      crcs[part] = crc32(crcs[part], buffer.data(), static_cast<uInt>(got));
      offset += static_cast<uint64_t>(got);
    }
  };
  std::vector<std::thread> workers;
  for (uint64_t part = 1; part < parts; ++part) workers.emplace_back(checksum, part);
  checksum(0);
  for (auto& w : workers) w.join();
  ::close(fd);
  for (int err : errors)
    if (err != 0)
      throw std::system_error(err, std::generic_category(), "cannot read " + file.string());
  uLong crc = crcs[0];
  for (uint64_t part = 1; part < parts; ++part) {
    const uint64_t begin = part * part_size;
    const uint64_t length = std::min(size, begin + part_size) - std::min(size, begin);
    crc = crc32_combine(crc, crcs[part], static_cast<z_off_t>(length));
  }
  return static_cast<uint32_t>(crc);
}

fs::path write_checkpoint_atomically(const fs::path& output_dir, int64_t step,
                                     const std::function<void(const fs::path&)>& write_files) {
  fs::create_directories(output_dir);
  const fs::path final_dir = checkpoint_path(output_dir, step);
  // A hidden sibling on the same filesystem, so the final rename is atomic.
  const fs::path tmp_dir =
      output_dir / (".tmp-" + final_dir.filename().string() + "-" + std::to_string(::getpid()));
  fs::remove_all(tmp_dir);
  fs::create_directories(tmp_dir);
  try {
    write_files(tmp_dir);
    nlohmann::json files = nlohmann::json::object();
    for (const auto& file : regular_files(tmp_dir)) {
      fsync_path(file, false);
      files[fs::relative(file, tmp_dir).string()] = {{"size", fs::file_size(file)},
                                                     {"crc32", file_crc32(file)}};
    }
    // Written last: its presence marks the folder complete (write_json_file fsyncs it).
    write_json_file(
        tmp_dir / kCheckpointManifest,
        {{"format_version", kCheckpointFormatVersion}, {"step", step}, {"files", files}});
    fsync_path(tmp_dir, true);
    if (fs::exists(final_dir)) {
      // Same step saved again (e.g. the end-of-training save): keep the old one until the new
      // one is complete, then swap.
      const fs::path old_dir =
          output_dir / (".old-" + final_dir.filename().string() + "-" + std::to_string(::getpid()));
      fs::remove_all(old_dir);
      fs::rename(final_dir, old_dir);
      fs::rename(tmp_dir, final_dir);
      fs::remove_all(old_dir);
    } else {
      fs::rename(tmp_dir, final_dir);
    }
    fsync_path(output_dir, true);
  } catch (...) {
    std::error_code ec;
    fs::remove_all(tmp_dir, ec);
    throw;
  }
  return final_dir;
}

namespace {

/// "<prefix><step>-<pid>" -> (step, pid); nothing for other names.
std::optional<std::pair<int64_t, pid_t>> step_and_pid(const std::string& name,
                                                      const std::string& prefix) {
  if (name.rfind(prefix, 0) != 0) return std::nullopt;
  const std::string rest = name.substr(prefix.size());
  const size_t dash = rest.find('-');
  if (dash == std::string::npos || dash == 0 || dash + 1 == rest.size() ||
      rest.find_first_not_of("0123456789-") != std::string::npos ||
      rest.find('-', dash + 1) != std::string::npos)
    return std::nullopt;
  return std::make_pair(std::stoll(rest.substr(0, dash)),
                        static_cast<pid_t>(std::stol(rest.substr(dash + 1))));
}

/// Whether `pid` is a live process other than this one.
bool another_live_process(pid_t pid) {
  return pid != ::getpid() && (::kill(pid, 0) == 0 || errno == EPERM);
}

}  // namespace

std::vector<std::string> clean_stale_checkpoint_temporaries(const fs::path& output_dir,
                                                            int64_t current_step) {
  std::vector<std::string> done;
  std::error_code ec;
  if (!fs::is_directory(output_dir, ec)) return done;
  std::vector<fs::path> entries;
  for (const auto& entry : fs::directory_iterator(output_dir, ec))
    if (entry.is_directory(ec)) entries.push_back(entry.path());
  for (const fs::path& path : entries) {
    const std::string name = path.filename().string();
    if (const auto tmp = step_and_pid(name, ".tmp-checkpoint-")) {
      if (another_live_process(tmp->second)) continue;
      fs::remove_all(path, ec);
      done.push_back("removed " + path.string() + ", left by a save that did not finish");
    } else if (const auto old = step_and_pid(name, ".old-checkpoint-")) {
      if (another_live_process(old->second)) continue;
      const fs::path original = checkpoint_path(output_dir, old->first);
      if (!fs::exists(original, ec) && !verify_checkpoint(path)) {
        fs::rename(path, original, ec);
        if (!ec) {
          done.push_back("restored " + original.string() + " from " + path.string() +
                         ", moved aside by a save that did not finish");
          continue;
        }
      }
      fs::remove_all(path, ec);
      done.push_back("removed " + path.string() + ", left by a save that did not finish");
    } else if (name.rfind(".rank-files-checkpoint-", 0) == 0 &&
               name !=
                   ".rank-files-" + checkpoint_path(output_dir, current_step).filename().string()) {
      fs::remove_all(path, ec);
      done.push_back("removed " + path.string() + ", staged by a save that did not finish");
    }
  }
  return done;
}

std::optional<std::string> verify_checkpoint(const fs::path& folder) {
  const fs::path manifest_path = folder / kCheckpointManifest;
  if (!fs::is_regular_file(manifest_path))
    return "no " + std::string(kCheckpointManifest) + " in " + folder.string() +
           " (the save did not complete)";
  nlohmann::json manifest;
  try {
    manifest = read_json_file(manifest_path, "checkpoint manifest");
  } catch (const std::exception& e) {
    return e.what();
  }
  if (!manifest.is_object() || !manifest.contains("files") || !manifest["files"].is_object())
    return manifest_path.string() + " has no \"files\" object";
  if (manifest.contains("format_version") && !manifest["format_version"].is_number_integer())
    return manifest_path.string() + ": \"format_version\" is not a whole number";
  if (manifest.value("format_version", 0) > kCheckpointFormatVersion)
    return folder.string() + " has checkpoint format version " + manifest["format_version"].dump() +
           ", newer than this ctrainer supports (" + std::to_string(kCheckpointFormatVersion) + ")";
  for (const auto& [name, info] : manifest["files"].items()) {
    // The names come from a file: one that leads out of the folder must never make us read (or
    // later rotate) anything else.
    std::string why;
    const auto inside = path_inside(folder, name, &why);
    if (!inside) return manifest_path.string() + " lists a file outside the checkpoint: " + why;
    const fs::path& file = *inside;
    if (!info.is_object() || !info.contains("size") || !info["size"].is_number_unsigned() ||
        !info.contains("crc32") || !info["crc32"].is_number_unsigned())
      return manifest_path.string() + ": the entry of " + name +
             " needs an unsigned \"size\" and \"crc32\" (got " + info.dump().substr(0, 120) + ")";
    std::error_code ec;
    if (!fs::is_regular_file(file, ec)) return "missing file " + file.string();
    const auto size = fs::file_size(file, ec);
    if (ec || size != info["size"].get<uint64_t>())
      return "file " + file.string() + " has " + std::to_string(size) +
             " bytes, the manifest recorded " + info["size"].dump() + " (truncated or overwritten)";
    if (file_crc32(file) != info["crc32"].get<uint64_t>())
      return "file " + file.string() + " fails its CRC-32 check (corrupted)";
  }
  return std::nullopt;
}

std::vector<fs::path> list_checkpoints(const fs::path& output_dir) {
  std::vector<std::pair<int64_t, fs::path>> found;
  std::error_code ec;
  if (!fs::is_directory(output_dir, ec)) return {};
  for (const auto& entry : fs::directory_iterator(output_dir))
    if (auto step = checkpoint_step(entry.path()); step && entry.is_directory())
      found.emplace_back(*step, entry.path());
  std::sort(found.begin(), found.end());
  std::vector<fs::path> out;
  for (auto& [step, path] : found) out.push_back(std::move(path));
  return out;
}

std::optional<fs::path> latest_complete_checkpoint(
    const fs::path& output_dir,
    const std::function<void(const fs::path&, const std::string&)>& report) {
  auto all = list_checkpoints(output_dir);
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
    auto problem = verify_checkpoint(*it);
    if (!problem) return *it;
    if (report) report(*it, *problem);
  }
  return std::nullopt;
}

std::vector<fs::path> rotate_checkpoints(const fs::path& output_dir, int64_t save_total_limit,
                                         const std::optional<fs::path>& best_checkpoint) {
  if (save_total_limit <= 0) return {};
  auto sorted = list_checkpoints(output_dir);
  if (best_checkpoint) {
    auto best = std::find_if(sorted.begin(), sorted.end(),
                             [&](const fs::path& p) { return same_folder(p, *best_checkpoint); });
    // HF moves the best checkpoint to the second newest position so it survives rotation.
    if (best != sorted.end())
      for (auto i = static_cast<size_t>(best - sorted.begin()); i + 2 < sorted.size(); ++i)
        std::swap(sorted[i], sorted[i + 1]);
  }
  if (static_cast<int64_t>(sorted.size()) <= save_total_limit) return {};
  int64_t keep = save_total_limit;
  if (best_checkpoint && save_total_limit == 1 && !same_folder(sorted.back(), *best_checkpoint))
    keep = 2;
  const auto remove = std::max<int64_t>(0, static_cast<int64_t>(sorted.size()) - keep);
  std::vector<fs::path> deleted(sorted.begin(), sorted.begin() + remove);
  for (const auto& p : deleted) {
    std::error_code ec;
    fs::remove_all(p, ec);
  }
  return deleted;
}

}  // namespace ctrainer
