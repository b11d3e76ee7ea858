// Reading safetensors files: the header and the tensor data, from a file descriptor (pread, in
// one sequential pass) or from bytes in memory.
#include <ctrainer/integrations/safetensors_format.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

namespace ctrainer {
namespace {

using namespace safetensors_detail;

constexpr std::size_t kDirectReadBytes = std::size_t{1} << 20;  // larger tensors: one read each
constexpr std::size_t kBatchReadBytes = std::size_t{16} << 20;  // small ones: batched up to this

// Random-access bytes to read a file from: a file descriptor or memory.
class Source {
 public:
  explicit Source(std::string name) : name_(std::move(name)) {}
  virtual ~Source() = default;
  const std::string& name() const { return name_; }
  virtual std::uint64_t size() const = 0;
  /// Reads exactly `n` bytes at `offset` or throws.
  virtual void read_at(std::uint64_t offset, void* dst, std::size_t n) = 0;

 private:
  std::string name_;
};

class MemorySource : public Source {
 public:
  MemorySource(std::string_view bytes, std::string name) : Source(std::move(name)), bytes_(bytes) {}
  std::uint64_t size() const override { return bytes_.size(); }
  void read_at(std::uint64_t offset, void* dst, std::size_t n) override {
    if (offset > bytes_.size() || n > bytes_.size() - offset) {
      fail(name(), "unexpected end of data at byte " + std::to_string(bytes_.size()));
    }
    if (n > 0) std::memcpy(dst, bytes_.data() + offset, n);
  }

 private:
  std::string_view bytes_;
};

class FileSource : public Source {
 public:
  explicit FileSource(const std::string& path) : Source(path) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) fail_errno(path, "cannot open for reading");
    struct stat st {};
    if (::fstat(fd_, &st) != 0) {
      const int err = errno;
      ::close(fd_);
      errno = err;
      fail_errno(path, "cannot stat");
    }
    if (!S_ISREG(st.st_mode)) {
      ::close(fd_);
      fail(path, "not a regular file");
    }
    size_ = static_cast<std::uint64_t>(st.st_size);
    // Loading reads front to back; a hint for larger kernel readahead.
    ::posix_fadvise(fd_, 0, 0, POSIX_FADV_SEQUENTIAL);
  }
  ~FileSource() override { ::close(fd_); }
  FileSource(const FileSource&) = delete;
  FileSource& operator=(const FileSource&) = delete;

  std::uint64_t size() const override { return size_; }
  void read_at(std::uint64_t offset, void* dst, std::size_t n) override {
    auto* out = static_cast<char*>(dst);
    while (n > 0) {
      const ssize_t got = ::pread(fd_, out, std::min(n, kMaxIoChunk), static_cast<off_t>(offset));
      if (got < 0) {
        if (errno == EINTR) continue;
        fail_errno(name(), "read failed at byte " + std::to_string(offset));
      }
      if (got == 0) {
        fail(name(), "unexpected end of file at byte " + std::to_string(offset) +
                         " (the file shrank while being read?)");
      }
      out += got;
      offset += static_cast<std::uint64_t>(got);
      n -= static_cast<std::size_t>(got);
    }
  }

 private:
  int fd_ = -1;
  std::uint64_t size_ = 0;
};

SafetensorsHeader read_header(Source& src) {
  const std::uint64_t size = src.size();
  if (size < 8) {
    fail(src.name(),
         "the file is " + std::to_string(size) + " bytes, too short for the 8-byte header length");
  }
  std::uint64_t n = 0;
  src.read_at(0, &n, sizeof(n));  // little-endian on disk and (static_assert) in memory
  if (n > kSafetensorsMaxHeaderBytes) {
    fail(src.name(), "header length " + std::to_string(n) + " exceeds the limit of " +
                         std::to_string(kSafetensorsMaxHeaderBytes) + " bytes");
  }
  if (n > size - 8) {
    fail(src.name(), "header length " + std::to_string(n) + " runs past the end of the file (" +
                         std::to_string(size) + " bytes)");
  }
  std::string text(n, '\0');
  src.read_at(8, text.data(), text.size());
  SafetensorsHeader header = parse_header(text, size - 8 - n, src.name());
  header.header_bytes = n;
  return header;
}

SafetensorsFile read_all(Source& src) {
  SafetensorsHeader header = read_header(src);
  const std::uint64_t base = 8 + header.header_bytes;
  const auto& infos = header.tensors;

  std::vector<at::Tensor> tensors;
  tensors.reserve(infos.size());
  for (const auto& info : infos) {
    tensors.push_back(at::empty(info.shape, at::TensorOptions().dtype(info.dtype)));
  }

  // Tensors tile the data section in this order (validated), so reading them in order is one
  // sequential pass. Large tensors are read straight into their memory; runs of small ones
  // share one read into a staging buffer, so many tiny tensors do not cost a syscall each.
  std::vector<char> staging;
  std::size_t i = 0;
  while (i < infos.size()) {
    const std::size_t len = infos[i].data_end - infos[i].data_begin;
    if (len >= kDirectReadBytes) {
      src.read_at(base + infos[i].data_begin, tensors[i].data_ptr(), len);
      ++i;
      continue;
    }
    const std::uint64_t run_begin = infos[i].data_begin;
    std::size_t j = i;
    while (j < infos.size() && infos[j].data_end - infos[j].data_begin < kDirectReadBytes &&
           infos[j].data_end - run_begin <= kBatchReadBytes) {
      ++j;
    }
    staging.resize(infos[j - 1].data_end - run_begin);
    src.read_at(base + run_begin, staging.data(), staging.size());
    for (std::size_t k = i; k < j; ++k) {
      const std::size_t n = infos[k].data_end - infos[k].data_begin;
      if (n > 0)
        std::memcpy(tensors[k].data_ptr(), staging.data() + (infos[k].data_begin - run_begin), n);
    }
    i = j;
  }

  SafetensorsFile file;
  for (std::size_t k = 0; k < infos.size(); ++k) {
    // A C++ bool holding any byte but 0 or 1 is undefined behaviour in every later op.
    if (infos[k].dtype == at::kBool) {
      const auto* bytes = static_cast<const std::uint8_t*>(tensors[k].data_ptr());
      const std::size_t n = infos[k].data_end - infos[k].data_begin;
      const auto* bad = std::find_if(bytes, bytes + n, [](std::uint8_t b) { return b > 1; });
      if (bad != bytes + n) {
        fail_tensor(src.name(), infos[k].name,
                    "BOOL element " + std::to_string(bad - bytes) + " is byte " +
                        std::to_string(*bad) + ", must be 0 or 1");
      }
    }
    file.tensors.emplace(infos[k].name, std::move(tensors[k]));
  }
  file.metadata = std::move(header.metadata);
  return file;
}

}  // namespace

SafetensorsFile load_safetensors(const std::string& path) {
  FileSource src(path);
  return read_all(src);
}

SafetensorsFile deserialize_safetensors(std::string_view bytes, const std::string& source_name) {
  MemorySource src(bytes, source_name);
  return read_all(src);
}

SafetensorsHeader read_safetensors_header(const std::string& path) {
  FileSource src(path);
  return read_header(src);
}

}  // namespace ctrainer
