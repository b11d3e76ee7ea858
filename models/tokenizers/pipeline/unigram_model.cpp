// The Unigram model as HF tokenizers' models::unigram (SentencePiece's): the best-scoring
// segmentation of a word into vocabulary pieces (Viterbi over the sum of log-probabilities);
// a character no piece starts with is an unknown piece scored min_score - 10, consecutive
// unknowns fuse into one token whose text is the original characters, and with byte_fallback
// an unknown piece becomes its bytes' <0xNN> tokens.
#include <ctrainer/models/tokenizers/pipeline/token_models.h>

#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include <ctrainer/core/errors.h>
#include <ctrainer/models/tokenizers/pipeline/json_fields.h>

namespace ctrainer::tokenizers {

namespace {

using nlohmann::json;

constexpr double kUnknownPenalty = 10.0;

/// A byte trie of the pieces, for "every piece that starts here".
class PieceTrie {
 public:
  PieceTrie() : nodes_(1) {}
  void insert(const std::string& piece, int64_t id) {
    size_t node = 0;
    for (unsigned char c : piece) {
      auto& children = nodes_[node].children;
      auto it =
          std::lower_bound(children.begin(), children.end(), c,
                           [](const auto& child, unsigned char k) { return child.first < k; });
      if (it == children.end() || it->first != c) {
        it = children.insert(it, {c, nodes_.size()});
        const size_t created = nodes_.size();
        nodes_.emplace_back();
        node = created;
      } else {
        node = it->second;
      }
    }
    nodes_[node].id = id;
  }
  /// Calls found(length, id) for each piece that is a prefix of text[start:], shortest first.
  template <typename Found>
  void prefixes(const std::string& text, size_t start, Found&& found) const {
    size_t node = 0;
    for (size_t i = start; i < text.size(); ++i) {
      const auto& children = nodes_[node].children;
      const auto c = static_cast<unsigned char>(text[i]);
      auto it =
          std::lower_bound(children.begin(), children.end(), c,
                           [](const auto& child, unsigned char k) { return child.first < k; });
      if (it == children.end() || it->first != c) return;
      node = it->second;
      if (nodes_[node].id >= 0) found(i + 1 - start, nodes_[node].id);
    }
  }

 private:
  struct Node {
    std::vector<std::pair<unsigned char, size_t>> children;
    int64_t id = -1;
  };
  std::vector<Node> nodes_;
};

class UnigramModel : public TokenModel {
 public:
  UnigramModel(const json& j, const std::string& path)
      : byte_fallback_(json_bool(j, path, "byte_fallback", false)) {
    const auto& vocab = json_array(j, path, "vocab");
    const std::string where = json_child(path, "vocab");
    for (size_t i = 0; i < vocab.size(); ++i) {
      const auto& entry = vocab[i];
      if (!entry.is_array() || entry.size() != 2 || !entry[0].is_string() || !entry[1].is_number())
        throw TokenizerJsonError(json_item(where, i),
                                 "expected [\"piece\", score], got " + entry.dump());
      const auto piece = entry[0].get<std::string>();
      const double score = entry[1].get<double>();
      pieces_.emplace_back(piece, score);
      ids_.add(piece, static_cast<int64_t>(i));
      trie_.insert(piece, static_cast<int64_t>(i));
      min_score_ = std::min(min_score_, score);
    }
    if (j.contains("unk_id") && !j.at("unk_id").is_null()) {
      unk_id_ = json_int(j, path, "unk_id");
      if (*unk_id_ < 0 || *unk_id_ >= static_cast<int64_t>(pieces_.size()))
        throw TokenizerJsonError(
            json_child(path, "unk_id"),
            fmt::format("{} is outside the vocabulary of {} pieces", *unk_id_, pieces_.size()));
    }
  }

  std::vector<Token> tokenize(const std::string& text) const override {
    std::vector<Token> tokens;
    size_t offset = 0;
    for (const std::string& piece : segment(text)) {
      const size_t length = piece.size();
      if (const auto id = ids_.find(piece)) {
        tokens.push_back({*id, piece, {offset, offset + length}});
      } else {
        bool replaced = false;
        if (byte_fallback_) {
          std::vector<Token> bytes;
          for (unsigned char b : piece) {
            const std::string name = fmt::format("<0x{:02X}>", b);
            const auto byte_id = ids_.find(name);
            if (!byte_id) break;
            bytes.push_back({*byte_id, name, {offset, offset + length}});
          }
          if (bytes.size() == piece.size()) {
            tokens.insert(tokens.end(), bytes.begin(), bytes.end());
            replaced = true;
          }
        }
        if (!replaced) tokens.push_back({*unk_id_, piece, {offset, offset + length}});
      }
      offset += length;
    }
    return tokens;
  }

  std::optional<int64_t> token_to_id(std::string_view token) const override {
    return ids_.find(token);
  }
  std::optional<std::string> id_to_token(int64_t id) const override {
    if (id < 0 || id >= static_cast<int64_t>(pieces_.size())) return std::nullopt;
    return pieces_[static_cast<size_t>(id)].first;
  }
  int64_t vocab_size() const override { return static_cast<int64_t>(pieces_.size()); }
  json to_json() const override {
    json vocab = json::array();
    for (const auto& [piece, score] : pieces_) vocab.push_back({piece, score});
    return {{"type", "Unigram"},
            {"unk_id", unk_id_ ? json(*unk_id_) : json(nullptr)},
            {"vocab", vocab},
            {"byte_fallback", byte_fallback_}};
  }

 private:
  /// The best segmentation of `text` into piece strings (SentencePiece's optimized Viterbi).
  std::vector<std::string> segment(const std::string& text) const {
    struct Best {
      int64_t id = -1;
      double score = 0;
      std::optional<size_t> starts_at;
    };
    std::vector<Best> best(text.size() + 1);
    const double unk_score = min_score_ - kUnknownPenalty;
    for (size_t start = 0; start < text.size();) {
      const double here = best[start].score;
      const size_t char_length = utf8_length(static_cast<unsigned char>(text[start]));
      bool has_single_char_piece = false;
      trie_.prefixes(text, start, [&](size_t length, int64_t id) {
        Best& target = best[start + length];
        const double candidate = pieces_[static_cast<size_t>(id)].second + here;
        if (!target.starts_at || candidate > target.score) {
          target.score = candidate;
          target.starts_at = start;
          target.id = id;
        }
        if (length == char_length) has_single_char_piece = true;
      });
      if (!has_single_char_piece) {
        if (!unk_id_)
          throw ArgumentError("Unigram: \"" + text.substr(start, char_length) +
                              "\" is in no piece and the model has no unk_id");
        Best& target = best[start + char_length];
        const double candidate = unk_score + here;
        if (!target.starts_at || candidate > target.score) {
          target.score = candidate;
          target.starts_at = start;
          target.id = *unk_id_;
        }
      }
      start += char_length;
    }
    std::vector<std::string> pieces;
    std::string unknown_run;  // consecutive unknowns, fused (fuse_unk is always on for Unigram)
    for (size_t end = text.size(); end > 0;) {
      const Best& node = best[end];
      const size_t start = *node.starts_at;
      if (unk_id_ && node.id == *unk_id_) {
        unknown_run.insert(0, text, start, end - start);
      } else {
        if (!unknown_run.empty()) pieces.push_back(std::move(unknown_run));
        unknown_run.clear();
        pieces.push_back(text.substr(start, end - start));
      }
      end = start;
    }
    if (!unknown_run.empty()) pieces.push_back(std::move(unknown_run));
    std::reverse(pieces.begin(), pieces.end());
    return pieces;
  }

  std::vector<std::pair<std::string, double>> pieces_;
  Vocabulary ids_;
  PieceTrie trie_;
  double min_score_ = std::numeric_limits<double>::max();
  std::optional<int64_t> unk_id_;
  bool byte_fallback_;
};

}  // namespace

std::shared_ptr<const TokenModel> unigram_model_from_json(const json& j, const std::string& path) {
  return std::make_shared<UnigramModel>(j, path);
}

}  // namespace ctrainer::tokenizers
