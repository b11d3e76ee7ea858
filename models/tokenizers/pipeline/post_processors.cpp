#include <ctrainer/models/tokenizers/pipeline/post_processors.h>

#include <algorithm>
#include <map>

#include <ctrainer/models/tokenizers/pipeline/byte_level.h>
#include <ctrainer/models/tokenizers/pipeline/json_fields.h>
#include <ctrainer/models/tokenizers/unicode.h>

namespace ctrainer::tokenizers {

namespace {

using nlohmann::json;

/// A special token with its id: ["[SEP]", 102] in tokenizer.json.
struct NamedId {
  std::string token;
  int64_t id = 0;
};

NamedId named_id(const json& j, const std::string& path, const std::string& key) {
  const auto& v = json_field(j, path, key);
  if (!v.is_array() || v.size() != 2 || !v[0].is_string() || !v[1].is_number_integer())
    throw TokenizerJsonError(json_child(path, key), "expected [\"token\", id], got " + v.dump());
  return {v[0].get<std::string>(), v[1].get<int64_t>()};
}

/// `before` + `e` + `after`, and each of `e`'s overflowing windows wrapped the same way (the
/// windows truncation cut get the special tokens too, as HF's processors give them).
TokenEncoding wrapped(const TokenEncoding& e, const TokenEncoding& before,
                      const TokenEncoding& after) {
  TokenEncoding out = before;
  out.append(e);
  out.append(after);
  for (const auto& window : e.overflowing)
    out.overflowing.push_back(wrapped(window, before, after));
  return out;
}

class BertProcessing : public PostProcessor {
 public:
  BertProcessing(NamedId sep, NamedId cls) : sep_(std::move(sep)), cls_(std::move(cls)) {}
  size_t added_tokens(bool is_pair) const override { return is_pair ? 3 : 2; }
  std::vector<TokenEncoding> process(std::vector<TokenEncoding> encodings,
                                     bool add_special_tokens) const override {
    if (!add_special_tokens) return encodings;
    std::vector<TokenEncoding> out;
    for (size_t i = 0; i < encodings.size(); ++i) {
      // The windows keep the type ids of their sequence (0 for the first, 1 for the pair).
      const int64_t type_id = i == 0 ? 0 : 1;
      std::fill(encodings[i].type_ids.begin(), encodings[i].type_ids.end(), type_id);
      out.push_back(
          wrapped(encodings[i],
                  i == 0 ? TokenEncoding::special({cls_.id}, {cls_.token}, 0) : TokenEncoding(),
                  TokenEncoding::special({sep_.id}, {sep_.token}, type_id)));
    }
    return out;
  }
  json to_json() const override {
    return {
        {"type", "BertProcessing"}, {"sep", {sep_.token, sep_.id}}, {"cls", {cls_.token, cls_.id}}};
  }

 private:
  NamedId sep_, cls_;
};

class RobertaProcessing : public PostProcessor {
 public:
  RobertaProcessing(NamedId sep, NamedId cls, bool trim_offsets, bool add_prefix_space)
      : sep_(std::move(sep)),
        cls_(std::move(cls)),
        trim_offsets_(trim_offsets),
        add_prefix_space_(add_prefix_space) {}
  size_t added_tokens(bool is_pair) const override { return is_pair ? 4 : 2; }
  std::vector<TokenEncoding> process(std::vector<TokenEncoding> encodings,
                                     bool add_special_tokens) const override {
    for (auto& e : encodings) {
      if (trim_offsets_) {
        trim_byte_level_offsets(e, add_prefix_space_);
        for (auto& window : e.overflowing) trim_byte_level_offsets(window, add_prefix_space_);
      }
      // RoBERTa has one segment type. HF resets the sequence's own type ids only: without
      // special tokens, a pair's windows keep type id 1.
      std::fill(e.type_ids.begin(), e.type_ids.end(), 0);
    }
    if (!add_special_tokens) return encodings;
    std::vector<TokenEncoding> out;
    for (size_t i = 0; i < encodings.size(); ++i) {
      for (auto& window : encodings[i].overflowing)
        std::fill(window.type_ids.begin(), window.type_ids.end(), 0);
      out.push_back(wrapped(encodings[i],
                            i == 0 ? TokenEncoding::special({cls_.id}, {cls_.token}, 0)
                                   : TokenEncoding::special({sep_.id}, {sep_.token}, 0),
                            TokenEncoding::special({sep_.id}, {sep_.token}, 0)));
    }
    return out;
  }
  json to_json() const override {
    return {{"type", "RobertaProcessing"},
            {"sep", {sep_.token, sep_.id}},
            {"cls", {cls_.token, cls_.id}},
            {"trim_offsets", trim_offsets_},
            {"add_prefix_space", add_prefix_space_}};
  }

 private:
  NamedId sep_, cls_;
  bool trim_offsets_, add_prefix_space_;
};

class ByteLevelProcessing : public PostProcessor {
 public:
  ByteLevelProcessing(bool trim_offsets, bool add_prefix_space, bool use_regex)
      : trim_offsets_(trim_offsets), add_prefix_space_(add_prefix_space), use_regex_(use_regex) {}
  size_t added_tokens(bool) const override { return 0; }
  std::vector<TokenEncoding> process(std::vector<TokenEncoding> encodings, bool) const override {
    if (trim_offsets_)
      for (auto& e : encodings) {
        trim_byte_level_offsets(e, add_prefix_space_);
        for (auto& window : e.overflowing) trim_byte_level_offsets(window, add_prefix_space_);
      }
    return encodings;
  }
  json to_json() const override {
    return {{"type", "ByteLevel"},
            {"add_prefix_space", add_prefix_space_},
            {"trim_offsets", trim_offsets_},
            {"use_regex", use_regex_}};
  }

 private:
  bool trim_offsets_, add_prefix_space_, use_regex_;
};

/// TemplateProcessing: "$A" / "$B" for the sequences and special tokens, each with a type id.
class TemplateProcessing : public PostProcessor {
 public:
  struct Piece {
    bool is_sequence = false;
    std::string id;  ///< "A" / "B", or the special token's name
    int64_t type_id = 0;
  };
  struct Special {
    std::vector<int64_t> ids;
    std::vector<std::string> tokens;
  };

  TemplateProcessing(const json& j, const std::string& path) {
    const auto& specials = json_field(j, path, "special_tokens");
    const std::string specials_path = json_child(path, "special_tokens");
    if (!specials.is_object())
      throw TokenizerJsonError(specials_path, "expected an object, got " + specials.dump());
    for (const auto& [name, value] : specials.items()) {
      const std::string where = json_child(specials_path, name);
      Special s;
      for (const auto& id : json_array(value, where, "ids")) {
        if (!id.is_number_integer())
          throw TokenizerJsonError(json_child(where, "ids"), "expected integer ids");
        s.ids.push_back(id.get<int64_t>());
      }
      for (const auto& token : json_array(value, where, "tokens")) {
        if (!token.is_string())
          throw TokenizerJsonError(json_child(where, "tokens"), "expected strings");
        s.tokens.push_back(token.get<std::string>());
      }
      if (s.ids.size() != s.tokens.size())
        throw TokenizerJsonError(where, "ids and tokens differ in length");
      specials_[name] = std::move(s);
    }
    single_ = template_from_json(j, path, "single");
    pair_ = template_from_json(j, path, "pair");
  }
  size_t added_tokens(bool is_pair) const override {
    size_t n = 0;
    for (const auto& p : is_pair ? pair_ : single_)
      if (!p.is_sequence) n += specials_.at(p.id).ids.size();
    return n;
  }
  std::vector<TokenEncoding> process(std::vector<TokenEncoding> encodings,
                                     bool add_special_tokens) const override {
    // The pieces in template order; merging them (TokenEncoding::merge) gives each overflowing
    // window the template's special tokens. A window keeps its own type ids, as in HF.
    const auto& pieces = encodings.size() > 1 ? pair_ : single_;
    std::vector<TokenEncoding> out;
    for (const auto& p : pieces) {
      if (p.is_sequence) {
        const size_t index = p.id == "A" ? 0 : 1;
        if (index >= encodings.size()) continue;
        out.push_back(encodings[index]);
        std::fill(out.back().type_ids.begin(), out.back().type_ids.end(), p.type_id);
      } else if (add_special_tokens) {
        const Special& s = specials_.at(p.id);
        out.push_back(TokenEncoding::special(s.ids, s.tokens, p.type_id));
      }
    }
    return out;
  }
  json to_json() const override {
    json specials = json::object();
    for (const auto& [name, s] : specials_)
      specials[name] = {{"id", name}, {"ids", s.ids}, {"tokens", s.tokens}};
    return {{"type", "TemplateProcessing"},
            {"single", template_to_json(single_)},
            {"pair", template_to_json(pair_)},
            {"special_tokens", specials}};
  }

 private:
  std::vector<Piece> template_from_json(const json& j, const std::string& path,
                                        const std::string& key) const {
    const auto& list = json_array(j, path, key);
    const std::string where = json_child(path, key);
    std::vector<Piece> pieces;
    for (size_t i = 0; i < list.size(); ++i) {
      const std::string item = json_item(where, i);
      const auto& entry = list[i];
      Piece p;
      if (entry.is_object() && entry.contains("Sequence")) {
        p.is_sequence = true;
        p.id = json_string(entry.at("Sequence"), json_child(item, "Sequence"), "id");
        if (p.id != "A" && p.id != "B")
          throw TokenizerJsonError(json_child(json_child(item, "Sequence"), "id"),
                                   "expected \"A\" or \"B\", got \"" + p.id + "\"");
        p.type_id = json_int(entry.at("Sequence"), json_child(item, "Sequence"), "type_id", 0);
      } else if (entry.is_object() && entry.contains("SpecialToken")) {
        p.id = json_string(entry.at("SpecialToken"), json_child(item, "SpecialToken"), "id");
        p.type_id =
            json_int(entry.at("SpecialToken"), json_child(item, "SpecialToken"), "type_id", 0);
        if (specials_.count(p.id) == 0)
          throw TokenizerJsonError(json_child(json_child(item, "SpecialToken"), "id"),
                                   "\"" + p.id + "\" is not in special_tokens");
      } else {
        throw TokenizerJsonError(item,
                                 "expected {\"Sequence\": ...} or {\"SpecialToken\": ...}, "
                                 "got " +
                                     entry.dump());
      }
      pieces.push_back(std::move(p));
    }
    return pieces;
  }
  static json template_to_json(const std::vector<Piece>& pieces) {
    json list = json::array();
    for (const auto& p : pieces)
      list.push_back(
          {{p.is_sequence ? "Sequence" : "SpecialToken", {{"id", p.id}, {"type_id", p.type_id}}}});
    return list;
  }

  std::map<std::string, Special> specials_;
  std::vector<Piece> single_, pair_;
};

class SequenceProcessing : public PostProcessor {
 public:
  explicit SequenceProcessing(std::vector<std::shared_ptr<const PostProcessor>> parts)
      : parts_(std::move(parts)) {}
  size_t added_tokens(bool is_pair) const override {
    size_t n = 0;
    for (const auto& p : parts_) n += p->added_tokens(is_pair);
    return n;
  }
  std::vector<TokenEncoding> process(std::vector<TokenEncoding> encodings,
                                     bool add_special_tokens) const override {
    for (const auto& p : parts_) encodings = p->process(std::move(encodings), add_special_tokens);
    return encodings;
  }
  json to_json() const override {
    json list = json::array();
    for (const auto& p : parts_) list.push_back(p->to_json());
    return {{"type", "Sequence"}, {"processors", list}};
  }

 private:
  std::vector<std::shared_ptr<const PostProcessor>> parts_;
};

}  // namespace

void trim_byte_level_offsets(TokenEncoding& encoding, bool add_prefix_space) {
  const char32_t space = byte_to_char(' ');
  const auto is_space = [&](char32_t c) { return c == space || unicode::is_white_space(c); };
  for (size_t i = 0; i < encoding.size(); ++i) {
    const std::u32string chars = to_u32(encoding.tokens[i]);
    size_t leading = 0, trailing = 0;
    while (leading < chars.size() && is_space(chars[leading])) ++leading;
    while (trailing < chars.size() && is_space(chars[chars.size() - 1 - trailing])) ++trailing;
    auto& [start, end] = encoding.offsets[i];
    if (leading > 0) {
      const bool is_first = i == 0 || start == 0;
      if (is_first && add_prefix_space && leading == 1) leading = 0;
      start = std::min(start + leading, end);
    }
    if (trailing > 0 && end >= trailing) end = std::max(end - trailing, start);
  }
}

std::shared_ptr<const PostProcessor> post_processor_from_json(const json& j,
                                                              const std::string& path) {
  if (j.is_null()) return nullptr;
  const std::string type = json_type(
      j, path,
      {"TemplateProcessing", "BertProcessing", "RobertaProcessing", "ByteLevel", "Sequence"},
      "post-processor");
  if (type == "TemplateProcessing") return std::make_shared<TemplateProcessing>(j, path);
  if (type == "BertProcessing")
    return std::make_shared<BertProcessing>(named_id(j, path, "sep"), named_id(j, path, "cls"));
  if (type == "RobertaProcessing")
    return std::make_shared<RobertaProcessing>(named_id(j, path, "sep"), named_id(j, path, "cls"),
                                               json_bool(j, path, "trim_offsets", true),
                                               json_bool(j, path, "add_prefix_space", true));
  if (type == "ByteLevel")
    return std::make_shared<ByteLevelProcessing>(json_bool(j, path, "trim_offsets", true),
                                                 json_bool(j, path, "add_prefix_space", true),
                                                 json_bool(j, path, "use_regex", true));
  return std::make_shared<SequenceProcessing>(
      json_sequence<PostProcessor>(j, path, "processors", post_processor_from_json));
}

}  // namespace ctrainer::tokenizers
