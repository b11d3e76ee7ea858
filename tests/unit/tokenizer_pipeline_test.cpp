// The tokenizer.json pipeline against closed-form results: alignments of a NormalizedString,
// BPE merge order, Unigram's best segmentation, truncation of pairs, Rust's lossy UTF-8, and
// every malformed tokenizer.json refused with the file and the JSON path. Parity with the Rust
// library on real text is tests/parity/tokenizer_json_parity.py.
#include <gtest/gtest.h>

#include <dlfcn.h>
#include <regex.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <ctrainer/core/errors.h>
#include <ctrainer/models/tokenizers/pipeline/decoders.h>
#include <ctrainer/models/tokenizers/pipeline/normalized_string.h>
#include <ctrainer/models/tokenizers/pipeline/patterns.h>
#include <ctrainer/models/tokenizers/pipeline/pipeline_tokenizer.h>
#include <ctrainer/models/tokenizers/pipeline/pretrained_tokenizer_fast.h>
#include <ctrainer/models/tokenizers/pipeline/token_encoding.h>
#include <ctrainer/models/tokenizers/tokenizer_registry.h>

namespace {

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

}  // namespace
