#pragma once
/// \file Vocab: a WordPiece vocabulary file (one token per line, line index = id).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace ctrainer {

/// Token <-> id table of a BERT vocabulary. Lookups take string_views (no allocation).
class Vocab {
 public:
  /// Reads `path`: UTF-8, one token per line, LF or final-line-without-newline. Throws
  /// ArgumentError naming `path:line` for an unreadable or empty file, an empty line, a CR
  /// (CRLF file), invalid UTF-8 or a duplicate token.
  static Vocab load(const std::string& path);
  /// Builds a vocabulary from tokens in id order; `source` names it in error messages.
  static Vocab from_tokens(std::vector<std::string> tokens,
                           const std::string& source = "<in-memory vocab>");

  /// The id of `token`, or nullopt when it is not in the vocabulary.
  std::optional<int64_t> find(std::string_view token) const {
    auto it = ids_.find(token);
    if (it == ids_.end()) return std::nullopt;
    return it->second;
  }
  /// The token of `id`; throws ArgumentError when `id` is outside [0, size()).
  const std::string& token(int64_t id) const;
  int64_t size() const { return static_cast<int64_t>(tokens_.size()); }
  /// Length in bytes of the longest token: lookups of longer strings can be skipped.
  size_t max_token_bytes() const { return max_token_bytes_; }
  /// Where the vocabulary came from (file path), for error messages.
  const std::string& source() const { return source_; }

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };

  std::string source_;
  std::vector<std::string> tokens_;
  std::unordered_map<std::string, int64_t, Hash, std::equal_to<>> ids_;
  size_t max_token_bytes_ = 0;
};

}  // namespace ctrainer
