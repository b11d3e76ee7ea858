#pragma once
/// \file AutoTokenizer: the tokenizer of a model folder (or a vocabulary file), found by
/// tokenizer_config.json's tokenizer_class as transformers' AutoTokenizer does, through a
/// registry that a new tokenizer joins (builtin list in tokenizer_registry.cpp, or
/// TokenizerRegistry::global().add from a program).
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <ctrainer/models/tokenizers/tokenizer.h>

namespace ctrainer {

/// What a caller may override in the files' settings (transformers' from_pretrained kwargs).
struct AutoTokenizerOptions {
  std::optional<bool> do_lower_case;
};

/// Makes a tokenizer from `path` (a folder, or the tokenizer's own file such as vocab.txt).
using TokenizerFactory =
    std::function<std::shared_ptr<Tokenizer>(const std::string& path, const AutoTokenizerOptions&)>;

class TokenizerRegistry {
 public:
  /// The process-wide registry, holding the built-in tokenizers.
  static TokenizerRegistry& global();

  /// Registers `tokenizer_class` (and its "Fast" twin, which reads the same files here);
  /// throws std::invalid_argument when it is registered already.
  void add(const std::string& tokenizer_class, TokenizerFactory factory);
  /// The factory of `tokenizer_class` (with or without "Fast"), or nullptr.
  const TokenizerFactory* find(const std::string& tokenizer_class) const;
  /// Registered class names, sorted.
  std::vector<std::string> classes() const;

 private:
  mutable std::mutex mutex_;
  std::vector<std::pair<std::string, TokenizerFactory>> entries_;
};

class AutoTokenizer {
 public:
  /// The tokenizer of `path`: a tokenizer.json (the file named, or the folder's), or a folder's
  /// vocab.json + merges.txt, makes a PreTrainedTokenizerFast whatever the class, as in
  /// transformers; else tokenizer_config.json's
  /// tokenizer_class (in the folder, or beside the file); without one, a vocab.txt means
  /// WordPiece (BertTokenizer), as transformers falls back for BERT folders. Unknown classes and
  /// folders without a readable tokenizer throw ArgumentError naming the path and what this
  /// build reads.
  static std::shared_ptr<Tokenizer> from_pretrained(const std::string& path,
                                                    const AutoTokenizerOptions& options = {});
};

}  // namespace ctrainer
