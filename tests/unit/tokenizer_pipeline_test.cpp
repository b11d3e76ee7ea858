// The tokenizer.json pipeline against closed-form results: alignments of a NormalizedString,
// BPE merge order, Unigram's best segmentation, truncation of pairs, Rust's lossy UTF-8, and
// every malformed tokenizer.json refused with the file and the JSON path. Parity with the Rust
// library on real text is tests/parity/tokenizer_json_parity.py.
#include <gtest/gtest.h>

#include <dlfcn.h>
#include <regex.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <ctrainer/core/errors.h>
#include <ctrainer/models/tokenizers/pipeline/decoders.h>
#include <ctrainer/models/tokenizers/pipeline/normalized_string.h>
#include <ctrainer/models/tokenizers/pipeline/patterns.h>
#include <ctrainer/models/tokenizers/pipeline/pipeline_tokenizer.h>
#include <ctrainer/models/tokenizers/pipeline/post_processors.h>
#include <ctrainer/models/tokenizers/pipeline/pretrained_tokenizer_fast.h>
#include <ctrainer/models/tokenizers/pipeline/token_encoding.h>
#include <ctrainer/models/tokenizers/tokenizer_registry.h>

namespace tokenizer_pipeline_test {

namespace fs = std::filesystem;
using ctrainer::tokenizers::NormalizedString;
using ctrainer::tokenizers::Offsets;
using ctrainer::tokenizers::PipelineTokenizer;
using nlohmann::json;

std::vector<Offsets> alignments(const NormalizedString& s) {
  return s.alignments();
}

TEST(NormalizedString, PrependAndReplaceAlignWithTheCharacterTheyStandFor) {
  NormalizedString s("ab c");
  s.prepend("_");  // aligns with 'a'
  EXPECT_EQ(s.get(), "_ab c");
  EXPECT_EQ(alignments(s), (std::vector<Offsets>{{0, 1}, {0, 1}, {1, 2}, {2, 3}, {3, 4}}));
  s.replace_ranges({{3, 4}}, "\xE2\x96\x81");  // ' ' -> '▁' (3 bytes), each aligned with ' '
  EXPECT_EQ(s.get(),
            "_ab\xE2\x96\x81"
            "c");
  EXPECT_EQ(s.original_range(3, 6), (Offsets{2, 3}));
  EXPECT_EQ(s.original_range(0, s.size()), (Offsets{0, 4}));
}

TEST(NormalizedString, FilterStripAndSliceKeepOriginalOffsets) {
  NormalizedString s("  x\xCC\x81y  ");  // two spaces, x, combining acute, y, two spaces
  s.strip(true, true);
  EXPECT_EQ(s.get(), "x\xCC\x81y");
  s.filter([](char32_t c) { return c != 0x301; });
  EXPECT_EQ(s.get(), "xy");
  EXPECT_EQ(s.original_range(0, 1), (Offsets{2, 3}));
  EXPECT_EQ(s.original_range(1, 2), (Offsets{5, 6}));
  const NormalizedString y = s.slice(1, 2);
  EXPECT_EQ(y.get(), "y");
  EXPECT_EQ(y.original_offsets(), (Offsets{5, 6}));
}

TEST(NormalizedString, MappingToSeveralCharactersInsertsAfterTheFirst) {
  NormalizedString s("A\xC4\xB0");  // A, İ (lowercases to i + U+0307)
  s.map_chars([](char32_t c, std::u32string& out) {
    if (c == 0x130) {
      out += U'i';
      out += char32_t{0x307};
    } else {
      out += c;
    }
  });
  EXPECT_EQ(s.get(), "Ai\xCC\x87");
  EXPECT_EQ(s.original_range(1, 4), (Offsets{1, 3}));  // both parts map back to İ
}

TEST(Oniguruma, LoadsWithoutReplacingThePosixRegexOfTheProgram) {
  // Debian's libonig exports regcomp/regexec too; linked normally, they replaced glibc's for the
  // whole program. Once a tokenizer regex has loaded it, the program's regcomp is still libc's.
  const ctrainer::tokenizers::Regex gpt2_words(R"( ?\p{L}+|\s+(?!\S))");
  EXPECT_EQ(gpt2_words.find_all("hi  there").size(), 3u);
  Dl_info where{};
  ASSERT_NE(::dladdr(reinterpret_cast<void*>(&::regcomp), &where), 0);
  EXPECT_EQ(std::string(where.dli_fname).find("onig"), std::string::npos) << where.dli_fname;
  regex_t empty;
  ASSERT_EQ(::regcomp(&empty, "()", REG_EXTENDED), 0);
  EXPECT_EQ(::regexec(&empty, "anything", 0, nullptr, 0), 0);
  ::regfree(&empty);
}

json tokenizer_json(json model, json extra = json::object()) {
  json j = {{"version", "1.0"},          {"truncation", nullptr},
            {"padding", nullptr},        {"added_tokens", json::array()},
            {"normalizer", nullptr},     {"pre_tokenizer", nullptr},
            {"post_processor", nullptr}, {"decoder", nullptr},
            {"model", std::move(model)}};
  for (auto& [k, v] : extra.items()) j[k] = v;
  return j;
}

std::vector<std::string> tokens_of(const PipelineTokenizer& t, const std::string& text) {
  return t.encode(text, nullptr, false).tokens;
}

TEST(BpeModel, MergesTheBestRankedPairFirst) {
  // (b, c) ranks before (a, b): "abc" -> a + bc -> abc; "abd" -> ab + d.
  const json model = json::parse(R"({"type": "BPE", "merges": [["b", "c"], ["a", "b"], ["a", "bc"]],
      "vocab": {"a": 0, "b": 1, "c": 2, "d": 3, "bc": 4, "ab": 5, "abc": 6}})");
  const PipelineTokenizer t(tokenizer_json(model), "test");
  EXPECT_EQ(tokens_of(t, "abc"), (std::vector<std::string>{"abc"}));
  EXPECT_EQ(tokens_of(t, "abd"), (std::vector<std::string>{"ab", "d"}));
  EXPECT_EQ(tokens_of(t, "cab"), (std::vector<std::string>{"c", "ab"}));
}

TEST(BpeModel, AMergeRankedBeforeTheOneThatMakesItsPartStillWinsAsInTheRustLibrary) {
  // (ab, a) ranks before (a, b), which makes its part "ab": once "ab" exists the better-ranked
  // merge goes next. Goldens from tokenizers 0.23 (models.BPE with these merges).
  const json model = json::parse(R"({"type": "BPE", "merges": [["ab", "a"], ["a", "b"]],
      "vocab": {"a": 0, "b": 1, "ab": 2, "aba": 3}})");
  const PipelineTokenizer t(tokenizer_json(model), "test");
  EXPECT_EQ(tokens_of(t, "abab"), (std::vector<std::string>{"aba", "b"}));
  EXPECT_EQ(tokens_of(t, "ababab"), (std::vector<std::string>{"aba", "b", "ab"}));
  EXPECT_EQ(tokens_of(t, "aabab"), (std::vector<std::string>{"a", "aba", "b"}));
}

// Merges over {a, b, c} built bottom-up as a trainer writes them (every part made by an earlier
// merge): the 9 pairs of letters, then the 27 three-letter tokens, in a shuffled order.
json ordered_bpe_model(std::mt19937& rng) {
  const std::string letters = "abc";
  json vocab = json::object(), merges = json::array();
  for (char x : letters) vocab[std::string(1, x)] = vocab.size();
  std::vector<std::pair<std::string, std::string>> twos, threes;
  for (char x : letters)
    for (char y : letters) twos.emplace_back(std::string(1, x), std::string(1, y));
  for (const auto& [x, y] : twos)
    for (char z : letters)
      threes.push_back(rng() % 2 ? std::make_pair(x + y, std::string(1, z))
                                 : std::make_pair(x, y + std::string(1, z)));
  for (auto* level : {&twos, &threes}) {
    std::shuffle(level->begin(), level->end(), rng);
    for (const auto& [left, right] : *level) {
      merges.push_back({left, right});
      if (!vocab.contains(left + right)) vocab[left + right] = vocab.size();
    }
  }
  return {{"type", "BPE"}, {"vocab", vocab}, {"merges", merges}};
}

TEST(BpeModel, OrderedMergesGiveWhatTheGeneralLoopGivesOnShortAndLongWords) {
  // Files whose merges are ordered take the rank-by-rank loop; one merge pair that breaks the
  // order (on letters no word here has) sends the same merges through the heap of candidates.
  std::mt19937 rng(20261202);
  for (int file = 0; file < 4; ++file) {
    const json ordered = ordered_bpe_model(rng);
    json general = ordered;
    for (const char* token : {"q", "r", "qr", "qrq"})
      general["vocab"][token] = general["vocab"].size();
    general["merges"].push_back({"qr", "q"});
    general["merges"].push_back({"q", "r"});
    const PipelineTokenizer rank_by_rank(tokenizer_json(ordered), "ordered");
    const PipelineTokenizer heap(tokenizer_json(general), "general");
    // The rank-by-rank loop would give qr + qr here: this file does take the general loop.
    ASSERT_EQ(tokens_of(heap, "qrqr"), (std::vector<std::string>{"qrq", "r"}));
    for (int word = 0; word < 300; ++word) {
      const size_t length = word == 0 ? 100000 : 1 + rng() % 60;
      std::string text;
      for (size_t i = 0; i < length; ++i) text += "abc"[rng() % (word % 3 == 0 ? 2 : 3)];
      const auto tokens = tokens_of(rank_by_rank, text);
      ASSERT_EQ(tokens, tokens_of(heap, text))
          << "file " << file << ", word " << text.substr(0, 80);
      std::string joined;
      for (const auto& token : tokens) joined += token;
      ASSERT_EQ(joined, text);
    }
  }
}

TEST(BpeModel, UnknownCharactersFuseIntoOneUnkOrFallBackToBytes) {
  json model = {{"type", "BPE"},
                {"vocab", {{"<unk>", 0}, {"a", 1}, {"<0xC3>", 2}, {"<0xA9>", 3}}},
                {"merges", json::array()},
                {"unk_token", "<unk>"},
                {"fuse_unk", true}};
  const PipelineTokenizer fused(tokenizer_json(model), "test");
  EXPECT_EQ(fused.encode("xya", nullptr, false).ids, (std::vector<int64_t>{0, 1}));
  model["byte_fallback"] = true;
  const PipelineTokenizer bytes(tokenizer_json(model), "test");
  // é has both byte tokens; x has neither, so it stays unknown.
  EXPECT_EQ(bytes.encode("\xC3\xA9x", nullptr, false).ids, (std::vector<int64_t>{2, 3, 0}));
}

TEST(UnigramModel, ViterbiPicksTheBestScoringSegmentation) {
  // "abc": a+b+c = -3, ab+c = -2.5, a+bc = -1.5 (best), abc absent.
  const json model = json::parse(R"({"type": "Unigram", "unk_id": 0, "vocab": [["<unk>", 0.0],
      ["a", -1.0], ["b", -1.0], ["c", -1.0], ["ab", -1.5], ["bc", -0.5]]})");
  const PipelineTokenizer t(tokenizer_json(model), "test");
  EXPECT_EQ(tokens_of(t, "abc"), (std::vector<std::string>{"a", "bc"}));
  // Unknown characters fuse into one token whose text is the original.
  const auto e = t.encode("xyab", nullptr, false);
  EXPECT_EQ(e.tokens, (std::vector<std::string>{"xy", "ab"}));
  EXPECT_EQ(e.ids, (std::vector<int64_t>{0, 4}));
}

TEST(Truncation, LongestFirstShortensThePairAsTheRustLibraryDoes) {
  using ctrainer::tokenizers::TokenEncoding;
  const auto of_length = [](size_t n) {
    TokenEncoding e;
    for (size_t i = 0; i < n; ++i) {
      e.ids.push_back(static_cast<int64_t>(i));
      e.type_ids.push_back(0);
      e.tokens.push_back("t");
      e.offsets.push_back({i, i + 1});
      e.special_tokens_mask.push_back(0);
      e.attention_mask.push_back(1);
      e.words.push_back(static_cast<int64_t>(i));
    }
    return e;
  };
  struct Case {
    size_t first, second, max_length, want_first, want_second;
  };
  for (const Case& c : {Case{3, 20, 10, 3, 7}, Case{20, 3, 10, 7, 3}, Case{8, 9, 10, 5, 5},
                        Case{9, 8, 11, 6, 5}, Case{4, 4, 10, 4, 4}}) {
    TokenEncoding a = of_length(c.first), b = of_length(c.second);
    ctrainer::tokenizers::truncate_encodings(a, &b, {c.max_length});
    EXPECT_EQ(a.size(), c.want_first) << c.first << "+" << c.second << " to " << c.max_length;
    EXPECT_EQ(b.size(), c.want_second) << c.first << "+" << c.second << " to " << c.max_length;
  }
  TokenEncoding a = of_length(5), b = of_length(2);
  EXPECT_THROW(ctrainer::tokenizers::truncate_encodings(
                   a, &b, {4, ctrainer::tokenizers::TruncationStrategy::kOnlySecond}),
               ctrainer::ArgumentError);
}

/// A sequence of `ids`, each its own word, with type id `type_id`.
ctrainer::tokenizers::TokenEncoding sequence_of(const std::vector<int64_t>& ids,
                                                int64_t type_id = 0) {
  ctrainer::tokenizers::TokenEncoding e;
  for (int64_t id : ids) {
    e.ids.push_back(id);
    e.type_ids.push_back(type_id);
    e.tokens.push_back(std::to_string(id));
    e.offsets.push_back({0, 1});
    e.special_tokens_mask.push_back(0);
    e.attention_mask.push_back(1);
    e.words.push_back(id);
  }
  return e;
}

std::vector<std::vector<int64_t>> window_ids(const ctrainer::tokenizers::TokenEncoding& e) {
  std::vector<std::vector<int64_t>> out;
  for (const auto& w : e.overflowing) out.push_back(w.ids);
  return out;
}

TEST(Truncation, AStrideCutsOverlappingWindowsFromEitherEnd) {
  using V = std::vector<int64_t>;
  auto right = sequence_of({0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  right.truncate(4, 1, false);  // windows start 3 apart until one reaches the end
  EXPECT_EQ(right.ids, (V{0, 1, 2, 3}));
  EXPECT_EQ(window_ids(right), (std::vector<V>{{3, 4, 5, 6}, {6, 7, 8, 9}}));
  auto left = sequence_of({0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  left.truncate(4, 1, true);
  EXPECT_EQ(left.ids, (V{6, 7, 8, 9}));
  EXPECT_EQ(window_ids(left), (std::vector<V>{{3, 4, 5, 6}, {0, 1, 2, 3}}));
  auto short_last = sequence_of({0, 1, 2, 3, 4, 5, 6});
  short_last.truncate(3, 0, true);  // the last window from the left is shorter
  EXPECT_EQ(window_ids(short_last), (std::vector<V>{{1, 2, 3}, {0}}));
  auto nothing_kept = sequence_of({5, 6});
  nothing_kept.truncate(0, 0, false);  // max_length 0: everything overflows as one window
  EXPECT_TRUE(nothing_kept.ids.empty());
  EXPECT_EQ(window_ids(nothing_kept), (std::vector<V>{{5, 6}}));
  auto too_wide = sequence_of({0, 1, 2, 3, 4});
  EXPECT_THROW(too_wide.truncate(3, 3, false), ctrainer::ArgumentError);
}

TEST(Truncation, APairsWindowsCombineThroughTheTemplateAsInTheRustLibrary) {
  // The Rust library's own test (processors/template.rs, template_processing_overflowing):
  // [CLS]=1 [SEP]=0, "Hello there" + window "you", "pair with" + window "info".
  const auto processor =
      ctrainer::tokenizers::post_processor_from_json(json::parse(R"({"type": "TemplateProcessing",
        "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                   {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
        "pair": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                 {"SpecialToken": {"id": "[SEP]", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}},
                 {"SpecialToken": {"id": "[SEP]", "type_id": 1}}],
        "special_tokens": {"[CLS]": {"id": "[CLS]", "ids": [1], "tokens": ["[CLS]"]},
                           "[SEP]": {"id": "[SEP]", "ids": [0], "tokens": ["[SEP]"]}}})"),
                                                     "post_processor");
  auto first = sequence_of({12, 14});
  first.overflowing.push_back(sequence_of({13}));
  auto second = sequence_of({15, 16});
  second.overflowing.push_back(sequence_of({17}));
  using V = std::vector<int64_t>;
  const auto single = ctrainer::tokenizers::TokenEncoding::merge(processor->process({first}, true));
  EXPECT_EQ(single.ids, (V{1, 12, 14, 0}));
  EXPECT_EQ(window_ids(single), (std::vector<V>{{1, 13, 0}}));

  const auto pair =
      ctrainer::tokenizers::TokenEncoding::merge(processor->process({first, second}, true));
  EXPECT_EQ(pair.ids, (V{1, 12, 14, 0, 15, 16, 0}));
  EXPECT_EQ(pair.type_ids, (V{0, 0, 0, 0, 1, 1, 1}));
  ASSERT_EQ(window_ids(pair),
            (std::vector<V>{{1, 13, 0, 15, 16, 0}, {1, 13, 0, 17, 0}, {1, 12, 14, 0, 17, 0}}));
  // A window keeps its own type ids; windows of windows are kept, as the Rust Encoding nests them.
  EXPECT_EQ(pair.overflowing[0].type_ids, (V{0, 0, 0, 1, 1, 1}));
  EXPECT_EQ(pair.overflowing[1].type_ids, (V{0, 0, 0, 0, 1}));
  EXPECT_EQ(window_ids(pair.overflowing[0]), (std::vector<V>{{1, 13, 0, 17, 0}}));
  EXPECT_TRUE(pair.overflowing[1].overflowing.empty());
  EXPECT_EQ(window_ids(pair.overflowing[2]), (std::vector<V>{{1, 13, 0, 17, 0}}));
}

TEST(Padding, OverflowingWindowsArePaddedToTheirEncodingsLength) {
  auto e = sequence_of({7, 8, 9, 10, 11});
  e.truncate(3, 1, false);  // [7 8 9], windows [9 10 11]
  e.overflowing.push_back(sequence_of({4}));
  std::vector<ctrainer::tokenizers::TokenEncoding> batch{e};
  ctrainer::tokenizers::PaddingParams params;
  params.length = 4;
  params.left = true;
  params.pad_id = 99;
  ctrainer::tokenizers::pad_encodings(batch, params);
  using V = std::vector<int64_t>;
  EXPECT_EQ(batch[0].ids, (V{99, 7, 8, 9}));
  EXPECT_EQ(window_ids(batch[0]), (std::vector<V>{{99, 9, 10, 11}, {99, 99, 99, 4}}));
  EXPECT_EQ(batch[0].overflowing[1].attention_mask, (V{0, 0, 0, 1}));
}

TEST(Utf8Lossy, ReplacesEachMaximalInvalidSubpartOnceAsRustDoes) {
  using ctrainer::tokenizers::utf8_lossy;
  EXPECT_EQ(utf8_lossy("ok"), "ok");
  EXPECT_EQ(utf8_lossy("\xC3\xA9"), "\xC3\xA9");
  EXPECT_EQ(utf8_lossy("a\xFF"
                       "b"),
            "a\xEF\xBF\xBD"
            "b");
  EXPECT_EQ(utf8_lossy("\xE2\x82"), "\xEF\xBF\xBD");  // truncated 3-byte sequence: one
  EXPECT_EQ(utf8_lossy("\xE0\x80\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // overlong: three
  EXPECT_EQ(utf8_lossy("\xF0\x9F\x98"), "\xEF\xBF\xBD");
}

/// Loads `j` written to a file; returns the ArgumentError's message, or "" when it loads.
std::string load_error(const json& j) {
  const fs::path file =
      fs::temp_directory_path() / ("ctrainer_pipeline_" + std::to_string(::getpid()) + ".json");
  std::ofstream(file) << j.dump();
  std::string message;
  try {
    PipelineTokenizer::from_file(file);
  } catch (const ctrainer::ArgumentError& e) {
    message = e.what();
  }
  fs::remove(file);
  EXPECT_NE(message.find(file.string()), std::string::npos) << message;
  return message;
}

TEST(TokenizerJsonErrors, EachMalformedComponentIsNamedByItsJsonPath) {
  const json wordpiece = {{"type", "WordPiece"}, {"unk_token", "[UNK]"}, {"vocab", {{"[UNK]", 0}}}};
  struct Case {
    json file;
    std::vector<std::string> expected;
  };
  const std::vector<Case> cases = {
      {tokenizer_json(wordpiece,
                      {{"pre_tokenizer",
                        {{"type", "Sequence"},
                         {"pretokenizers", {{{"type", "Whitespace"}}, {{"type", "Bogus"}}}}}}}),
       {"pre_tokenizer.pretokenizers[1].type", "unsupported pre-tokenizer \"Bogus\"", "ByteLevel"}},
      {tokenizer_json(
           wordpiece,
           {{"normalizer",
             {{"type", "Replace"}, {"content", "x"}, {"pattern", {{"Regex", "(unclosed"}}}}}}),
       {"normalizer.pattern.Regex", "invalid regular expression"}},
      {tokenizer_json(json::parse(R"({"type": "BPE", "vocab": {"a": 0}, "merges": [["a", "b"]]})")),
       {"model.merges[0]", "\"b\""}},
      {tokenizer_json(
           {{"type", "BPE"}, {"vocab", {{"a", 0}}}, {"merges", json::array()}, {"dropout", 0.1}}),
       {"model.dropout", "set it to null"}},
      {tokenizer_json({{"type", "WordPiece"}, {"unk_token", "[UNK]"}, {"vocab", {{"a", 0}}}}),
       {"model.unk_token", "not in the vocabulary"}},
      {tokenizer_json(json::parse(R"({"type": "Unigram", "unk_id": 5, "vocab": [["a", -1.0]]})")),
       {"model.unk_id", "outside the vocabulary"}},
      {tokenizer_json(wordpiece, {{"normalizer",
                                   {{"type", "Precompiled"}, {"precompiled_charsmap", "AAAA"}}}}),
       {"normalizer.precompiled_charsmap", "SentencePiece character map"}},
      {tokenizer_json(wordpiece, {{"post_processor",
                                   {{"type", "TemplateProcessing"},
                                    {"single", {{{"SpecialToken", {{"id", "[CLS]"}}}}}},
                                    {"pair", json::array()},
                                    {"special_tokens", json::object()}}}}),
       {"post_processor.single[0].SpecialToken.id", "not in special_tokens"}},
      {tokenizer_json(wordpiece, {{"decoder", {{"type", "Metaspace"}, {"replacement", "ab"}}}}),
       {"decoder.replacement", "single character"}},
      {tokenizer_json(wordpiece, {{"added_tokens", {{{"id", "x"}, {"content", "[X]"}}}}}),
       {"added_tokens[0].id", "expected an integer"}},
      {json{{"normalizer", nullptr}}, {"model: missing"}},
  };
  for (const auto& c : cases) {
    const std::string message = load_error(c.file);
    EXPECT_FALSE(message.empty()) << c.file.dump();
    for (const auto& part : c.expected)
      EXPECT_NE(message.find(part), std::string::npos)
          << "missing \"" << part << "\" in " << message;
  }
}

TEST(TokenizerJsonErrors, InvalidJsonNamesLineAndColumn) {
  const fs::path file = fs::temp_directory_path() / "ctrainer_pipeline_syntax.json";
  std::ofstream(file) << "{\n  \"model\": [1,\n}";
  try {
    PipelineTokenizer::from_file(file);
    ADD_FAILURE() << "a broken file loaded";
  } catch (const ctrainer::ArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find(file.string() + ":3:"), std::string::npos) << e.what();
  }
  // A number too large for a double is nlohmann's out_of_range.406, not a parse_error.
  std::ofstream(file) << "{\"model\": {\"dropout\": 1e400}}";
  try {
    PipelineTokenizer::from_file(file);
    ADD_FAILURE() << "a file with 1e400 loaded";
  } catch (const ctrainer::ArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("invalid JSON in the tokenizer file"), std::string::npos)
        << e.what();
  }
  fs::remove(file);
}

class FastTokenizerFolder : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ctrainer_fast_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    const json j = tokenizer_json(
        {{"type", "WordLevel"},
         {"unk_token", "<unk>"},
         {"vocab", {{"<unk>", 0}, {"<pad>", 1}, {"<s>", 2}, {"hello", 3}, {"world", 4}}}},
        {{"pre_tokenizer", {{"type", "WhitespaceSplit"}}},
         {"added_tokens",
          {{{"id", 2}, {"content", "<s>"}, {"special", true}, {"normalized", false}}}},
         {"post_processor",
          {{"type", "TemplateProcessing"},
           {"single",
            {{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}},
             {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
           {"pair",
            {{{"Sequence", {{"id", "A"}, {"type_id", 0}}}},
             {{"Sequence", {{"id", "B"}, {"type_id", 1}}}}}},
           {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {2}}, {"tokens", {"<s>"}}}}}}}}});
    std::ofstream(dir_ / "tokenizer.json") << j.dump();
    std::ofstream(dir_ / "tokenizer_config.json")
        << R"({"tokenizer_class": "PreTrainedTokenizerFast", "pad_token": "<pad>",
              "bos_token": "<s>", "model_max_length": 4, "padding_side": "left"})";
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(FastTokenizerFolder, AutoTokenizerReadsTheFolderWithItsConfig) {
  const auto tokenizer = ctrainer::AutoTokenizer::from_pretrained(dir_.string());
  EXPECT_EQ(tokenizer->tokenizer_class(), "PreTrainedTokenizerFast");
  ctrainer::EncodeOptions options;
  options.padding = ctrainer::Padding::kMaxLength;  // model_max_length 4, padding on the left
  const auto e = tokenizer->encode("hello world", std::nullopt, options);
  EXPECT_EQ(e.input_ids, (std::vector<int64_t>{1, 2, 3, 4}));
  const auto padded = tokenizer->encode("world", std::nullopt, options);
  EXPECT_EQ(padded.input_ids, (std::vector<int64_t>{1, 1, 2, 4}));
  EXPECT_EQ(padded.attention_mask, (std::vector<int64_t>{0, 0, 1, 1}));
  EXPECT_EQ(tokenizer->decode({2, 3, 4}, true), "hello world");
  EXPECT_TRUE(tokenizer->is_special_id(2));
  // The file itself works as well as its folder.
  EXPECT_EQ(ctrainer::AutoTokenizer::from_pretrained((dir_ / "tokenizer.json").string())
                ->encode("hello", std::nullopt, {})
                .input_ids,
            (std::vector<int64_t>{2, 3}));
}

TEST_F(FastTokenizerFolder, DoLowerCaseIsRefusedForATokenizerJson) {
  ctrainer::AutoTokenizerOptions options;
  options.do_lower_case = true;
  try {
    ctrainer::AutoTokenizer::from_pretrained(dir_.string(), options);
    ADD_FAILURE() << "do_lower_case was accepted";
  } catch (const ctrainer::ArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("drop --do_lower_case"), std::string::npos) << e.what();
  }
}

TEST_F(FastTokenizerFolder, SavedFilesLoadBackWithTheSameEncodings) {
  const auto tokenizer = ctrainer::AutoTokenizer::from_pretrained(dir_.string());
  const fs::path saved = dir_ / "saved";
  tokenizer->save_pretrained(saved.string());
  for (const char* file : {"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"})
    EXPECT_TRUE(fs::is_regular_file(saved / file)) << file;
  const auto again = ctrainer::AutoTokenizer::from_pretrained(saved.string());
  for (const char* text : {"hello world", "world hello unknown", ""})
    EXPECT_EQ(again->encode(text, std::string_view("world"), {}).input_ids,
              tokenizer->encode(text, std::string_view("world"), {}).input_ids)
        << text;
  EXPECT_EQ(again->fingerprint(), tokenizer->fingerprint());
  EXPECT_EQ(again->padding_side(), ctrainer::Side::kLeft);
}

TEST_F(FastTokenizerFolder, ASpecialTokenOutsideTheVocabularyIsAddedAsTransformersDoes) {
  // As the Rust library's add_special_tokens: the next id after the model's and the added ones.
  std::ofstream(dir_ / "tokenizer_config.json")
      << R"({"pad_token": "[PAD]", "eos_token": "world", "model_max_length": 4})";
  const auto tokenizer = ctrainer::AutoTokenizer::from_pretrained(dir_.string());
  EXPECT_EQ(tokenizer->vocab_size(), 6);
  EXPECT_EQ(tokenizer->token_to_id("[PAD]"), 5);
  EXPECT_EQ(tokenizer->pad_id(), 5);
  EXPECT_TRUE(tokenizer->is_special_id(4));  // "world" is the eos token now
  // A special token in the text is one token, and decoding can skip it.
  const auto e = tokenizer->encode("hello [PAD]world", std::nullopt, {});
  EXPECT_EQ(e.input_ids, (std::vector<int64_t>{2, 3, 5, 4}));
  EXPECT_EQ(tokenizer->decode(e.input_ids, true), "hello");
}

TEST_F(FastTokenizerFolder, AddBosAndEosTokenOfTheConfigAreNotAppliedAsInTransformers5) {
  // transformers 5.24's TokenizersBackend ignores them too (tokenizer_auto_parity.py).
  std::ofstream(dir_ / "tokenizer_config.json")
      << R"({"bos_token": "<s>", "eos_token": "world", "add_bos_token": true,
            "add_eos_token": true})";
  const auto tokenizer = ctrainer::AutoTokenizer::from_pretrained(dir_.string());
  const auto e = tokenizer->encode("hello", std::string_view("hello"), {});
  EXPECT_EQ(e.input_ids, (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(e.token_type_ids, (std::vector<int64_t>{0, 1}));
}

TEST_F(FastTokenizerFolder, OverflowingTokensComeBackOnlyWhenAskedWithTheirSpecialTokens) {
  const auto tokenizer = ctrainer::AutoTokenizer::from_pretrained(dir_.string());
  ctrainer::EncodeOptions options;
  options.max_length = 3;  // "<s>" + 2 tokens per window
  options.truncation = ctrainer::Truncation::kLongestFirst;
  options.stride = 1;
  using V = std::vector<int64_t>;
  EXPECT_TRUE(tokenizer->encode("hello world hello world", std::nullopt, options)
                  .overflowing.empty());  // HF drops them unless return_overflowing_tokens
  options.return_overflowing_tokens = true;
  const auto e = tokenizer->encode("hello world hello world", std::nullopt, options);
  EXPECT_EQ(e.input_ids, (V{2, 3, 4}));
  ASSERT_EQ(e.overflowing.size(), 2u);
  EXPECT_EQ(e.overflowing[0].input_ids, (V{2, 4, 3}));
  EXPECT_EQ(e.overflowing[1].input_ids, (V{2, 3, 4}));
  EXPECT_EQ(e.overflowing[0].special_tokens_mask, (V{1, 0, 0}));
  EXPECT_EQ(e.overflowing[0].offsets,
            (std::vector<std::pair<int64_t, int64_t>>{{0, 0}, {6, 11}, {12, 17}}));
  options.stride = 2;  // not below the 2 tokens each window keeps
  EXPECT_THROW(tokenizer->encode("hello world hello world", std::nullopt, options),
               ctrainer::ArgumentError);
  ctrainer::EncodeOptions untruncated;
  untruncated.stride = 1;
  EXPECT_THROW(tokenizer->encode("hello world", std::nullopt, untruncated),
               ctrainer::ArgumentError);
}

}  // namespace tokenizer_pipeline_test
