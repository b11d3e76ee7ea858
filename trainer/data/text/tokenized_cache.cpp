#include <ctrainer/trainer/data/text/tokenized_cache.h>

#include <unistd.h>

#include <bit>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <ctrainer/core/content_hash.h>

namespace ctrainer {
namespace {

// Columns are stored in native byte order; the format is defined for little-endian hosts only.
static_assert(std::endian::native == std::endian::little,
              "the tokenized cache format is little-endian");

constexpr char kMagic[8] = {'C', 'T', 'R', 'T', 'O', 'K', 'D', 'S'};

/// Appends raw bytes to a buffer and hashes them.
class Writer {
 public:
  void bytes(const void* data, size_t size) {
    const auto* p = static_cast<const char*>(data);
    buffer_.append(p, size);
  }
  void u64(uint64_t v) { bytes(&v, sizeof v); }
  template <typename T>
  void column(const std::vector<T>& values) {
    u64(values.size());
    bytes(values.data(), values.size() * sizeof(T));
  }
  std::string finish() {
    const uint64_t h = ContentHasher().update(buffer_).digest();
    u64(h);
    return std::move(buffer_);
  }

 private:
  std::string buffer_;
};

/// Reads from a buffer; every read checks the remaining size, so a truncated file is an error.
class Reader {
 public:
  explicit Reader(std::string_view data) : data_(data) {}
  void bytes(void* out, size_t size) {
    if (size > data_.size() - pos_) throw std::runtime_error("truncated file");
    if (size == 0) return;  // `out` may be the null data() of an empty vector (UBSan)
    std::memcpy(out, data_.data() + pos_, size);
    pos_ += size;
  }
  uint64_t u64() {
    uint64_t v = 0;
    bytes(&v, sizeof v);
    return v;
  }
  template <typename T>
  std::vector<T> column() {
    const uint64_t count = u64();
    if (count > (data_.size() - pos_) / sizeof(T)) throw std::runtime_error("truncated file");
    std::vector<T> values(static_cast<size_t>(count));
    bytes(values.data(), values.size() * sizeof(T));
    return values;
  }
  size_t position() const { return pos_; }

 private:
  std::string_view data_;
  size_t pos_ = 0;
};

}  // namespace

void save_tokenized_cache(const std::string& path, const nlohmann::json& key,
                          const TokenizedData& data) {
  Writer w;
  w.bytes(kMagic, sizeof kMagic);
  w.u64(kTokenizedCacheVersion);
  const std::string key_text = key.dump();
  w.u64(key_text.size());
  w.bytes(key_text.data(), key_text.size());
  w.u64(static_cast<uint64_t>(data.label_kind));
  w.column(data.offsets);
  w.column(data.input_ids);
  w.column(data.token_type_ids);
  w.column(data.attention_mask);
  w.column(data.labels);
  w.column(data.scores);
  const std::string bytes = w.finish();

  namespace fs = std::filesystem;
  const fs::path target(path);
  if (target.has_parent_path()) fs::create_directories(target.parent_path());
  // Unique per process and thread: concurrent writers of one key never share a temporary file.
  const fs::path temp = target.string() + ".tmp." + std::to_string(::getpid()) + "." +
                        std::to_string(std::hash<std::thread::id>{}(std::this_thread::get_id()));
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.flush();
    if (!out) {
      std::error_code ignored;
      fs::remove(temp, ignored);
      throw std::runtime_error("cannot write the tokenization cache file " + temp.string());
    }
  }
  std::error_code ec;
  fs::rename(temp, target, ec);
  if (ec) {
    fs::remove(temp, ec);
    throw std::runtime_error("cannot rename the tokenization cache file to " + path);
  }
}

TokenizedCacheLoad load_tokenized_cache(const std::string& path,
                                        const nlohmann::json& expected_key) {
  TokenizedCacheLoad result;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return result;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    result.problem = "cannot open it";
    return result;
  }
  std::ostringstream content;
  content << in.rdbuf();
  const std::string bytes = std::move(content).str();
  try {
    if (bytes.size() < sizeof kMagic + 8 || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0)
      throw std::runtime_error("not a tokenization cache file (bad magic)");
    const std::string_view body(bytes.data(), bytes.size() - 8);
    uint64_t stored_hash = 0;
    std::memcpy(&stored_hash, bytes.data() + body.size(), sizeof stored_hash);
    if (ContentHasher().update(body).digest() != stored_hash)
      throw std::runtime_error("content hash mismatch (truncated or corrupted)");
    Reader r(body);
    char magic[sizeof kMagic];
    r.bytes(magic, sizeof magic);
    const uint64_t version = r.u64();
    if (version != static_cast<uint64_t>(kTokenizedCacheVersion))
      throw std::runtime_error("format version " + std::to_string(version) + ", expected " +
                               std::to_string(kTokenizedCacheVersion));
    const uint64_t key_size = r.u64();
    if (key_size > body.size()) throw std::runtime_error("truncated file");
    std::string key_text(static_cast<size_t>(key_size), '\0');
    r.bytes(key_text.data(), key_text.size());
    if (nlohmann::json::parse(key_text) != expected_key)
      throw std::runtime_error("written for another input (key " + key_text + ")");
    TokenizedData data;
    const uint64_t kind = r.u64();
    if (kind > static_cast<uint64_t>(LabelKind::kScore))
      throw std::runtime_error("unknown label kind " + std::to_string(kind));
    data.label_kind = static_cast<LabelKind>(kind);
    data.offsets = r.column<int64_t>();
    data.input_ids = r.column<int32_t>();
    data.token_type_ids = r.column<uint8_t>();
    data.attention_mask = r.column<uint8_t>();
    data.labels = r.column<int64_t>();
    data.scores = r.column<float>();
    if (r.position() != body.size()) throw std::runtime_error("trailing bytes");
    data.check_consistent();
    result.data = std::move(data);
  } catch (const std::exception& e) {
    result.problem = e.what();
  }
  return result;
}

}  // namespace ctrainer
