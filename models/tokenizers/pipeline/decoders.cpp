#include <ctrainer/models/tokenizers/pipeline/decoders.h>

#include <cctype>

#include <ctrainer/models/tokenizers/pipeline/byte_level.h>
#include <ctrainer/models/tokenizers/pipeline/json_fields.h>
#include <ctrainer/models/tokenizers/pipeline/patterns.h>
#include <ctrainer/models/tokenizers/unicode.h>

namespace ctrainer::tokenizers {

namespace {

using nlohmann::json;

const char* const kReplacementCharacter = "\xEF\xBF\xBD";

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  if (from.empty()) return s;
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

class ByteLevelDecoder : public Decoder {
 public:
  explicit ByteLevelDecoder(json config) : config_(std::move(config)) {}
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    std::string bytes;
    for (const auto& token : tokens) {
      std::string mapped;
      bool all_mapped = true;
      for (char32_t c : to_u32(token)) {
        const auto b = char_to_byte(c);
        if (!b) {
          all_mapped = false;
          break;
        }
        mapped.push_back(static_cast<char>(*b));
      }
      bytes += all_mapped ? mapped : token;
    }
    return {utf8_lossy(bytes)};
  }
  json to_json() const override { return config_; }

 private:
  json config_;  // its options only matter to the pre-tokenizer of the same name
};

class MetaspaceDecoder : public Decoder {
 public:
  MetaspaceDecoder(char32_t replacement, std::string scheme, bool split)
      : replacement_(replacement), scheme_(std::move(scheme)), split_(split) {}
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      std::u32string out;
      for (char32_t c : to_u32(tokens[i])) {
        if (c != replacement_)
          out.push_back(c);
        else if (!(i == 0 && scheme_ != "never"))
          out.push_back(U' ');
      }
      tokens[i] = to_utf8(out);
    }
    return tokens;
  }
  json to_json() const override {
    return {{"type", "Metaspace"},
            {"replacement", to_utf8(std::u32string(1, replacement_))},
            {"prepend_scheme", scheme_},
            {"split", split_}};
  }

 private:
  char32_t replacement_;
  std::string scheme_;
  bool split_;
};

class WordPieceDecoder : public Decoder {
 public:
  WordPieceDecoder(std::string prefix, bool cleanup)
      : prefix_(std::move(prefix)), cleanup_(cleanup) {}
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      auto& token = tokens[i];
      if (i != 0) {
        if (token.rfind(prefix_, 0) == 0)
          token.erase(0, prefix_.size());
        else
          token = " " + token;
      }
      if (cleanup_) token = cleanup(token);
    }
    return tokens;
  }
  json to_json() const override {
    return {{"type", "WordPiece"}, {"prefix", prefix_}, {"cleanup", cleanup_}};
  }
  /// The Rust WordPiece decoder's clean-up: transformers' list plus " do not" -> " don't".
  static std::string cleanup(std::string s) {
    return replace_all(clean_up_tokenization(std::move(s)), " do not", " don't");
  }

 private:
  std::string prefix_;
  bool cleanup_;
};

class BpeDecoder : public Decoder {
 public:
  explicit BpeDecoder(std::string suffix) : suffix_(std::move(suffix)) {}
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i)
      tokens[i] = replace_all(tokens[i], suffix_, i + 1 == tokens.size() ? "" : " ");
    return tokens;
  }
  json to_json() const override { return {{"type", "BPEDecoder"}, {"suffix", suffix_}}; }

 private:
  std::string suffix_;
};

class ByteFallbackDecoder : public Decoder {
 public:
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    std::vector<std::string> out;
    std::string pending;
    const auto flush = [&] {
      if (pending.empty()) return;
      if (!unicode::first_invalid_utf8(pending))
        out.push_back(pending);
      else
        for (size_t k = 0; k < pending.size(); ++k) out.emplace_back(kReplacementCharacter);
      pending.clear();
    };
    for (auto& token : tokens) {
      if (token.size() == 6 && token.rfind("<0x", 0) == 0 && token.back() == '>' &&
          std::isxdigit(static_cast<unsigned char>(token[3])) &&
          std::isxdigit(static_cast<unsigned char>(token[4]))) {
        pending.push_back(static_cast<char>(std::stoi(token.substr(3, 2), nullptr, 16)));
        continue;
      }
      flush();
      out.push_back(std::move(token));
    }
    flush();
    return out;
  }
  json to_json() const override { return {{"type", "ByteFallback"}}; }
};

class FuseDecoder : public Decoder {
 public:
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    std::string all;
    for (const auto& t : tokens) all += t;
    return {all};
  }
  json to_json() const override { return {{"type", "Fuse"}}; }
};

class StripDecoder : public Decoder {
 public:
  StripDecoder(char32_t content, size_t start, size_t stop)
      : content_(content), start_(start), stop_(stop) {}
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    for (auto& token : tokens) {
      const std::u32string chars = to_u32(token);
      size_t start_cut = 0;
      for (size_t i = 0; i < start_ && i < chars.size() && chars[i] == content_; ++i)
        start_cut = i + 1;
      size_t stop_cut = chars.size();
      for (size_t i = 0; i < stop_ && i < chars.size(); ++i) {
        const size_t index = chars.size() - i - 1;
        if (chars[index] != content_) break;
        stop_cut = index;
      }
      token = start_cut < stop_cut ? to_utf8(chars.substr(start_cut, stop_cut - start_cut)) : "";
    }
    return tokens;
  }
  json to_json() const override {
    return {{"type", "Strip"},
            {"content", to_utf8(std::u32string(1, content_))},
            {"start", start_},
            {"stop", stop_}};
  }

 private:
  char32_t content_;
  size_t start_, stop_;
};

class ReplaceDecoder : public Decoder {
 public:
  ReplaceDecoder(Pattern pattern, std::string content)
      : pattern_(std::move(pattern)), content_(std::move(content)) {}
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    for (auto& token : tokens) {
      std::string out;
      size_t previous = 0;
      for (const auto& [start, end] : pattern_.find_all(token)) {
        out.append(token, previous, start - previous);
        out += content_;
        previous = end;
      }
      out.append(token, previous, std::string::npos);
      token = std::move(out);
    }
    return tokens;
  }
  json to_json() const override {
    return {{"type", "Replace"}, {"pattern", pattern_to_json(pattern_)}, {"content", content_}};
  }

 private:
  Pattern pattern_;
  std::string content_;
};

class SequenceDecoder : public Decoder {
 public:
  explicit SequenceDecoder(std::vector<std::shared_ptr<const Decoder>> parts)
      : parts_(std::move(parts)) {}
  std::vector<std::string> decode_chain(std::vector<std::string> tokens) const override {
    for (const auto& p : parts_) tokens = p->decode_chain(std::move(tokens));
    return tokens;
  }
  json to_json() const override {
    json list = json::array();
    for (const auto& p : parts_) list.push_back(p->to_json());
    return {{"type", "Sequence"}, {"decoders", list}};
  }

 private:
  std::vector<std::shared_ptr<const Decoder>> parts_;
};

}  // namespace

std::string clean_up_tokenization(std::string text) {
  for (const auto& [from, to] :
       std::initializer_list<std::pair<const char*, const char*>>{{" .", "."},
                                                                  {" ?", "?"},
                                                                  {" !", "!"},
                                                                  {" ,", ","},
                                                                  {" ' ", "'"},
                                                                  {" n't", "n't"},
                                                                  {" 'm", "'m"},
                                                                  {" 's", "'s"},
                                                                  {" 've", "'ve"},
                                                                  {" 're", "'re"}})
    text = replace_all(std::move(text), from, to);
  return text;
}

std::string Decoder::decode(std::vector<std::string> tokens) const {
  std::string text;
  for (const auto& piece : decode_chain(std::move(tokens))) text += piece;
  return text;
}

std::string utf8_lossy(const std::string& bytes) {
  std::string out;
  out.reserve(bytes.size());
  size_t i = 0;
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(bytes[k]); };
  while (i < bytes.size()) {
    const unsigned char b = byte(i);
    if (b < 0x80) {
      out.push_back(static_cast<char>(b));
      ++i;
      continue;
    }
    // Expected length and the valid range of the second byte (Unicode's well-formed table).
    size_t need = 0;
    unsigned char low = 0x80, high = 0xBF;
    if (b >= 0xC2 && b <= 0xDF) {
      need = 1;
    } else if (b >= 0xE0 && b <= 0xEF) {
      need = 2;
      if (b == 0xE0) low = 0xA0;
      if (b == 0xED) high = 0x9F;
    } else if (b >= 0xF0 && b <= 0xF4) {
      need = 3;
      if (b == 0xF0) low = 0x90;
      if (b == 0xF4) high = 0x8F;
    }
    size_t valid = 0;  // continuation bytes that fit
    for (size_t k = 1; k <= need && i + k < bytes.size(); ++k) {
      const unsigned char c = byte(i + k);
      const bool ok = k == 1 ? (c >= low && c <= high) : (c >= 0x80 && c <= 0xBF);
      if (!ok) break;
      ++valid;
    }
    if (need > 0 && valid == need) {
      out.append(bytes, i, need + 1);
      i += need + 1;
    } else {
      out += kReplacementCharacter;  // the maximal invalid subpart counts once
      i += need == 0 ? 1 : valid + 1;
    }
  }
  return out;
}

std::shared_ptr<const Decoder> decoder_from_json(const json& j, const std::string& path) {
  if (j.is_null()) return nullptr;
  const std::string type = json_type(j, path,
                                     {"ByteLevel", "Metaspace", "WordPiece", "BPEDecoder",
                                      "ByteFallback", "Fuse", "Strip", "Replace", "Sequence"},
                                     "decoder");
  if (type == "ByteLevel") return std::make_shared<ByteLevelDecoder>(j);
  if (type == "Metaspace") {
    std::string scheme = json_optional_string(j, path, "prepend_scheme").value_or("always");
    if (json_optional_bool(j, path, "add_prefix_space") == false) scheme = "never";
    return std::make_shared<MetaspaceDecoder>(json_char(j, path, "replacement"), scheme,
                                              json_bool(j, path, "split", true));
  }
  if (type == "WordPiece")
    return std::make_shared<WordPieceDecoder>(
        json_optional_string(j, path, "prefix").value_or("##"),
        json_bool(j, path, "cleanup", true));
  if (type == "BPEDecoder")
    return std::make_shared<BpeDecoder>(json_optional_string(j, path, "suffix").value_or("</w>"));
  if (type == "ByteFallback") return std::make_shared<ByteFallbackDecoder>();
  if (type == "Fuse") return std::make_shared<FuseDecoder>();
  if (type == "Strip") {
    const int64_t start = json_int(j, path, "start", 0), stop = json_int(j, path, "stop", 0);
    if (start < 0 || stop < 0)
      throw TokenizerJsonError(path, "start and stop must not be negative");
    return std::make_shared<StripDecoder>(json_char(j, path, "content"), static_cast<size_t>(start),
                                          static_cast<size_t>(stop));
  }
  if (type == "Replace")
    return std::make_shared<ReplaceDecoder>(json_pattern(j, path, "pattern"),
                                            json_string(j, path, "content"));
  return std::make_shared<SequenceDecoder>(
      json_sequence<Decoder>(j, path, "decoders", decoder_from_json));
}

}  // namespace ctrainer::tokenizers
