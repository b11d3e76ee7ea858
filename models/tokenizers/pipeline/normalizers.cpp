#include <ctrainer/models/tokenizers/pipeline/normalizers.h>

#include <cstdlib>
#include <vector>

#include <utf8proc.h>

#include <ctrainer/models/tokenizers/pipeline/byte_level.h>
#include <ctrainer/models/tokenizers/pipeline/json_fields.h>
#include <ctrainer/models/tokenizers/pipeline/precompiled_charsmap.h>
#include <ctrainer/models/tokenizers/unicode.h>

namespace ctrainer::tokenizers {

namespace {

using nlohmann::json;

/// Where a normalization segment may start: a character that neither combines with what comes
/// before (combining class 0, not a mark) nor is a Hangul vowel or final consonant jamo.
bool starts_segment(char32_t c) {
  if (c < 0x80) return true;
  if ((c >= 0x1160 && c <= 0x11FF) || (c >= 0xD7B0 && c <= 0xD7FF)) return false;
  const auto* property = utf8proc_get_property(static_cast<utf8proc_int32_t>(c));
  return property->combining_class == 0 && !unicode::is_mark(c);
}

std::u32string utf8proc_normalize(const std::u32string& segment, UnicodeForm form) {
  int options = UTF8PROC_STABLE;
  switch (form) {
    case UnicodeForm::kNfc:
      options |= UTF8PROC_COMPOSE;
      break;
    case UnicodeForm::kNfd:
      options |= UTF8PROC_DECOMPOSE;
      break;
    case UnicodeForm::kNfkc:
      options |= UTF8PROC_COMPOSE | UTF8PROC_COMPAT;
      break;
    case UnicodeForm::kNfkd:
      options |= UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT;
      break;
  }
  const std::string in = to_utf8(segment);
  utf8proc_uint8_t* out = nullptr;
  const auto n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(in.data()),
                              static_cast<utf8proc_ssize_t>(in.size()), &out,
                              static_cast<utf8proc_option_t>(options));
  if (n < 0) return segment;
  std::u32string result = to_u32(std::string_view(reinterpret_cast<char*>(out), n));
  std::free(out);
  return result;
}

bool is_bert_chinese_char(char32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
         (c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2B73F) ||
         (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

class UnicodeNormalizer : public Normalizer {
 public:
  UnicodeNormalizer(UnicodeForm form, std::string name) : form_(form), name_(std::move(name)) {}
  void normalize(NormalizedString& text) const override { unicode_normalize(text, form_); }
  json to_json() const override { return {{"type", name_}}; }

 private:
  UnicodeForm form_;
  std::string name_;
};

class LowercaseNormalizer : public Normalizer {
 public:
  void normalize(NormalizedString& text) const override { lowercase(text); }
  json to_json() const override { return {{"type", "Lowercase"}}; }
};

class StripAccentsNormalizer : public Normalizer {
 public:
  void normalize(NormalizedString& text) const override {
    text.filter([](char32_t c) { return !unicode::is_mark(c); });
  }
  json to_json() const override { return {{"type", "StripAccents"}}; }
};

class StripNormalizer : public Normalizer {
 public:
  StripNormalizer(bool left, bool right) : left_(left), right_(right) {}
  void normalize(NormalizedString& text) const override { text.strip(left_, right_); }
  json to_json() const override {
    return {{"type", "Strip"}, {"strip_left", left_}, {"strip_right", right_}};
  }

 private:
  bool left_, right_;
};

class ReplaceNormalizer : public Normalizer {
 public:
  ReplaceNormalizer(Pattern pattern, std::string content)
      : pattern_(std::move(pattern)), content_(std::move(content)) {}
  void normalize(NormalizedString& text) const override {
    text.replace_ranges(pattern_.find_all(text.get()), content_);
  }
  json to_json() const override {
    return {{"type", "Replace"}, {"pattern", pattern_to_json(pattern_)}, {"content", content_}};
  }

 private:
  Pattern pattern_;
  std::string content_;
};

class PrependNormalizer : public Normalizer {
 public:
  explicit PrependNormalizer(std::string prefix) : prefix_(std::move(prefix)) {}
  void normalize(NormalizedString& text) const override { text.prepend(prefix_); }
  json to_json() const override { return {{"type", "Prepend"}, {"prepend", prefix_}}; }

 private:
  std::string prefix_;
};

class ByteLevelNormalizer : public Normalizer {
 public:
  void normalize(NormalizedString& text) const override { to_byte_level(text); }
  json to_json() const override { return {{"type", "ByteLevel"}}; }
};

/// SentencePiece's NMT normalization: ASCII controls removed, other spaces made ' '.
class NmtNormalizer : public Normalizer {
 public:
  void normalize(NormalizedString& text) const override {
    text.filter([](char32_t c) {
      return !((c >= 0x01 && c <= 0x08) || c == 0x0B || (c >= 0x0E && c <= 0x1F) || c == 0x7F ||
               c == 0x8F || c == 0x9F);
    });
    text.map_chars([](char32_t c, std::u32string& out) {
      const bool space = c == 0x09 || c == 0x0A || c == 0x0C || c == 0x0D || c == 0x1680 ||
                         (c >= 0x200B && c <= 0x200F) || c == 0x2028 || c == 0x2029 ||
                         c == 0x2581 || c == 0xFEFF || c == 0xFFFD;
      out.push_back(space ? U' ' : c);
    });
  }
  json to_json() const override { return {{"type", "Nmt"}}; }
};

class BertNormalizer : public Normalizer {
 public:
  BertNormalizer(bool clean_text, bool chinese, std::optional<bool> strip_accents, bool lower)
      : clean_text_(clean_text), chinese_(chinese), strip_accents_(strip_accents), lower_(lower) {}
  void normalize(NormalizedString& text) const override {
    if (clean_text_) {
      text.filter([](char32_t c) {
        const bool control = c != '\t' && c != '\n' && c != '\r' && unicode::is_other(c);
        return !(c == 0 || c == 0xFFFD || control);
      });
      text.map_chars([](char32_t c, std::u32string& out) {
        out.push_back(unicode::is_white_space(c) ? U' ' : c);
      });
    }
    if (chinese_) {
      std::vector<CharChange> changes;
      for (char32_t c : to_u32(text.get())) {
        if (is_bert_chinese_char(c)) {
          changes.push_back({U' ', 0});
          changes.push_back({c, 1});
          changes.push_back({U' ', 1});
        } else {
          changes.push_back({c, 0});
        }
      }
      text.transform(changes, 0);
    }
    if (strip_accents_.value_or(lower_)) {
      unicode_normalize(text, UnicodeForm::kNfd);
      text.filter([](char32_t c) { return !unicode::is_nonspacing_mark(c); });
    }
    if (lower_) lowercase(text);
  }
  json to_json() const override {
    return {{"type", "BertNormalizer"},
            {"clean_text", clean_text_},
            {"handle_chinese_chars", chinese_},
            {"strip_accents", strip_accents_ ? json(*strip_accents_) : json(nullptr)},
            {"lowercase", lower_}};
  }

 private:
  bool clean_text_, chinese_;
  std::optional<bool> strip_accents_;
  bool lower_;
};

class SequenceNormalizer : public Normalizer {
 public:
  explicit SequenceNormalizer(std::vector<std::shared_ptr<const Normalizer>> parts)
      : parts_(std::move(parts)) {}
  void normalize(NormalizedString& text) const override {
    for (const auto& part : parts_) part->normalize(text);
  }
  json to_json() const override {
    json list = json::array();
    for (const auto& part : parts_) list.push_back(part->to_json());
    return {{"type", "Sequence"}, {"normalizers", list}};
  }

 private:
  std::vector<std::shared_ptr<const Normalizer>> parts_;
};

}  // namespace

void unicode_normalize(NormalizedString& text, UnicodeForm form) {
  const std::string& s = text.get();
  bool ascii = true;
  for (char c : s) ascii = ascii && static_cast<unsigned char>(c) < 0x80;
  if (ascii) return;  // ASCII is in every normalization form already.
  const std::u32string chars = to_u32(s);
  std::vector<CharChange> changes;
  changes.reserve(chars.size());
  size_t begin = 0;
  while (begin < chars.size()) {
    size_t end = begin + 1;
    while (end < chars.size() && !starts_segment(chars[end])) ++end;
    const std::u32string segment = chars.substr(begin, end - begin);
    const std::u32string normal = utf8proc_normalize(segment, form);
    const size_t n = segment.size(), m = normal.size();
    for (size_t i = 0; i < m; ++i) {
      int64_t change = i < n ? 0 : 1;
      if (m < n && i == m - 1) change = -static_cast<int64_t>(n - m);
      changes.push_back({normal[i], change});
    }
    begin = end;
  }
  text.transform(changes, 0);
}

void lowercase(NormalizedString& text) {
  text.map_chars([](char32_t c, std::u32string& out) {
    if (c < 0x80) {
      out.push_back(c >= 'A' && c <= 'Z' ? c + 32 : c);
    } else if (c == 0x130) {  // İ lowercases to i + combining dot above in Rust's full mapping
      out.push_back(U'i');
      out.push_back(0x307);
    } else {
      out.push_back(static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(c))));
    }
  });
}

std::shared_ptr<const Normalizer> normalizer_from_json(const json& j, const std::string& path) {
  if (j.is_null()) return nullptr;
  const std::string type =
      json_type(j, path,
                {"NFC", "NFD", "NFKC", "NFKD", "Lowercase", "StripAccents", "Strip", "Replace",
                 "Prepend", "ByteLevel", "Nmt", "BertNormalizer", "Precompiled", "Sequence"},
                "normalizer");
  if (type == "NFC") return std::make_shared<UnicodeNormalizer>(UnicodeForm::kNfc, type);
  if (type == "NFD") return std::make_shared<UnicodeNormalizer>(UnicodeForm::kNfd, type);
  if (type == "NFKC") return std::make_shared<UnicodeNormalizer>(UnicodeForm::kNfkc, type);
  if (type == "NFKD") return std::make_shared<UnicodeNormalizer>(UnicodeForm::kNfkd, type);
  if (type == "Lowercase") return std::make_shared<LowercaseNormalizer>();
  if (type == "StripAccents") return std::make_shared<StripAccentsNormalizer>();
  if (type == "ByteLevel") return std::make_shared<ByteLevelNormalizer>();
  if (type == "Nmt") return std::make_shared<NmtNormalizer>();
  if (type == "Strip")
    return std::make_shared<StripNormalizer>(json_bool(j, path, "strip_left", true),
                                             json_bool(j, path, "strip_right", true));
  if (type == "Replace")
    return std::make_shared<ReplaceNormalizer>(json_pattern(j, path, "pattern"),
                                               json_string(j, path, "content"));
  if (type == "Prepend")
    return std::make_shared<PrependNormalizer>(json_string(j, path, "prepend"));
  if (type == "BertNormalizer")
    return std::make_shared<BertNormalizer>(
        json_bool(j, path, "clean_text", true), json_bool(j, path, "handle_chinese_chars", true),
        json_optional_bool(j, path, "strip_accents"), json_bool(j, path, "lowercase", true));
  if (type == "Precompiled") return precompiled_normalizer_from_json(j, path);
  return std::make_shared<SequenceNormalizer>(
      json_sequence<Normalizer>(j, path, "normalizers", normalizer_from_json));
}

}  // namespace ctrainer::tokenizers
