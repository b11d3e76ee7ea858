#include <ctrainer/models/tokenizers/pipeline/pre_tokenizers.h>

#include <ctrainer/models/tokenizers/pipeline/byte_level.h>
#include <ctrainer/models/tokenizers/pipeline/json_fields.h>
#include <ctrainer/models/tokenizers/pipeline/patterns.h>
#include <ctrainer/models/tokenizers/unicode.h>

namespace ctrainer::tokenizers {

namespace {

using nlohmann::json;
using CharTest = std::function<bool(char32_t)>;

/// Splits every untokenized split by the character class `test`.
void split_by(PreTokenizedString& text, const CharTest& test, SplitBehavior behavior) {
  text.split([&](size_t, NormalizedString&& piece) {
    return slices(piece, split_ranges(find_matches(test, piece.get()), behavior, false));
  });
}

void split_by(PreTokenizedString& text, const Pattern& pattern, SplitBehavior behavior,
              bool invert) {
  text.split([&](size_t, NormalizedString&& piece) {
    return slices(piece, split_ranges(find_matches(pattern, piece.get()), behavior, invert));
  });
}

bool is_bert_punctuation(char32_t c) {
  return unicode::is_punctuation(c);
}

const char* behavior_name(SplitBehavior b) {
  switch (b) {
    case SplitBehavior::kRemoved:
      return "Removed";
    case SplitBehavior::kIsolated:
      return "Isolated";
    case SplitBehavior::kMergedWithPrevious:
      return "MergedWithPrevious";
    case SplitBehavior::kMergedWithNext:
      return "MergedWithNext";
    case SplitBehavior::kContiguous:
      return "Contiguous";
  }
  return "?";
}

SplitBehavior behavior_from_json(const json& j, const std::string& path, const char* fallback) {
  const std::string name =
      j.contains("behavior") ? json_string(j, path, "behavior") : std::string(fallback);
  for (auto b :
       {SplitBehavior::kRemoved, SplitBehavior::kIsolated, SplitBehavior::kMergedWithPrevious,
        SplitBehavior::kMergedWithNext, SplitBehavior::kContiguous})
    if (name == behavior_name(b)) return b;
  throw TokenizerJsonError(json_child(path, "behavior"),
                           "unknown split behavior \"" + name +
                               "\" (supported: Removed, Isolated, MergedWithPrevious, "
                               "MergedWithNext, Contiguous)");
}

class ByteLevelPreTokenizer : public PreTokenizer {
 public:
  ByteLevelPreTokenizer(bool add_prefix_space, bool trim_offsets, bool use_regex)
      : add_prefix_space_(add_prefix_space),
        trim_offsets_(trim_offsets),
        use_regex_(use_regex),
        split_(Pattern::expression(gpt2_split_pattern())) {}
  void pre_tokenize(PreTokenizedString& text) const override {
    text.split([&](size_t, NormalizedString&& piece) {
      if (add_prefix_space_ && piece.get().rfind(' ', 0) != 0) piece.prepend(" ");
      if (!use_regex_) return std::vector<NormalizedString>{std::move(piece)};
      return slices(
          piece, split_ranges(find_matches(split_, piece.get()), SplitBehavior::kIsolated, false));
    });
    text.normalize(to_byte_level);
  }
  json to_json() const override {
    return {{"type", "ByteLevel"},
            {"add_prefix_space", add_prefix_space_},
            {"trim_offsets", trim_offsets_},
            {"use_regex", use_regex_}};
  }

 private:
  bool add_prefix_space_, trim_offsets_, use_regex_;
  Pattern split_;
};

enum class PrependScheme { kAlways, kFirst, kNever };

class MetaspacePreTokenizer : public PreTokenizer {
 public:
  MetaspacePreTokenizer(char32_t replacement, PrependScheme scheme, bool split)
      : replacement_(to_utf8(std::u32string(1, replacement))), scheme_(scheme), split_(split) {}
  void pre_tokenize(PreTokenizedString& text) const override {
    text.split([&](size_t, NormalizedString&& piece) {
      piece.replace_ranges(Pattern::literal(" ").find_all(piece.get()), replacement_);
      const bool starts = piece.get().rfind(replacement_, 0) == 0;
      if (scheme_ == PrependScheme::kAlways && !starts) piece.prepend(replacement_);
      // "first": only a piece whose first character is the text's first (HF checks the piece's
      // original offset, which starts after what a normalizer removed, e.g. leading spaces).
      if (scheme_ == PrependScheme::kFirst && !starts &&
          piece.original_range(0, piece.size()).first == 0)
        piece.prepend(replacement_);
      if (!split_) return std::vector<NormalizedString>{std::move(piece)};
      return slices(piece, split_ranges(find_matches(Pattern::literal(replacement_), piece.get()),
                                        SplitBehavior::kMergedWithNext, false));
    });
  }
  json to_json() const override {
    const char* scheme = scheme_ == PrependScheme::kAlways  ? "always"
                         : scheme_ == PrependScheme::kFirst ? "first"
                                                            : "never";
    return {{"type", "Metaspace"},
            {"replacement", replacement_},
            {"prepend_scheme", scheme},
            {"split", split_}};
  }

 private:
  std::string replacement_;
  PrependScheme scheme_;
  bool split_;
};

class SplitPreTokenizer : public PreTokenizer {
 public:
  SplitPreTokenizer(Pattern pattern, SplitBehavior behavior, bool invert)
      : pattern_(std::move(pattern)), behavior_(behavior), invert_(invert) {}
  void pre_tokenize(PreTokenizedString& text) const override {
    split_by(text, pattern_, behavior_, invert_);
  }
  json to_json() const override {
    return {{"type", "Split"},
            {"pattern", pattern_to_json(pattern_)},
            {"behavior", behavior_name(behavior_)},
            {"invert", invert_}};
  }

 private:
  Pattern pattern_;
  SplitBehavior behavior_;
  bool invert_;
};

class WhitespacePreTokenizer : public PreTokenizer {
 public:
  WhitespacePreTokenizer() : words_(Pattern::expression(R"(\w+|[^\w\s]+)")) {}
  void pre_tokenize(PreTokenizedString& text) const override {
    split_by(text, words_, SplitBehavior::kRemoved, true);
  }
  json to_json() const override { return {{"type", "Whitespace"}}; }

 private:
  Pattern words_;
};

/// WhitespaceSplit, BertPreTokenizer, Punctuation, Digits and CharDelimiterSplit: splits by
/// character classes.
class CharClassPreTokenizer : public PreTokenizer {
 public:
  struct Step {
    CharTest test;
    SplitBehavior behavior;
  };
  CharClassPreTokenizer(std::vector<Step> steps, json config)
      : steps_(std::move(steps)), config_(std::move(config)) {}
  void pre_tokenize(PreTokenizedString& text) const override {
    for (const auto& step : steps_) split_by(text, step.test, step.behavior);
  }
  json to_json() const override { return config_; }

 private:
  std::vector<Step> steps_;
  json config_;
};

class SequencePreTokenizer : public PreTokenizer {
 public:
  explicit SequencePreTokenizer(std::vector<std::shared_ptr<const PreTokenizer>> parts)
      : parts_(std::move(parts)) {}
  void pre_tokenize(PreTokenizedString& text) const override {
    for (const auto& part : parts_) part->pre_tokenize(text);
  }
  json to_json() const override {
    json list = json::array();
    for (const auto& part : parts_) list.push_back(part->to_json());
    return {{"type", "Sequence"}, {"pretokenizers", list}};
  }

 private:
  std::vector<std::shared_ptr<const PreTokenizer>> parts_;
};

PrependScheme prepend_scheme_from_json(const json& j, const std::string& path) {
  const auto add_prefix_space = json_optional_bool(j, path, "add_prefix_space");
  const std::string name = json_optional_string(j, path, "prepend_scheme").value_or("always");
  PrependScheme scheme;
  if (name == "always")
    scheme = PrependScheme::kAlways;
  else if (name == "first")
    scheme = PrependScheme::kFirst;
  else if (name == "never")
    scheme = PrependScheme::kNever;
  else
    throw TokenizerJsonError(
        json_child(path, "prepend_scheme"),
        "unknown prepend scheme \"" + name + "\" (supported: always, first, never)");
  if (add_prefix_space == false) {
    if (scheme != PrependScheme::kNever)
      throw TokenizerJsonError(json_child(path, "add_prefix_space"),
                               "false does not match prepend_scheme \"" + name + "\"");
  }
  return scheme;
}

}  // namespace

std::shared_ptr<const PreTokenizer> pre_tokenizer_from_json(const json& j,
                                                            const std::string& path) {
  if (j.is_null()) return nullptr;
  const std::string type =
      json_type(j, path,
                {"ByteLevel", "Metaspace", "Split", "Whitespace", "WhitespaceSplit",
                 "BertPreTokenizer", "Punctuation", "Digits", "CharDelimiterSplit", "Sequence"},
                "pre-tokenizer");
  using Step = CharClassPreTokenizer::Step;
  if (type == "ByteLevel")
    return std::make_shared<ByteLevelPreTokenizer>(json_bool(j, path, "add_prefix_space", true),
                                                   json_bool(j, path, "trim_offsets", true),
                                                   json_bool(j, path, "use_regex", true));
  if (type == "Metaspace")
    return std::make_shared<MetaspacePreTokenizer>(json_char(j, path, "replacement"),
                                                   prepend_scheme_from_json(j, path),
                                                   json_bool(j, path, "split", true));
  if (type == "Split")
    return std::make_shared<SplitPreTokenizer>(json_pattern(j, path, "pattern"),
                                               behavior_from_json(j, path, "Removed"),
                                               json_bool(j, path, "invert", false));
  if (type == "Whitespace") return std::make_shared<WhitespacePreTokenizer>();
  if (type == "WhitespaceSplit")
    return std::make_shared<CharClassPreTokenizer>(
        std::vector<Step>{{unicode::is_white_space, SplitBehavior::kRemoved}}, j);
  if (type == "BertPreTokenizer")
    return std::make_shared<CharClassPreTokenizer>(
        std::vector<Step>{{unicode::is_white_space, SplitBehavior::kRemoved},
                          {is_bert_punctuation, SplitBehavior::kIsolated}},
        j);
  if (type == "Punctuation") {
    const auto behavior = behavior_from_json(j, path, "Isolated");
    return std::make_shared<CharClassPreTokenizer>(
        std::vector<Step>{{is_bert_punctuation, behavior}},
        json{{"type", "Punctuation"}, {"behavior", behavior_name(behavior)}});
  }
  if (type == "Digits") {
    const bool individual = json_bool(j, path, "individual_digits", false);
    return std::make_shared<CharClassPreTokenizer>(
        std::vector<Step>{{unicode::is_numeric,
                           individual ? SplitBehavior::kIsolated : SplitBehavior::kContiguous}},
        json{{"type", "Digits"}, {"individual_digits", individual}});
  }
  if (type == "CharDelimiterSplit") {
    const char32_t delimiter = json_char(j, path, "delimiter");
    return std::make_shared<CharClassPreTokenizer>(
        std::vector<Step>{
            {[delimiter](char32_t c) { return c == delimiter; }, SplitBehavior::kRemoved}},
        j);
  }
  return std::make_shared<SequencePreTokenizer>(
      json_sequence<PreTokenizer>(j, path, "pretokenizers", pre_tokenizer_from_json));
}

}  // namespace ctrainer::tokenizers
