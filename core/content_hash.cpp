#include <ctrainer/core/content_hash.h>

#include <fstream>
#include <vector>

#include <ctrainer/core/errors.h>

namespace ctrainer {

ContentHasher& ContentHasher::update(const void* data, size_t size) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  uint64_t h = state_;
  for (size_t i = 0; i < size; ++i) {
    h ^= bytes[i];
    h *= 0x100000001b3ULL;
  }
  state_ = h;
  return *this;
}

ContentHasher& ContentHasher::update_int(int64_t value) {
  unsigned char bytes[8];
  for (int i = 0; i < 8; ++i)
    bytes[i] = static_cast<unsigned char>(static_cast<uint64_t>(value) >> (8 * i));
  return update(bytes, sizeof bytes);
}

ContentHasher& ContentHasher::update_field(std::string_view bytes) {
  update_int(static_cast<int64_t>(bytes.size()));
  return update(bytes);
}

std::string to_hex(uint64_t value) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i, value >>= 4) out[static_cast<size_t>(i)] = kDigits[value & 0xF];
  return out;
}

std::string ContentHasher::hex() const {
  return to_hex(state_);
}

uint64_t hash_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ArgumentError("cannot read " + path + " to hash it: no such file or not readable");
  ContentHasher hasher;
  std::vector<char> buffer(1 << 20);
  while (in) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    hasher.update(buffer.data(), static_cast<size_t>(in.gcount()));
  }
  if (in.bad()) throw ArgumentError("cannot read " + path + " to hash it: I/O error");
  return hasher.digest();
}

}  // namespace ctrainer
