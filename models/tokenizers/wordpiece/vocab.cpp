#include <ctrainer/models/tokenizers/wordpiece/vocab.h>

#include <fstream>

#include <ctrainer/core/errors.h>
#include <ctrainer/models/tokenizers/unicode.h>

namespace ctrainer {

namespace {

std::string where(const std::string& source, size_t line) {
  return source + ":" + std::to_string(line);
}

}  // namespace

Vocab Vocab::from_tokens(std::vector<std::string> tokens, const std::string& source) {
  if (tokens.empty())
    throw ArgumentError("vocabulary " + source + " is empty: expected one token per line");
  Vocab vocab;
  vocab.source_ = source;
  vocab.ids_.reserve(tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) {
    const std::string& token = tokens[i];
    const std::string at = where(source, i + 1);
    if (token.empty())
      throw ArgumentError(at + ": empty token (vocabulary files have one token per line)");
    if (token.find('\r') != std::string::npos)
      throw ArgumentError(at +
                          ": token contains a carriage return; convert the file to LF line "
                          "endings (e.g. `dos2unix`)");
    if (auto bad = unicode::first_invalid_utf8(token))
      throw ArgumentError(at + ": invalid UTF-8 at byte " + std::to_string(*bad) + " of the token");
    auto [it, inserted] = vocab.ids_.emplace(token, static_cast<int64_t>(i));
    if (!inserted)
      throw ArgumentError(at + ": duplicate token '" + token + "' (first seen on line " +
                          std::to_string(it->second + 1) + ")");
    vocab.max_token_bytes_ = std::max(vocab.max_token_bytes_, token.size());
  }
  vocab.tokens_ = std::move(tokens);
  return vocab;
}

Vocab Vocab::load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ArgumentError("cannot open vocabulary file " + path);
  std::vector<std::string> tokens;
  std::string line;
  while (std::getline(in, line)) tokens.push_back(line);
  if (in.bad()) throw ArgumentError("error while reading vocabulary file " + path);
  return from_tokens(std::move(tokens), path);
}

const std::string& Vocab::token(int64_t id) const {
  if (id < 0 || id >= size())
    throw ArgumentError("token id " + std::to_string(id) + " is outside the vocabulary " + source_ +
                        " (ids 0.." + std::to_string(size() - 1) + ")");
  return tokens_[static_cast<size_t>(id)];
}

}  // namespace ctrainer
