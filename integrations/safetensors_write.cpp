// Writing safetensors files: checking the tensors and planning their layout, building the JSON
// header, and streaming the bytes to a file (fsync'ed) or to memory.
#include <ctrainer/integrations/safetensors_format.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <iterator>

#include <nlohmann/json.hpp>

#include <ctrainer/core/write_faults.h>

namespace ctrainer {
namespace {

using namespace safetensors_detail;
using json = nlohmann::json;

constexpr std::size_t kWriteBufferBytes = std::size_t{4} << 20;

struct PlannedTensor {
  const std::string* name;
  const at::Tensor* tensor;
  const DtypeInfo* dtype;
  std::uint64_t nbytes;
  std::uint64_t begin;
};

// Checks every tensor and assigns its byte range, before anything is written.
std::vector<PlannedTensor> plan_layout(const std::map<std::string, at::Tensor>& tensors,
                                       const std::string& dest) {
  std::vector<PlannedTensor> plan;
  plan.reserve(tensors.size());
  for (const auto& [name, t] : tensors) {
    if (name == "__metadata__") {
      fail(dest, "'__metadata__' is reserved for metadata and cannot name a tensor");
    }
    if (!t.defined()) fail_tensor(dest, name, "is undefined");
    if (t.layout() != at::kStrided) {
      fail_tensor(dest, name, "has a non-strided (sparse or mkldnn) layout; convert it to dense");
    }
    if (t.is_meta()) fail_tensor(dest, name, "is on the meta device and has no data");
    const DtypeInfo* dt = find_dtype(t.scalar_type());
    if (dt == nullptr) {
      fail_tensor(dest, name,
                  std::string("dtype ") + c10::toString(t.scalar_type()) +
                      " cannot be stored in safetensors (supported: " + kSupportedList + ")");
    }
    plan.push_back({&name, &t, dt, static_cast<std::uint64_t>(t.numel()) * dt->size, 0});
  }
  // The map already orders by name; a stable sort by decreasing dtype rank (the reference
  // writer's order) keeps every tensor aligned to its element size.
  auto rank = [](const DtypeInfo* d) { return d - std::begin(kDtypes); };
  std::stable_sort(plan.begin(), plan.end(), [&](const PlannedTensor& a, const PlannedTensor& b) {
    return rank(a.dtype) > rank(b.dtype);
  });
  std::uint64_t offset = 0;
  for (auto& p : plan) {
    p.begin = offset;
    offset += p.nbytes;
  }
  return plan;
}

std::string json_string(const std::string& s, const std::string& what, const std::string& dest) {
  try {
    return json(s).dump();
  } catch (const json::exception&) {
    fail(dest, what + " " + shown(s) + " is not valid UTF-8");
  }
}

std::string build_header(const std::vector<PlannedTensor>& plan,
                         const std::map<std::string, std::string>& metadata,
                         const std::string& dest) {
  std::map<std::string, std::string> md = metadata;
  md.emplace("format", "pt");  // what transformers checks for; kept if the caller set one
  std::string h = "{\"__metadata__\":{";
  bool first = true;
  for (const auto& [key, value] : md) {
    if (!first) h += ',';
    first = false;
    h += json_string(key, "metadata key", dest) + ':' + json_string(value, "metadata value", dest);
  }
  h += '}';
  for (const auto& p : plan) {
    h += ',' + json_string(*p.name, "tensor name", dest) + ":{\"dtype\":\"" + p.dtype->name +
         "\",\"shape\":[";
    for (std::int64_t d = 0; d < p.tensor->dim(); ++d) {
      if (d > 0) h += ',';
      h += std::to_string(p.tensor->size(d));
    }
    h += "],\"data_offsets\":[" + std::to_string(p.begin) + ',' +
         std::to_string(p.begin + p.nbytes) + "]}";
  }
  h += '}';
  // Padding makes the data section start 8-byte aligned in the file (and in an mmap of it).
  h.append((8 - h.size() % 8) % 8, ' ');
  return h;
}

class Sink {
 public:
  virtual ~Sink() = default;
  virtual void write(const void* data, std::size_t n) = 0;
};

class StringSink : public Sink {
 public:
  explicit StringSink(std::string& out) : out_(out) {}
  void write(const void* data, std::size_t n) override {
    out_.append(static_cast<const char*>(data), n);
  }

 private:
  std::string& out_;
};

// Buffers small pieces so the file is written in large sequential writes.
class FileSink : public Sink {
 public:
  FileSink(int fd, const std::string& path) : fd_(fd), path_(path) {
    buffer_.reserve(kWriteBufferBytes);
  }
  void write(const void* data, std::size_t n) override {
    if (buffer_.size() + n > kWriteBufferBytes) flush();
    if (n >= kWriteBufferBytes) {
      write_fully(static_cast<const char*>(data), n);
    } else {
      buffer_.insert(buffer_.end(), static_cast<const char*>(data),
                     static_cast<const char*>(data) + n);
    }
  }
  void flush() {
    write_fully(buffer_.data(), buffer_.size());
    buffer_.clear();
  }

 private:
  void write_fully(const char* p, std::size_t n) {
    while (n > 0) {
      const ssize_t put = ::write(fd_, p, std::min(n, kMaxIoChunk));
      if (put < 0) {
        if (errno == EINTR) continue;
        fail_errno(path_, "write failed");
      }
      if (put == 0) fail(path_, "write failed: no bytes written (device full?)");
      p += put;
      n -= static_cast<std::size_t>(put);
    }
  }

  int fd_;
  const std::string& path_;
  std::vector<char> buffer_;
};

void write_file(Sink& sink, const std::vector<PlannedTensor>& plan, const std::string& header,
                const std::string& dest) {
  const std::uint64_t n = header.size();
  sink.write(&n, sizeof(n));  // little-endian (static_assert)
  sink.write(header.data(), header.size());
  for (const auto& p : plan) {
    if (p.nbytes == 0) continue;
    at::Tensor c;
    try {
      // One tensor at a time, so at most one extra copy is alive. resolve_neg() materialises a
      // lazily negated view, which contiguous() alone would leave negated.
      c = p.tensor->detach().to(at::kCPU).resolve_neg().contiguous();
    } catch (const c10::Error& e) {
      fail_tensor(
          dest, *p.name,
          std::string("cannot copy to contiguous CPU memory: ") + e.what_without_backtrace());
    }
    // The header is already out; a tensor resized meanwhile would silently corrupt the file.
    if (c.nbytes() != p.nbytes) fail_tensor(dest, *p.name, "changed size while being written");
    sink.write(c.data_ptr(), p.nbytes);
  }
}

}  // namespace

std::string serialize_safetensors(const std::map<std::string, at::Tensor>& tensors,
                                  const std::map<std::string, std::string>& metadata) {
  const std::string dest = "<memory>";
  const std::vector<PlannedTensor> plan = plan_layout(tensors, dest);
  const std::string header = build_header(plan, metadata, dest);
  std::uint64_t total = 8 + header.size();
  for (const auto& p : plan) total += p.nbytes;
  std::string out;
  out.reserve(total);
  StringSink sink(out);
  write_file(sink, plan, header, dest);
  return out;
}

void save_safetensors(const std::string& path, const std::map<std::string, at::Tensor>& tensors,
                      const std::map<std::string, std::string>& metadata) {
  const std::vector<PlannedTensor> plan = plan_layout(tensors, path);
  const std::string header = build_header(plan, metadata, path);

  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail_errno(path, "cannot open for writing");
  // Only a regular file is removed on failure: the path may be a device such as /dev/null.
  struct stat st {};
  const bool regular = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  try {
    if (const int injected = write_fault(path)) {  // tests: a failing disk (write_faults.h)
      errno = injected;
      fail_errno(path, "write failed");
    }
    FileSink sink(fd, path);
    write_file(sink, plan, header, path);
    sink.flush();
    // EINVAL/EROFS: the path is a special file that cannot be synced, which is not an error.
    if (::fsync(fd) != 0 && errno != EINVAL && errno != EROFS) fail_errno(path, "fsync failed");
    const int rc = ::close(fd);
    fd = -1;
    if (rc != 0 && errno != EINTR) fail_errno(path, "close failed");
  } catch (...) {
    if (fd >= 0) ::close(fd);
    if (regular) ::unlink(path.c_str());
    throw;
  }
}

}  // namespace ctrainer
