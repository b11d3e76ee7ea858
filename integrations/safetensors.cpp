#include <ctrainer/integrations/safetensors.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <limits>
#include <optional>
#include <set>
#include <utility>

#include <nlohmann/json.hpp>

namespace ctrainer {
namespace {

// The format stores little-endian bytes and tensors are written and read as raw memory.
static_assert(std::endian::native == std::endian::little,
              "safetensors I/O copies tensor memory as-is and needs a little-endian host");

using json = nlohmann::json;

struct DtypeInfo {
  const char* name;
  at::ScalarType type;
  std::size_t size;
};

// In the order of the reference implementation's Dtype enum (increasing alignment). Writing in
// reverse order of this table reproduces its data layout: largest elements first.
// In the order of the reference writer's dtype enum: it lays tensors out by decreasing rank
// (checked against safetensors 0.8's Python package in the golden test).
constexpr DtypeInfo kDtypes[] = {
    {"BOOL", at::kBool, 1},
    {"U8", at::kByte, 1},
    {"I8", at::kChar, 1},
    {"F8_E5M2", at::kFloat8_e5m2, 1},
    {"F8_E4M3", at::kFloat8_e4m3fn, 1},
    {"F8_E4M3FNUZ", at::kFloat8_e4m3fnuz, 1},
    {"F8_E5M2FNUZ", at::kFloat8_e5m2fnuz, 1},
    {"I16", at::kShort, 2},
    {"U16", at::kUInt16, 2},
    {"F16", at::kHalf, 2},
    {"BF16", at::kBFloat16, 2},
    {"I32", at::kInt, 4},
    {"U32", at::kUInt32, 4},
    {"F32", at::kFloat, 4},
    {"C64", at::kComplexFloat, 8},
    {"F64", at::kDouble, 8},
    {"I64", at::kLong, 8},
    {"U64", at::kUInt64, 8},
};
constexpr const char* kSupportedList =
    "F64, F32, F16, BF16, C64, I64, I32, I16, I8, U64, U32, U16, U8, BOOL, F8_E4M3, F8_E5M2, "
    "F8_E4M3FNUZ, F8_E5M2FNUZ";

constexpr std::size_t kDirectReadBytes = std::size_t{1} << 20;  // larger tensors: one read each
constexpr std::size_t kBatchReadBytes = std::size_t{16} << 20;  // small ones: batched up to this
constexpr std::size_t kWriteBufferBytes = std::size_t{4} << 20;
// A single read()/write() transfers at most ~2 GiB on Linux; stay well below.
constexpr std::size_t kMaxIoChunk = std::size_t{1} << 30;

const DtypeInfo* find_dtype(std::string_view name) {
  for (const auto& d : kDtypes) {
    if (name == d.name) return &d;
  }
  return nullptr;
}

const DtypeInfo* find_dtype(at::ScalarType type) {
  for (const auto& d : kDtypes) {
    if (type == d.type) return &d;
  }
  return nullptr;
}

[[noreturn]] void fail(const std::string& source, const std::string& what) {
  throw SafetensorsError("safetensors file '" + source + "': " + what);
}

[[noreturn]] void fail_errno(const std::string& source, const std::string& action) {
  const int err = errno;
  fail(source, action + ": " + std::strerror(err));
}

// A name from the file, quoted and cut short: hostile headers may hold megabyte-long keys.
std::string shown(std::string_view name) {
  constexpr std::size_t kMax = 200;
  if (name.size() <= kMax) return "'" + std::string(name) + "'";
  return "'" + std::string(name.substr(0, kMax)) + "...' (" + std::to_string(name.size()) +
         " bytes)";
}

[[noreturn]] void fail_tensor(const std::string& source, std::string_view name,
                              const std::string& what) {
  fail(source, "tensor " + shown(name) + ": " + what);
}

// A JSON value for an error message. Only scalars are dumped: dumping is recursive, and a deeply
// nested hostile value could exhaust the stack.
std::string describe(const json& v) {
  if (v.is_string()) return "the string " + shown(v.get_ref<const std::string&>());
  if (v.is_number() || v.is_boolean() || v.is_null()) return v.dump();
  if (v.is_array()) return "an array of " + std::to_string(v.size()) + " elements";
  return "an object";
}

std::string shape_string(const std::vector<std::int64_t>& shape) {
  constexpr std::size_t kMaxDims = 16;
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size() && i < kMaxDims; ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(shape[i]);
  }
  if (shape.size() > kMaxDims) s += ", ... (" + std::to_string(shape.size()) + " dims)";
  return s + "]";
}

std::string range_string(std::uint64_t begin, std::uint64_t end) {
  return "[" + std::to_string(begin) + ", " + std::to_string(end) + "]";
}

// JSON numbers that are integers >= 0 and fit in u64 (the parser makes those number_unsigned).
std::optional<std::uint64_t> as_u64(const json& v) {
  if (v.is_number_unsigned()) return v.get<std::uint64_t>();
  if (v.is_number_integer() && v.get<std::int64_t>() >= 0) {
    return static_cast<std::uint64_t>(v.get<std::int64_t>());
  }
  return std::nullopt;
}

// Parses JSON and rejects duplicate keys in any object: the DOM keeps only the last of them,
// which would silently hide a tensor or metadata entry.
json parse_json_rejecting_duplicates(std::string_view text, const std::string& source) {
  std::vector<std::set<std::string>> open_objects;
  std::optional<std::string> duplicate;
  auto callback = [&](int /*depth*/, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
        open_objects.emplace_back();
        break;
      case json::parse_event_t::object_end:
        if (!open_objects.empty()) open_objects.pop_back();
        break;
      case json::parse_event_t::key:
        if (!open_objects.empty() && !duplicate &&
            !open_objects.back().insert(parsed.get_ref<const std::string&>()).second) {
          duplicate = parsed.get_ref<const std::string&>();
        }
        break;
      default:
        break;
    }
    return true;
  };
  json root;
  try {
    root = json::parse(text.begin(), text.end(), callback);
  } catch (const json::exception& e) {
    fail(source, std::string("header is not valid UTF-8 JSON: ") + e.what());
  }
  if (duplicate) fail(source, "duplicate key " + shown(*duplicate) + " in the header");
  return root;
}

SafetensorsTensorInfo parse_entry(const std::string& name, const json& entry,
                                  std::uint64_t data_len, const std::string& source) {
  if (!entry.is_object()) {
    fail_tensor(
        source, name,
        "entry must be an object with dtype, shape and data_offsets, got " + describe(entry));
  }
  auto field = [&](const char* key) -> const json& {
    auto it = entry.find(key);
    if (it == entry.end()) fail_tensor(source, name, std::string("missing '") + key + "'");
    return *it;
  };

  SafetensorsTensorInfo info;
  info.name = name;

  const json& dtype = field("dtype");
  if (!dtype.is_string()) {
    fail_tensor(source, name, "'dtype' must be a string, got " + describe(dtype));
  }
  const std::string& dtype_name = dtype.get_ref<const std::string&>();
  const DtypeInfo* dt = find_dtype(dtype_name);
  if (dt == nullptr) {
    fail_tensor(source, name,
                "unknown dtype " + shown(dtype_name) + " (supported: " + kSupportedList + ")");
  }
  info.dtype = dt->type;

  const json& shape = field("shape");
  if (!shape.is_array()) {
    fail_tensor(source, name,
                "'shape' must be an array of non-negative integers, got " + describe(shape));
  }
  constexpr auto kInt64Max = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  std::uint64_t numel = 1;
  // Product of max(dim, 1): libtorch computes contiguous strides from it in int64 even when
  // numel is 0, so it must not overflow either.
  std::uint64_t extent = 1;
  bool overflow = false;
  info.shape.reserve(shape.size());
  for (std::size_t i = 0; i < shape.size(); ++i) {
    std::optional<std::uint64_t> dim = as_u64(shape[i]);
    if (!dim || *dim > kInt64Max) {
      fail_tensor(source, name,
                  "'shape' must be an array of non-negative integers, element " +
                      std::to_string(i) + " is " + describe(shape[i]));
    }
    info.shape.push_back(static_cast<std::int64_t>(*dim));
    overflow |= __builtin_mul_overflow(numel, *dim, &numel);
    overflow |= __builtin_mul_overflow(extent, std::max<std::uint64_t>(*dim, 1), &extent);
  }
  std::uint64_t nbytes = 0;
  overflow |= extent > kInt64Max || __builtin_mul_overflow(numel, dt->size, &nbytes);
  if (overflow) {
    fail_tensor(source, name, "shape " + shape_string(info.shape) + " is too large");
  }

  const json& offsets = field("data_offsets");
  std::optional<std::uint64_t> begin, end;
  if (offsets.is_array() && offsets.size() == 2) {
    begin = as_u64(offsets[0]);
    end = as_u64(offsets[1]);
  }
  if (!begin || !end) {
    std::string got = describe(offsets);
    if (offsets.is_array() && offsets.size() == 2) {
      got = "[" + describe(offsets[0]) + ", " + describe(offsets[1]) + "]";
    }
    fail_tensor(
        source, name,
        "'data_offsets' must be an array of two non-negative integers [begin, end], got " + got);
  }
  info.data_begin = *begin;
  info.data_end = *end;
  const std::string range = range_string(*begin, *end);
  if (*end < *begin) fail_tensor(source, name, "data_offsets " + range + " end before they begin");
  if (*end > data_len) {
    fail_tensor(source, name,
                "data_offsets " + range + " are out of range: the data section is " +
                    std::to_string(data_len) + " bytes");
  }
  if (*end - *begin != nbytes) {
    fail_tensor(source, name,
                "data_offsets " + range + " span " + std::to_string(*end - *begin) +
                    " bytes, but shape " + shape_string(info.shape) + " of dtype " + dt->name +
                    " needs " + std::to_string(nbytes) + " bytes");
  }
  return info;
}

// Validates the JSON header of a file whose data section holds `data_len` bytes.
SafetensorsHeader parse_header(std::string_view text, std::uint64_t data_len,
                               const std::string& source) {
  // The reference reader requires this too; it also rules out every non-object top level.
  if (text.empty() || text.front() != '{') {
    fail(source, "the header must be a JSON object starting with '{'");
  }
  // nlohmann's lexer takes a NUL byte for the end of input, which would accept "{}\0garbage";
  // JSON text never contains a raw NUL (strings must escape it).
  if (const std::size_t nul = text.find('\0'); nul != std::string_view::npos) {
    fail(source, "header is not valid UTF-8 JSON: NUL byte at offset " + std::to_string(nul));
  }
  const json root = parse_json_rejecting_duplicates(text, source);
  if (!root.is_object()) fail(source, "the header must be a JSON object, got " + describe(root));

  SafetensorsHeader header;
  for (const auto& [key, value] : root.items()) {
    if (key == "__metadata__") {
      if (!value.is_object()) {
        fail(source, "'__metadata__' must be an object of string values, got " + describe(value));
      }
      for (const auto& [mkey, mvalue] : value.items()) {
        if (!mvalue.is_string()) {
          fail(source, "'__metadata__' must be an object of string values, but key " + shown(mkey) +
                           " holds " + describe(mvalue));
        }
        header.metadata.emplace(mkey, mvalue.get<std::string>());
      }
      continue;
    }
    header.tensors.push_back(parse_entry(key, value, data_len, source));
  }

  // Entries may come in any order in the JSON; their byte ranges must tile the data section.
  std::stable_sort(header.tensors.begin(), header.tensors.end(),
                   [](const SafetensorsTensorInfo& a, const SafetensorsTensorInfo& b) {
                     return std::pair(a.data_begin, a.data_end) <
                            std::pair(b.data_begin, b.data_end);
                   });
  std::uint64_t covered = 0;
  const SafetensorsTensorInfo* previous = nullptr;
  for (const auto& t : header.tensors) {
    if (t.data_begin > covered) {
      fail(source, "hole in the data section: bytes " + range_string(covered, t.data_begin) +
                       " belong to no tensor (tensor " + shown(t.name) + " starts at " +
                       std::to_string(t.data_begin) +
                       (previous ? ", tensor " + shown(previous->name) + " ends at " +
                                       std::to_string(covered)
                                 : std::string()) +
                       ")");
    }
    if (t.data_begin < covered) {
      fail(source, "tensor " + shown(t.name) + " at data_offsets " +
                       range_string(t.data_begin, t.data_end) + " overlaps tensor " +
                       shown(previous->name) + " at " +
                       range_string(previous->data_begin, previous->data_end));
    }
    covered = t.data_end;
    previous = &t;
  }
  if (covered != data_len) {
    fail(source, "the data section is " + std::to_string(data_len) +
                     " bytes but the tensors end at byte " + std::to_string(covered) + ": " +
                     std::to_string(data_len - covered) + " trailing bytes");
  }
  return header;
}

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

// ---- writing -----------------------------------------------------------------------------------

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

std::string safetensors_dtype_name(at::ScalarType dtype) {
  const DtypeInfo* d = find_dtype(dtype);
  if (d == nullptr) {
    throw SafetensorsError(std::string("dtype ") + c10::toString(dtype) +
                           " cannot be stored in safetensors (supported: " + kSupportedList + ")");
  }
  return d->name;
}

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
