// Byte-pair encoding as HF tokenizers' models::bpe: a word starts as its characters (with the
// continuing-subword prefix on all but the first and the end-of-word suffix on the last;
// unknown characters become byte tokens <0xNN> with byte_fallback, else the unk token, fused
// when fuse_unk), then the adjacent pair with the best (lowest) merge rank is merged until no
// pair is in the merges, leftmost first on ties, rank by rank (see merge_rank_by_rank), so a
// 1 MB word takes well under a second.
#include <ctrainer/models/tokenizers/pipeline/token_models.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <limits>
#include <mutex>
#include <queue>
#include <shared_mutex>

#include <fmt/format.h>

#include <ctrainer/models/tokenizers/pipeline/json_fields.h>

namespace ctrainer::tokenizers {

namespace {

using nlohmann::json;

struct Symbol {
  int64_t id;
  int64_t prev, next;  // neighbours in the word, -1 at the ends
  size_t length;       // bytes of the word it covers; 0 once merged into its left neighbour
};

struct Merge {
  int64_t rank;
  int64_t new_id;
};

uint64_t pair_key(int64_t a, int64_t b) {
  return (static_cast<uint64_t>(a) << 32) | static_cast<uint64_t>(b);
}

class BpeModel : public TokenModel {
 public:
  BpeModel(const json& j, const std::string& path)
      : vocab_(json_field(j, path, "vocab"), json_child(path, "vocab")),
        unk_(json_optional_string(j, path, "unk_token")),
        prefix_(json_optional_string(j, path, "continuing_subword_prefix")),
        suffix_(json_optional_string(j, path, "end_of_word_suffix")),
        fuse_unk_(json_bool(j, path, "fuse_unk", false)),
        byte_fallback_(json_bool(j, path, "byte_fallback", false)),
        ignore_merges_(json_bool(j, path, "ignore_merges", false)) {
    if (j.contains("dropout") && !j.at("dropout").is_null() &&
        !(j.at("dropout").is_number() && j.at("dropout").get<double>() == 0.0))
      throw TokenizerJsonError(json_child(path, "dropout"),
                               "BPE dropout (random merges while encoding) is not supported: "
                               "set it to null for deterministic tokenization");
    if (unk_ && !vocab_.find(*unk_))
      throw TokenizerJsonError(json_child(path, "unk_token"),
                               "\"" + *unk_ + "\" is not in the vocabulary");
    const auto& merges = json_array(j, path, "merges");
    const std::string where = json_child(path, "merges");
    const size_t prefix_length = prefix_ ? prefix_->size() : 0;
    std::unordered_map<int64_t, int64_t> made_at;    // token id -> the last rank that makes it
    std::vector<std::pair<int64_t, int64_t>> parts;  // per rank
    for (size_t rank = 0; rank < merges.size(); ++rank) {
      std::string a, b;
      const auto& m = merges[rank];
      if (m.is_string()) {  // "a b", the format of tokenizers < 0.20 and merges.txt
        const auto text = m.get<std::string>();
        const auto space = text.find(' ');
        if (space == std::string::npos || text.find(' ', space + 1) != std::string::npos)
          throw TokenizerJsonError(json_item(where, rank),
                                   "expected \"left right\", got \"" + text + "\"");
        a = text.substr(0, space);
        b = text.substr(space + 1);
      } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
        a = m[0].get<std::string>();
        b = m[1].get<std::string>();
      } else {
        throw TokenizerJsonError(json_item(where, rank),
                                 "expected [\"left\", \"right\"], got " + m.dump());
      }
      const auto id_a = vocab_.find(a), id_b = vocab_.find(b);
      const std::string merged = a + (b.size() >= prefix_length ? b.substr(prefix_length) : b);
      const auto id_merged = vocab_.find(merged);
      if (!id_a || !id_b || !id_merged)
        throw TokenizerJsonError(json_item(where, rank), "merge of \"" + a + "\" and \"" + b +
                                                             "\" uses a token not in "
                                                             "the vocabulary (\"" +
                                                             (!id_a   ? a
                                                              : !id_b ? b
                                                                      : merged) +
                                                             "\")");
      merges_.emplace(pair_key(*id_a, *id_b), Merge{static_cast<int64_t>(rank), *id_merged});
      made_at[*id_merged] = static_cast<int64_t>(rank);
      parts.emplace_back(*id_a, *id_b);
      merge_list_.emplace_back(std::move(a), std::move(b));
    }
    // Ordered merges: no token is a part of a merge ranked at or before one that makes it, as in
    // every file a BPE trainer (or tiktoken's conversion) writes. merge_rank_by_rank relies on it.
    merges_ordered_ = true;
    for (size_t rank = 0; rank < parts.size() && merges_ordered_; ++rank)
      for (const int64_t part : {parts[rank].first, parts[rank].second})
        if (const auto it = made_at.find(part);
            it != made_at.end() && it->second >= static_cast<int64_t>(rank))
          merges_ordered_ = false;
  }

  std::vector<Token> tokenize(const std::string& text) const override {
    if (text.empty()) return {};
    if (ignore_merges_)
      if (const auto id = vocab_.find(text)) return {{*id, text, {0, text.size()}}};
    const bool cacheable = text.size() < kCacheableLength;
    // The word cache never makes a thread wait (as the Rust library's): a busy lock is a miss,
    // and a full cache is not written. Waiting for it made two threads slower than one.
    if (cacheable) {
      std::shared_lock lock(cache_mutex_, std::try_to_lock);
      if (lock.owns_lock()) {
        const auto it = cache_.find(text);
        if (it != cache_.end()) return to_tokens(it->second);
      }
    }
    std::vector<Symbol> word = merge_word(text);
    if (cacheable && !cache_full_.load(std::memory_order_relaxed)) {
      std::unique_lock lock(cache_mutex_, std::try_to_lock);
      if (lock.owns_lock()) {
        if (cache_.size() < kCacheCapacity)
          cache_.emplace(text, word);
        else
          cache_full_.store(true, std::memory_order_relaxed);
      }
    }
    return to_tokens(word);
  }

  std::optional<int64_t> token_to_id(std::string_view token) const override {
    return vocab_.find(token);
  }
  std::optional<std::string> id_to_token(int64_t id) const override { return vocab_.token(id); }
  int64_t vocab_size() const override { return vocab_.size(); }

  json to_json() const override {
    json merges = json::array();
    for (const auto& [a, b] : merge_list_) merges.push_back({a, b});
    const auto optional = [](const std::optional<std::string>& s) {
      return s ? json(*s) : json(nullptr);
    };
    return {{"type", "BPE"},
            {"dropout", nullptr},
            {"unk_token", optional(unk_)},
            {"continuing_subword_prefix", optional(prefix_)},
            {"end_of_word_suffix", optional(suffix_)},
            {"fuse_unk", fuse_unk_},
            {"byte_fallback", byte_fallback_},
            {"ignore_merges", ignore_merges_},
            {"vocab", vocab_.to_json()},
            {"merges", merges}};
  }

 private:
  static constexpr size_t kCacheableLength = 256;
  static constexpr size_t kCacheCapacity = 10000;
  static constexpr size_t kMaxPosition = std::numeric_limits<uint32_t>::max();

  void add_symbol(std::vector<Symbol>& word, int64_t id, size_t length) const {
    const auto index = static_cast<int64_t>(word.size());
    if (!word.empty()) word.back().next = index;
    word.push_back({id, index - 1, -1, length});
  }

  std::vector<Symbol> merge_word(const std::string& text) const {
    std::vector<Symbol> word;
    word.reserve(text.size());
    std::optional<std::pair<int64_t, size_t>> pending_unk;  // (id, bytes)
    std::string piece;
    for (size_t i = 0; i < text.size();) {
      const size_t n = utf8_length(static_cast<unsigned char>(text[i]));
      const bool first = i == 0, last = i + n >= text.size();
      piece.assign(first || !prefix_ ? std::string() : *prefix_);
      piece.append(text, i, n);
      if (last && suffix_) piece += *suffix_;
      i += n;
      if (const auto id = vocab_.find(piece)) {
        if (pending_unk) add_symbol(word, pending_unk->first, pending_unk->second);
        pending_unk.reset();
        add_symbol(word, *id, n);
        continue;
      }
      if (byte_fallback_) {
        std::vector<int64_t> bytes;
        for (unsigned char b : piece) {
          const auto id = vocab_.find(fmt::format("<0x{:02X}>", b));
          if (!id) break;
          bytes.push_back(*id);
        }
        if (bytes.size() == piece.size()) {
          for (int64_t id : bytes) add_symbol(word, id, 1);
          continue;
        }
      }
      if (unk_) {
        const int64_t unk_id = *vocab_.find(*unk_);
        if (pending_unk && fuse_unk_) {
          pending_unk->second += n;
        } else {
          if (pending_unk) add_symbol(word, pending_unk->first, pending_unk->second);
          pending_unk = std::make_pair(unk_id, n);
        }
      }
    }
    if (pending_unk) add_symbol(word, pending_unk->first, pending_unk->second);
    merge_all(word);
    std::vector<Symbol> kept;
    kept.reserve(word.size());
    for (const auto& s : word)
      if (s.length != 0) kept.push_back(s);
    return kept;
  }

  // The merge loop: the adjacent pair of lowest rank is merged, leftmost first on ties, until no
  // pair has a merge.
  void merge_all(std::vector<Symbol>& word) const {
    if (word.size() < 2) return;
    if (merges_ordered_ && word.size() <= kMaxPosition)
      merge_rank_by_rank(word);
    else
      merge_with_heap(word);
  }

  /// The merge of the pair starting at `pos` if it is still there (neither symbol merged away
  /// since) and has rank `rank`; calls `candidate(rank, pos)` for the pairs the new symbol forms
  /// with its neighbours.
  template <typename Candidate>
  void merge_at(std::vector<Symbol>& word, size_t pos, int64_t rank, Candidate&& candidate) const {
    Symbol& left = word[pos];
    if (left.length == 0 || left.next < 0) return;
    const auto right_pos = static_cast<size_t>(left.next);
    const Symbol right = word[right_pos];
    const Merge* merge = find_merge(left.id, right.id);
    if (merge == nullptr || merge->rank != rank) return;  // an outdated candidate
    left.id = merge->new_id;
    left.length += right.length;
    left.next = right.next;
    word[right_pos].length = 0;
    if (right.next >= 0) word[static_cast<size_t>(right.next)].prev = static_cast<int64_t>(pos);
    if (left.prev >= 0)
      if (const Merge* m = find_merge(word[static_cast<size_t>(left.prev)].id, left.id))
        candidate(m->rank, static_cast<size_t>(left.prev));
    if (left.next >= 0)
      if (const Merge* m = find_merge(left.id, word[static_cast<size_t>(left.next)].id))
        candidate(m->rank, pos);
  }

  // Every file whose merges are ordered (see merges_ordered_) takes this path: a merge only forms
  // pairs of a later rank, so once the ranks below r are done, every candidate of rank r is
  // known. Candidates wait in a bucket per rank, the ranks in a heap; each rank's positions are
  // visited left to right. The word's own pairs enter their buckets in position order, so only
  // the few formed by merges need sorting. This keeps the cost per letter nearly flat up to
  // words of millions of letters, where a heap over every candidate grew with the word.
  void merge_rank_by_rank(std::vector<Symbol>& word) const {
    struct Bucket {
      std::vector<uint32_t> positions;
      size_t sorted = 0;  // positions[0, sorted) are in order
    };
    std::unordered_map<int64_t, Bucket> buckets;
    std::priority_queue<int64_t, std::vector<int64_t>, std::greater<>> ranks;
    const auto wait = [&](int64_t rank, size_t pos) {
      auto [bucket, created] = buckets.try_emplace(rank);
      if (created) ranks.push(rank);
      bucket->second.positions.push_back(static_cast<uint32_t>(pos));
    };
    for (size_t i = 0; i + 1 < word.size(); ++i)
      if (const Merge* m = find_merge(word[i].id, word[i + 1].id)) wait(m->rank, i);
    for (auto& [rank, bucket] : buckets) bucket.sorted = bucket.positions.size();
    while (!ranks.empty()) {
      const int64_t rank = ranks.top();
      ranks.pop();
      auto node = buckets.extract(rank);
      auto& positions = node.mapped().positions;
      const auto sorted = positions.begin() + static_cast<std::ptrdiff_t>(node.mapped().sorted);
      std::sort(sorted, positions.end());
      std::inplace_merge(positions.begin(), sorted, positions.end());
      for (const uint32_t pos : positions) merge_at(word, pos, rank, wait);
    }
  }

  // Any merges: a heap of candidates, as HF tokenizers' loop.
  void merge_with_heap(std::vector<Symbol>& word) const {
    using Candidate = std::pair<int64_t, size_t>;  // (rank, position): lowest first
    std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue;
    const auto push = [&](int64_t rank, size_t pos) { queue.emplace(rank, pos); };
    for (size_t i = 0; i + 1 < word.size(); ++i)
      if (const Merge* m = find_merge(word[i].id, word[i + 1].id)) push(m->rank, i);
    while (!queue.empty()) {
      const auto [rank, pos] = queue.top();
      queue.pop();
      merge_at(word, pos, rank, push);
    }
  }

  const Merge* find_merge(int64_t a, int64_t b) const {
    const auto it = merges_.find(pair_key(a, b));
    return it == merges_.end() ? nullptr : &it->second;
  }

  std::vector<Token> to_tokens(const std::vector<Symbol>& word) const {
    std::vector<Token> tokens;
    tokens.reserve(word.size());
    size_t offset = 0;
    for (const auto& s : word) {
      tokens.push_back({s.id, *vocab_.token(s.id), {offset, offset + s.length}});
      offset += s.length;
    }
    return tokens;
  }

  Vocabulary vocab_;
  std::unordered_map<uint64_t, Merge> merges_;
  std::vector<std::pair<std::string, std::string>> merge_list_;
  std::optional<std::string> unk_, prefix_, suffix_;
  bool fuse_unk_, byte_fallback_, ignore_merges_;
  bool merges_ordered_ = false;
  mutable std::shared_mutex cache_mutex_;
  mutable std::unordered_map<std::string, std::vector<Symbol>> cache_;
  mutable std::atomic<bool> cache_full_{false};
};

}  // namespace

std::shared_ptr<const TokenModel> bpe_model_from_json(const json& j, const std::string& path) {
  return std::make_shared<BpeModel>(j, path);
}

}  // namespace ctrainer::tokenizers
