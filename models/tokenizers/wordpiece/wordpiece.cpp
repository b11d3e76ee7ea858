#include <ctrainer/models/tokenizers/wordpiece/wordpiece.h>

#include <string>

namespace ctrainer {

WordpieceTokenizer::WordpieceTokenizer(const Vocab& vocab, int64_t unk_id,
                                       size_t max_input_chars_per_word)
    : vocab_(&vocab), unk_id_(unk_id), max_input_chars_per_word_(max_input_chars_per_word) {}

void WordpieceTokenizer::tokenize(std::string_view word, std::vector<int64_t>& ids) const {
  if (word.empty()) return;
  // Code point boundaries (byte offsets): the limit counts characters, as HF's len(list(token)).
  thread_local std::vector<size_t> bounds;
  bounds.clear();
  for (size_t i = 0; i < word.size(); ++i)
    if ((static_cast<unsigned char>(word[i]) & 0xC0) != 0x80) bounds.push_back(i);
  const size_t chars = bounds.size();
  bounds.push_back(word.size());
  if (chars > max_input_chars_per_word_) {
    ids.push_back(unk_id_);
    return;
  }

  // One reused "##" + piece buffer: continuation lookups do not allocate.
  thread_local std::string continuation;
  const size_t first_piece = ids.size();
  const size_t max_bytes = vocab_->max_token_bytes();
  size_t start = 0;
  while (start < chars) {
    std::optional<int64_t> found;
    size_t end = chars;
    for (; end > start; --end) {
      const size_t offset = bounds[start];
      const size_t length = bounds[end] - offset;
      const std::string_view piece = word.substr(offset, length);
      if (start == 0) {
        if (length > max_bytes) continue;
        found = vocab_->find(piece);
      } else {
        if (length + 2 > max_bytes) continue;
        continuation.assign("##");
        continuation.append(piece);
        found = vocab_->find(continuation);
      }
      if (found) break;
    }
    if (!found) {
      ids.resize(first_piece);
      ids.push_back(unk_id_);
      return;
    }
    ids.push_back(*found);
    start = end;
  }
}

}  // namespace ctrainer
