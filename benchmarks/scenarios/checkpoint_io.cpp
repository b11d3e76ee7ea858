// Scenario checkpoint_io: save_safetensors / load_safetensors MB/s of a BERT-base-shaped set of
// fp32 tensors (~110M parameters), next to the raw sequential write and read speed of the same
// disk measured alternately in the same run, so the ratios do not depend on which disk or VM the
// benchmark lands on. metrics.ratio = save MB/s / raw write MB/s (target >= 0.7).
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <fmt/format.h>

#include <ctrainer/integrations/safetensors.h>
#include <ctrainer/trainer/checkpoint/checkpoint_dir.h>

#include "bench_report.h"

namespace ctrainer::bench {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr uint64_t kInitSeed = 1234;
// Large enough that syscall overhead is noise, small enough to stay a realistic user buffer.
constexpr size_t kRawChunkBytes = size_t{16} << 20;
// Decimal megabytes, as disk vendors and `dd` report them.
constexpr double kMB = 1e6;
// The folder is created next to the current directory, so it sits on the disk users save to.
constexpr const char* kScratchName = "ctrainer_bench_checkpoint_io";

struct ModelShape {
  std::string description;
  int64_t vocab, positions, hidden, layers, ffn;
};

ModelShape model_shape(bool quick) {
  if (quick)
    return {"BERT-like: vocab 30522, hidden 256, 4 layers, ffn 1024", 30522, 512, 256, 4, 1024};
  return {
      "BERT-base-like: vocab 30522, hidden 768, 12 layers, ffn 3072", 30522, 512, 768, 12, 3072};
}

/// HF BertModel's parameter names and shapes (nn.Linear weights are [out, in]), random values.
std::map<std::string, at::Tensor> make_tensors(const ModelShape& s) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(kInitSeed);
  std::map<std::string, at::Tensor> out;
  auto add = [&](const std::string& name, std::vector<int64_t> shape) {
    out.emplace(name, at::randn(shape, gen, at::kFloat));
  };
  auto linear = [&](const std::string& name, int64_t in, int64_t outf) {
    add(name + ".weight", {outf, in});
    add(name + ".bias", {outf});
  };
  auto layer_norm = [&](const std::string& name) {
    add(name + ".weight", {s.hidden});
    add(name + ".bias", {s.hidden});
  };
  add("bert.embeddings.word_embeddings.weight", {s.vocab, s.hidden});
  add("bert.embeddings.position_embeddings.weight", {s.positions, s.hidden});
  add("bert.embeddings.token_type_embeddings.weight", {2, s.hidden});
  layer_norm("bert.embeddings.LayerNorm");
  for (int64_t l = 0; l < s.layers; ++l) {
    const std::string p = "bert.encoder.layer." + std::to_string(l) + ".";
    for (const char* m : {"query", "key", "value"}) {
      linear(p + "attention.self." + m, s.hidden, s.hidden);
    }
    linear(p + "attention.output.dense", s.hidden, s.hidden);
    layer_norm(p + "attention.output.LayerNorm");
    linear(p + "intermediate.dense", s.hidden, s.ffn);
    linear(p + "output.dense", s.ffn, s.hidden);
    layer_norm(p + "output.LayerNorm");
  }
  linear("bert.pooler.dense", s.hidden, s.hidden);
  return out;
}

[[noreturn]] void fail_errno(const std::string& what, const fs::path& path) {
  throw std::runtime_error("checkpoint_io: " + what + " " + path.string() + ": " +
                           std::strerror(errno));
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// The baseline: what `dd bs=16M conv=fsync` does. Timed from open to close, as a save is.
double raw_write(const fs::path& path, const std::vector<char>& buffer, uint64_t bytes) {
  const auto start = Clock::now();
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail_errno("cannot create", path);
  for (uint64_t left = bytes; left > 0;) {
    const ssize_t put = ::write(fd, buffer.data(), std::min<uint64_t>(left, buffer.size()));
    if (put < 0 && errno == EINTR) continue;
    if (put <= 0) fail_errno("write failed on", path);
    left -= static_cast<uint64_t>(put);
  }
  if (::fsync(fd) != 0) fail_errno("fsync failed on", path);
  if (::close(fd) != 0) fail_errno("close failed on", path);
  return seconds_since(start);
}

/// Reads the file front to back with the same readahead hint load_safetensors gives.
double raw_read(const fs::path& path, std::vector<char>& buffer, uint64_t expected) {
  const auto start = Clock::now();
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail_errno("cannot open", path);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  uint64_t total = 0;
  for (;;) {
    const ssize_t got = ::read(fd, buffer.data(), buffer.size());
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) fail_errno("read failed on", path);
    if (got == 0) break;
    total += static_cast<uint64_t>(got);
  }
  ::close(fd);
  const double seconds = seconds_since(start);
  if (total != expected) {
    throw std::runtime_error(fmt::format("checkpoint_io: read {} bytes from {}, wrote {}", total,
                                         path.string(), expected));
  }
  return seconds;
}

/// Evicts a written file from the page cache, so the next read comes from the disk, and returns
/// the fraction of its pages still resident afterwards (mincore), which says whether it worked.
/// Only clean pages can be dropped, hence the fdatasync (a no-op after the writers' fsync).
double drop_from_page_cache(const fs::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail_errno("cannot open", path);
  ::fdatasync(fd);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  struct stat st {};
  double resident = 1.0;
  if (::fstat(fd, &st) == 0 && st.st_size > 0) {
    const auto size = static_cast<size_t>(st.st_size);
    void* map = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
    if (map != MAP_FAILED) {
      const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
      std::vector<unsigned char> pages((size + page - 1) / page);
      if (::mincore(map, size, pages.data()) == 0) {
        const auto in_cache =
            std::count_if(pages.begin(), pages.end(), [](unsigned char p) { return (p & 1) != 0; });
        resident = static_cast<double>(in_cache) / static_cast<double>(pages.size());
      }
      ::munmap(map, size);
    }
  }
  ::close(fd);
  return resident;
}

/// Deletes a file or folder and commits the deletion. ext4 can hand freed blocks to a new file
/// only once the journal transaction that freed them has committed; until then new writes land
/// on never-written blocks, which on a thin-provisioned VM disk are several times slower to
/// write. Committing here gives every timed write the same allocator state, whichever operation
/// ran before it.
void remove_and_commit(const fs::path& path) {
  fs::remove_all(path);
  const int fd = ::open(path.parent_path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) fail_errno("cannot open", path.parent_path());
  ::syncfs(fd);
  ::close(fd);
}

/// "ext4 on /dev/vda (mounted at /)": the /proc/self/mounts entry with the longest mount point
/// containing `folder`.
std::string describe_filesystem(const fs::path& folder) {
  const std::string target = fs::canonical(folder).string();
  std::ifstream mounts("/proc/self/mounts");
  std::string line, best_mount, best_desc = "unknown";
  while (std::getline(mounts, line)) {
    std::istringstream fields(line);
    std::string device, mount_point, type;
    if (!(fields >> device >> mount_point >> type)) continue;
    const bool contains =
        target == mount_point || (target.rfind(mount_point, 0) == 0 &&
                                  (mount_point == "/" || target[mount_point.size()] == '/'));
    if (contains && mount_point.size() >= best_mount.size()) {
      best_mount = mount_point;
      best_desc = type + " on " + device + " (mounted at " + mount_point + ")";
    }
  }
  return best_desc;
}

void verify_equal(const std::map<std::string, at::Tensor>& expected,
                  const std::map<std::string, at::Tensor>& loaded) {
  if (loaded.size() != expected.size()) {
    throw std::runtime_error(
        fmt::format("checkpoint_io: loaded {} tensors, saved {}", loaded.size(), expected.size()));
  }
  for (const auto& [name, t] : expected) {
    auto it = loaded.find(name);
    if (it == loaded.end()) throw std::runtime_error("checkpoint_io: tensor " + name + " missing");
    if (it->second.scalar_type() != t.scalar_type() || !at::equal(it->second, t)) {
      throw std::runtime_error("checkpoint_io: tensor " + name + " differs after the round trip");
    }
  }
}

/// Removes the scratch folder on every exit path, so no half-gigabyte files are left behind.
struct ScratchDir {
  fs::path path;
  explicit ScratchDir(fs::path p) : path(std::move(p)) {
    // A leftover from an interrupted run is not deleted silently: the name might be the user's.
    if (fs::exists(path)) {
      throw std::runtime_error("checkpoint_io: " + path.string() +
                               " already exists (left by an interrupted run?); remove it first");
    }
    fs::create_directory(path);
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
};

struct Series {
  std::vector<double> mbps;
  std::vector<double> seconds;
  void add(uint64_t bytes, double s) {
    seconds.push_back(s);
    mbps.push_back(static_cast<double>(bytes) / kMB / s);
  }
};

struct Round {
  double raw_write = 0, raw_read = 0, save = 0, checkpoint = 0, load = 0, crc = 0;
  double max_resident = 0;  // worst page-cache residency seen after a drop
};

BenchResult measure_checkpoint_io(const BenchOptions& options) {
  const ModelShape shape = model_shape(options.quick);
  const int64_t rounds = options.quick ? 1 : options.rounds;
  const auto tensors = make_tensors(shape);
  int64_t num_parameters = 0;
  uint64_t bytes = 0;
  for (const auto& [name, t] : tensors) {
    num_parameters += t.numel();
    bytes += t.nbytes();
  }

  const ScratchDir scratch(fs::absolute(kScratchName));
  const fs::path raw_file = scratch.path / "raw.bin";
  const fs::path model_file = scratch.path / "model.safetensors";
  const fs::path checkpoints = scratch.path / "checkpoints";

  // Random bytes so no layer below (compression, dedup, zero detection) gets an easy ride.
  std::vector<char> write_buffer(kRawChunkBytes), read_buffer(kRawChunkBytes);
  {
    auto gen = at::make_generator<at::CPUGeneratorImpl>(kInitSeed + 1);
    const at::Tensor noise =
        at::randint(256, {static_cast<int64_t>(kRawChunkBytes)}, gen, at::kByte);
    std::memcpy(write_buffer.data(), noise.data_ptr(), kRawChunkBytes);
  }

  auto measure_raw = [&](Round& r) {
    r.raw_write = raw_write(raw_file, write_buffer, bytes);
    r.max_resident = std::max(r.max_resident, drop_from_page_cache(raw_file));
    r.raw_read = raw_read(raw_file, read_buffer, bytes);
    remove_and_commit(raw_file);
  };
  int64_t step = 0;
  auto measure_library = [&](Round& r, bool verify) {
    auto start = Clock::now();
    save_safetensors(model_file.string(), tensors);
    r.save = seconds_since(start);
    r.max_resident = std::max(r.max_resident, drop_from_page_cache(model_file));
    start = Clock::now();
    SafetensorsFile loaded = load_safetensors(model_file.string());
    r.load = seconds_since(start);
    if (verify) verify_equal(tensors, loaded.tensors);
    loaded = {};
    remove_and_commit(model_file);

    // What Trainer::_save_checkpoint does for the model file: temp folder, save, fsync, CRC-32
    // manifest, rename.
    start = Clock::now();
    const fs::path folder = write_checkpoint_atomically(
        checkpoints, ++step,
        [&](const fs::path& d) { save_safetensors((d / "model.safetensors").string(), tensors); });
    r.checkpoint = seconds_since(start);
    // The manifest's CRC pass alone, on the same just-written (page-cached) file.
    start = Clock::now();
    (void)file_crc32(folder / "model.safetensors");
    r.crc = seconds_since(start);
    remove_and_commit(folder);
  };

  {
    Round warm_up;  // thread pools, allocator, file-system metadata; and the one equality check
    measure_raw(warm_up);
    measure_library(warm_up, /*verify=*/true);
  }
  Series raw_write_s, raw_read_s, save_s, checkpoint_s, load_s, crc_s;
  std::vector<double> save_ratios, checkpoint_ratios, load_ratios;
  double max_resident = 0;
  for (int64_t i = 0; i < rounds; ++i) {
    // Alternate the order so neither side always runs right after the other's disk flush.
    Round r;
    if (i % 2 == 0) {
      measure_raw(r);
      measure_library(r, false);
    } else {
      measure_library(r, false);
      measure_raw(r);
    }
    raw_write_s.add(bytes, r.raw_write);
    raw_read_s.add(bytes, r.raw_read);
    save_s.add(bytes, r.save);
    checkpoint_s.add(bytes, r.checkpoint);
    load_s.add(bytes, r.load);
    crc_s.add(bytes, r.crc);
    save_ratios.push_back(r.raw_write / r.save);
    checkpoint_ratios.push_back(r.raw_write / r.checkpoint);
    load_ratios.push_back(r.raw_read / r.load);
    max_resident = std::max(max_resident, r.max_resident);
  }
  const bool cache_dropped = max_resident < 0.01;

  BenchResult result;
  result.scenario = "checkpoint_io";
  result.config["rounds"] = rounds;
  result.config["model"] = shape.description;
  result.config["dtype"] = "float32";
  result.config["num_tensors"] = tensors.size();
  result.config["directory"] = scratch.path.string();
  result.config["filesystem"] = describe_filesystem(scratch.path);
  result.config["raw_io"] = fmt::format(
      "buffered write()/read() of {} MiB chunks from one buffer; write timed open..fsync+close",
      kRawChunkBytes >> 20);
  result.config["page_cache"] =
      cache_dropped
          ? "dropped (fsync + posix_fadvise DONTNEED, checked with mincore) before every read"
          : fmt::format(
                "drop ineffective: up to {:.0f}% of a file stayed cached; reads are "
                "partly from memory",
                100 * max_resident);
  result.config["page_cache_dropped"] = cache_dropped;
  result.config["MB"] = "10^6 bytes of tensor data";
  result.config["between_operations"] =
      "each file is deleted and the deletion committed (syncfs) before the next timed write";

  const double raw_write_mbps = median(raw_write_s.mbps);
  const double raw_read_mbps = median(raw_read_s.mbps);
  auto& m = result.metrics;
  m["bytes"] = bytes;
  m["num_parameters"] = num_parameters;
  auto put = [&](const std::string& key, const std::vector<double>& v) {
    const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
    m[key] = median(v);
    m[key + "_min"] = *lo;
    m[key + "_max"] = *hi;
  };
  put("raw_write_MBps", raw_write_s.mbps);
  put("raw_read_MBps", raw_read_s.mbps);
  put("save_MBps", save_s.mbps);
  put("checkpoint_save_MBps", checkpoint_s.mbps);
  put("load_MBps", load_s.mbps);
  put("crc32_MBps", crc_s.mbps);
  // Headline ratios: median over median, as trainer_overhead does; per-round ones give the spread.
  put("save_ratio", save_ratios);
  put("checkpoint_save_ratio", checkpoint_ratios);
  put("load_ratio", load_ratios);
  m["save_ratio"] = median(save_s.mbps) / raw_write_mbps;
  m["checkpoint_save_ratio"] = median(checkpoint_s.mbps) / raw_write_mbps;
  m["load_ratio"] = median(load_s.mbps) / raw_read_mbps;
  m["ratio"] = m["save_ratio"];

  result.header = {"operation",        "MB/s (median)", "MB/s min..max",
                   "seconds (median)", "ratio",         "ratio min..max"};
  auto row = [&](const std::string& name, const Series& s, const std::string& ratio_key) {
    const auto [lo, hi] = std::minmax_element(s.mbps.begin(), s.mbps.end());
    std::string ratio = "-", spread = "-";
    if (!ratio_key.empty()) {
      ratio = fmt::format("{:.3f}", m[ratio_key].get<double>());
      spread = fmt::format("{:.3f}..{:.3f}", m[ratio_key + "_min"].get<double>(),
                           m[ratio_key + "_max"].get<double>());
    }
    result.rows.push_back(
        {{name, fmt::format("{:.0f}", median(s.mbps)), fmt::format("{:.0f}..{:.0f}", *lo, *hi),
          fmt::format("{:.3f}", median(s.seconds)), ratio, spread}});
  };
  row(fmt::format("raw write ({} MiB writes + fsync)", kRawChunkBytes >> 20), raw_write_s, "");
  row("save_safetensors (vs raw write)", save_s, "save_ratio");
  row("checkpoint: atomic + CRC-32 manifest (vs raw write)", checkpoint_s, "checkpoint_save_ratio");
  row(fmt::format("raw read ({} MiB reads)", kRawChunkBytes >> 20), raw_read_s, "");
  row("load_safetensors (vs raw read)", load_s, "load_ratio");
  row("CRC-32 pass alone (page cache)", crc_s, "");
  return result;
}

BenchResult run_checkpoint_io(const BenchOptions& options) {
  // The handler guarantees the stack is unwound, so ScratchDir deletes the half-gigabyte files
  // even when a failure (e.g. a round-trip mismatch) ends the program.
  try {
    return measure_checkpoint_io(options);
  } catch (...) {
    throw;
  }
}

}  // namespace

Scenario checkpoint_io_scenario() {
  return {"checkpoint_io",
          "save/load MB/s of ~110M fp32 params (safetensors) vs raw disk write/read",
          run_checkpoint_io};
}

}  // namespace ctrainer::bench
