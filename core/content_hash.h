#pragma once
/// \file A 64-bit content hash (FNV-1a) for cache keys: fast, deterministic across runs and
/// machines. Not cryptographic: it tells "same input" from "changed input", nothing more.
#include <cstdint>
#include <string>
#include <string_view>

namespace ctrainer {

/// Incremental FNV-1a over bytes.
class ContentHasher {
 public:
  ContentHasher& update(const void* data, size_t size);
  ContentHasher& update(std::string_view bytes) { return update(bytes.data(), bytes.size()); }
  /// Adds an integer (as 8 little-endian bytes) so that adjacent fields cannot run together.
  ContentHasher& update_int(int64_t value);
  /// Adds a string with its length prefix (so {"ab","c"} and {"a","bc"} differ).
  ContentHasher& update_field(std::string_view bytes);
  uint64_t digest() const { return state_; }
  /// digest() as 16 lowercase hex digits.
  std::string hex() const;

 private:
  uint64_t state_ = 0xcbf29ce484222325ULL;
};

/// Hash of the bytes of the file at `path`; throws ArgumentError naming it when unreadable.
uint64_t hash_file(const std::string& path);

/// 16 lowercase hex digits of `value`.
std::string to_hex(uint64_t value);

}  // namespace ctrainer
