#include "lm_datasets.h"

#include <cfenv>
#include <cmath>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include <ctrainer/core/errors.h>

namespace run_lm {
namespace {
using ctrainer::ArgumentError;

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ArgumentError("cannot read " + path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

/// Bytes of the line boundary at `i` (0 if none): what str.splitlines splits on, after universal
/// newlines made every \r\n and \r a \n.
size_t line_break_at(const std::string& text, size_t i) {
  const auto c = static_cast<unsigned char>(text[i]);
  if (c == '\n' || c == '\v' || c == '\f' || c == 0x1c || c == 0x1d || c == 0x1e) return 1;
  if (c == 0xC2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) == 0x85)
    return 2;  // U+0085
  if (c == 0xE2 && i + 2 < text.size() && static_cast<unsigned char>(text[i + 1]) == 0x80 &&
      (static_cast<unsigned char>(text[i + 2]) == 0xA8 ||
       static_cast<unsigned char>(text[i + 2]) == 0xA9))
    return 3;  // U+2028, U+2029
  return 0;
}

std::vector<std::string> text_lines(const std::string& raw, bool keep_linebreaks) {
  std::string text;
  text.reserve(raw.size());
  for (size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] == '\r') {
      text.push_back('\n');
      if (i + 1 < raw.size() && raw[i + 1] == '\n') ++i;
    } else {
      text.push_back(raw[i]);
    }
  }
  std::vector<std::string> lines;
  size_t start = 0;
  for (size_t i = 0; i < text.size();) {
    if (const size_t n = line_break_at(text, i)) {
      lines.push_back(text.substr(start, (keep_linebreaks ? i + n : i) - start));
      i += n;
      start = i;
    } else {
      ++i;
    }
  }
  if (start < text.size()) lines.push_back(text.substr(start));
  return lines;
}

std::string text_of(const nlohmann::ordered_json& object, const std::string& where) {
  if (!object.is_object() || object.empty())
    throw ArgumentError(where + ": expected a JSON object with a \"text\" field");
  const auto& value = object.contains("text") ? object["text"] : object.begin().value();
  if (!value.is_string())
    throw ArgumentError(where + ": the text field is not a string (" + value.dump() + ")");
  return value.get<std::string>();
}

std::vector<std::string> json_examples(const std::string& raw, const std::string& path) {
  std::vector<std::string> out;
  const size_t first = raw.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && raw[first] == '[') {
    nlohmann::ordered_json array;
    try {
      array = nlohmann::ordered_json::parse(raw);
    } catch (const nlohmann::json::exception& e) {
      throw ArgumentError(path + ": not valid JSON (" + e.what() + ")");
    }
    for (size_t i = 0; i < array.size(); ++i)
      out.push_back(text_of(array[i], path + ", item " + std::to_string(i)));
    return out;
  }
  std::istringstream lines(raw);
  std::string line;
  for (int64_t number = 1; std::getline(lines, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    nlohmann::ordered_json object;
    try {
      object = nlohmann::ordered_json::parse(line);
    } catch (const nlohmann::json::exception& e) {
      throw ArgumentError(path + ", line " + std::to_string(number) +
                          ": not a JSON object (JSON lines expected): " + e.what());
    }
    out.push_back(text_of(object, path + ", line " + std::to_string(number)));
  }
  return out;
}

}  // namespace

std::vector<std::string> read_text_examples(const std::string& path, bool keep_linebreaks) {
  const std::string raw = read_file(path);
  if (path.ends_with(".txt")) return text_lines(raw, keep_linebreaks);
  return json_examples(raw, path);
}

std::pair<std::vector<std::string>, std::vector<std::string>> split_validation(
    std::vector<std::string> examples, int64_t percentage) {
  std::fesetround(FE_TONEAREST);  // Python's round(): halves to even
  const auto cut = static_cast<size_t>(std::nearbyint(
      static_cast<double>(percentage) * static_cast<double>(examples.size()) / 100.0));
  std::vector<std::string> validation(
      std::make_move_iterator(examples.begin()),
      std::make_move_iterator(examples.begin() + static_cast<std::ptrdiff_t>(cut)));
  examples.erase(examples.begin(), examples.begin() + static_cast<std::ptrdiff_t>(cut));
  return {std::move(validation), std::move(examples)};
}

std::shared_ptr<ctrainer::Dataset> group_texts(const std::vector<std::string>& texts,
                                               const ctrainer::Tokenizer& tokenizer,
                                               int64_t block_size, const std::string& split,
                                               std::optional<int64_t> max_blocks) {
  std::vector<int64_t> ids, mask;
  for (size_t begin = 0; begin < texts.size(); begin += kGroupTextsBatch) {
    std::vector<int64_t> group_ids, group_mask;
    const size_t end = std::min(texts.size(), begin + kGroupTextsBatch);
    for (size_t i = begin; i < end; ++i) {
      const ctrainer::Encoding encoding = tokenizer.encode(texts[i]);
      group_ids.insert(group_ids.end(), encoding.input_ids.begin(), encoding.input_ids.end());
      group_mask.insert(group_mask.end(), encoding.attention_mask.begin(),
                        encoding.attention_mask.end());
    }
    const auto total = static_cast<int64_t>(group_ids.size());
    if (total < block_size)
      throw ArgumentError(
          split + " data, texts " + std::to_string(begin) + " to " + std::to_string(end - 1) +
          ": block_size of " + std::to_string(block_size) +
          " is too big - use a value <=" + std::to_string(total) + " (--block_size)");
    const int64_t kept = total / block_size * block_size;
    ids.insert(ids.end(), group_ids.begin(), group_ids.begin() + kept);
    mask.insert(mask.end(), group_mask.begin(), group_mask.begin() + kept);
  }
  int64_t blocks = static_cast<int64_t>(ids.size()) / block_size;
  if (blocks == 0) throw ArgumentError(split + " data: no text to make a block of");
  if (max_blocks) blocks = std::min(blocks, *max_blocks);
  const at::Tensor input_ids =
      at::tensor(ids, at::kLong).narrow(0, 0, blocks * block_size).view({blocks, block_size});
  const at::Tensor attention_mask =
      at::tensor(mask, at::kLong).narrow(0, 0, blocks * block_size).view({blocks, block_size});
  return std::make_shared<ctrainer::TensorDataset>(std::map<std::string, at::Tensor>{
      {"input_ids", input_ids}, {"attention_mask", attention_mask}, {"labels", input_ids.clone()}});
}

namespace {

/// Examples held in memory (run_mlm's are few and of ragged lengths).
class ExampleList : public ctrainer::Dataset {
 public:
  explicit ExampleList(std::vector<ctrainer::Example> examples) : examples_(std::move(examples)) {}
  int64_t size() const override { return static_cast<int64_t>(examples_.size()); }
  ctrainer::Example get(int64_t index) const override {
    return examples_.at(static_cast<size_t>(index));
  }
  std::optional<std::vector<int64_t>> lengths() const override {
    std::vector<int64_t> out;
    for (const auto& e : examples_) out.push_back(e.at("input_ids").size(0));
    return out;
  }

 private:
  std::vector<ctrainer::Example> examples_;
};

/// The token columns of one text or of a concatenation of texts.
struct Columns {
  std::vector<int64_t> ids, mask, types, special, offsets;  // offsets: start, end pairs

  void append(const ctrainer::Encoding& e, bool with_offsets) {
    ids.insert(ids.end(), e.input_ids.begin(), e.input_ids.end());
    mask.insert(mask.end(), e.attention_mask.begin(), e.attention_mask.end());
    types.insert(types.end(), e.token_type_ids.begin(), e.token_type_ids.end());
    special.insert(special.end(), e.special_tokens_mask.begin(), e.special_tokens_mask.end());
    if (with_offsets)
      for (const auto& [start, end] : e.offsets) {
        offsets.push_back(start);
        offsets.push_back(end);
      }
  }

  /// Tokens [begin, begin + n) as one example.
  ctrainer::Example slice(int64_t begin, int64_t n, bool with_offsets) const {
    auto column = [&](const std::vector<int64_t>& v, int64_t width) {
      return at::tensor(
                 std::vector<int64_t>(v.begin() + begin * width, v.begin() + (begin + n) * width),
                 at::kLong)
          .view(width == 1 ? std::vector<int64_t>{n} : std::vector<int64_t>{n, width});
    };
    ctrainer::Example e;
    e.set("input_ids", column(ids, 1));
    e.set("attention_mask", column(mask, 1));
    e.set("special_tokens_mask", column(special, 1));
    if (!types.empty()) e.set("token_type_ids", column(types, 1));
    if (with_offsets) e.set("offset_mapping", column(offsets, 2));
    return e;
  }
};

ctrainer::Encoding encode_for_mlm(const ctrainer::Tokenizer& tokenizer, const std::string& text,
                                  const ctrainer::EncodeOptions& options, bool with_offsets) {
  ctrainer::Encoding e = tokenizer.encode(text, std::nullopt, options);
  if (e.special_tokens_mask.size() != e.input_ids.size()) {
    // Tokenizers that do not track it (vocab.txt WordPiece): HF's get_special_tokens_mask.
    e.special_tokens_mask.clear();
    for (int64_t id : e.input_ids) e.special_tokens_mask.push_back(tokenizer.is_special_id(id));
  }
  if (with_offsets && e.offsets.size() != e.input_ids.size())
    throw ArgumentError(
        "--whole_word_mask needs each token's character offsets, which this tokenizer (" +
        tokenizer.tokenizer_class() +
        ") does not track: use a tokenizer.json tokenizer, or drop --whole_word_mask");
  return e;
}

}  // namespace

std::shared_ptr<ctrainer::Dataset> mlm_examples(const std::vector<std::string>& texts,
                                                const ctrainer::Tokenizer& tokenizer,
                                                const MlmTokenization& options,
                                                const std::string& split,
                                                std::optional<int64_t> max_examples) {
  std::vector<ctrainer::Example> examples;
  const int64_t length = options.max_seq_length;
  if (options.line_by_line) {
    ctrainer::EncodeOptions encode;
    encode.max_length = length;
    encode.truncation = ctrainer::Truncation::kLongestFirst;
    if (options.pad_to_max_length) encode.padding = ctrainer::Padding::kMaxLength;
    for (const std::string& text : texts) {
      // Python's isspace() for ASCII (other Unicode spaces are kept as text).
      if (text.find_first_not_of(" \t\n\r\v\f\x1c\x1d\x1e\x1f") == std::string::npos) continue;
      Columns columns;
      columns.append(encode_for_mlm(tokenizer, text, encode, options.offsets), options.offsets);
      examples.push_back(
          columns.slice(0, static_cast<int64_t>(columns.ids.size()), options.offsets));
    }
  } else {
    for (size_t begin = 0; begin < texts.size(); begin += kGroupTextsBatch) {
      Columns group;
      for (size_t i = begin; i < std::min(texts.size(), begin + kGroupTextsBatch); ++i)
        group.append(encode_for_mlm(tokenizer, texts[i], {}, options.offsets), options.offsets);
      auto total = static_cast<int64_t>(group.ids.size());
      if (total >= length) total = total / length * length;
      for (int64_t start = 0; start < total; start += length)
        examples.push_back(group.slice(start, std::min(length, total - start), options.offsets));
    }
  }
  if (examples.empty()) throw ArgumentError(split + " data: no text to make an example of");
  if (max_examples && static_cast<int64_t>(examples.size()) > *max_examples)
    examples.resize(static_cast<size_t>(*max_examples));
  return std::make_shared<ExampleList>(std::move(examples));
}

}  // namespace run_lm
