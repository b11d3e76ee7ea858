// BertTokenizer against HF BertTokenizer / BertTokenizerFast. Expected outputs come from HF's
// tests/models/bert/test_tokenization_bert.py (small vocabulary), published bert-base-uncased ids,
// and HF's algorithm run on the bundled vocabularies; ids were checked by vocab line number.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <ctrainer/core/errors.h>
#include <ctrainer/models/tokenizers/wordpiece/bert_tokenizer.h>

namespace bert_tokenizer_test {

using ctrainer::ArgumentError;
using ctrainer::BasicTokenizer;
using ctrainer::BasicTokenizerOptions;
using ctrainer::BertTokenizer;
using ctrainer::BertTokenizerOptions;
using ctrainer::EncodeOptions;
using ctrainer::Padding;
using ctrainer::Truncation;
using ctrainer::Vocab;
using Ids = std::vector<int64_t>;
using Tokens = std::vector<std::string>;

const std::string kVocabDir = CTRAINER_VOCAB_DIR;

const BertTokenizer& uncased() {
  static const BertTokenizer tok =
      BertTokenizer::from_vocab_file(kVocabDir + "/bert-base-uncased-vocab.txt");
  return tok;
}

const BertTokenizer& cased() {
  static const BertTokenizer tok = [] {
    BertTokenizerOptions options;
    options.do_lower_case = false;
    return BertTokenizer::from_vocab_file(kVocabDir + "/bert-base-cased-vocab.txt", options);
  }();
  return tok;
}

/// HF test_tokenization_bert.py's vocabulary.
BertTokenizer small(BertTokenizerOptions options = {}) {
  return BertTokenizer(
      Vocab::from_tokens({"[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]", "want", "##want", "##ed",
                          "wa", "un", "runn", "##ing", ",", "low", "lowest"}),
      std::move(options));
}

/// A vocabulary whose words "a" .. "j" have ids 5 .. 14, for truncation tests.
BertTokenizer letters() {
  std::vector<std::string> tokens = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
  for (char c = 'a'; c <= 'j'; ++c) tokens.emplace_back(1, c);
  return BertTokenizer(Vocab::from_tokens(tokens));
}

Tokens basic(const std::string& text, BasicTokenizerOptions options = {}) {
  return BasicTokenizer(std::move(options)).tokenize(text);
}

std::string write_temp(const std::string& name, const std::string& content) {
  // The pid keeps parallel test processes (ctest -j) from sharing a file.
  auto path = std::filesystem::temp_directory_path() /
              ("ctrainer_bert_tok_" + std::to_string(::getpid()) + "_" + name);
  std::ofstream(path, std::ios::binary) << content;
  return path.string();
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ArgumentError& e) {
    return e.what();
  }
  return "<no error>";
}

// ---- HF test_tokenization_bert.py ----------------------------------------------------------

TEST(BertTokenizerHf, FullTokenizer) {
  auto tok = small();
  Tokens tokens = tok.tokenize("UNwant\u00E9d,running");
  EXPECT_EQ(tokens, (Tokens{"un", "##want", "##ed", ",", "runn", "##ing"}));
  EXPECT_EQ(tok.convert_tokens_to_ids(tokens), (Ids{9, 6, 7, 12, 10, 11}));
}

TEST(BertTokenizerHf, Chinese) {
  EXPECT_EQ(basic("ah\u535A\u63A8zz"), (Tokens{"ah", "\u535A", "\u63A8", "zz"}));
}

TEST(BertTokenizerHf, BasicLower) {
  EXPECT_EQ(basic(" \tHeLLo!how  \n Are yoU?  "), (Tokens{"hello", "!", "how", "are", "you", "?"}));
  EXPECT_EQ(basic("H\u00E9llo"), (Tokens{"hello"}));
}

TEST(BertTokenizerHf, BasicLowerStripAccentsVariants) {
  BasicTokenizerOptions keep;
  keep.strip_accents = false;
  EXPECT_EQ(basic(" \tH\u00E4LLo!how  \n Are yoU?  ", keep),
            (Tokens{"h\u00E4llo", "!", "how", "are", "you", "?"}));
  EXPECT_EQ(basic("H\u00E9llo", keep), (Tokens{"h\u00E9llo"}));

  BasicTokenizerOptions strip;
  strip.strip_accents = true;
  EXPECT_EQ(basic(" \tH\u00E4LLo!how  \n Are yoU?  ", strip),
            (Tokens{"hallo", "!", "how", "are", "you", "?"}));
  EXPECT_EQ(basic("H\u00E9llo", strip), (Tokens{"hello"}));
  EXPECT_EQ(basic(" \tH\u00E4LLo!how  \n Are yoU?  "),
            (Tokens{"hallo", "!", "how", "are", "you", "?"}));
}

TEST(BertTokenizerHf, BasicNoLower) {
  BasicTokenizerOptions no_lower;
  no_lower.do_lower_case = false;
  EXPECT_EQ(basic(" \tHeLLo!how  \n Are yoU?  ", no_lower),
            (Tokens{"HeLLo", "!", "how", "Are", "yoU", "?"}));
  no_lower.strip_accents = false;
  EXPECT_EQ(basic(" \tH\u00E4LLo!how  \n Are yoU?  ", no_lower),
            (Tokens{"H\u00E4LLo", "!", "how", "Are", "yoU", "?"}));
  no_lower.strip_accents = true;
  EXPECT_EQ(basic(" \tH\u00E4LLo!how  \n Are yoU?  ", no_lower),
            (Tokens{"HaLLo", "!", "how", "Are", "yoU", "?"}));
}

TEST(BertTokenizerHf, NeverSplit) {
  BasicTokenizerOptions options;
  options.do_lower_case = false;
  options.never_split = {"[UNK]"};
  EXPECT_EQ(basic(" \tHeLLo!how  \n Are yoU? [UNK]", options),
            (Tokens{"HeLLo", "!", "how", "Are", "yoU", "?", "[UNK]"}));
  // A never_split word is neither lower-cased nor split into pieces.
  BertTokenizerOptions bert;
  bert.never_split = {"Lowest!"};
  EXPECT_EQ(small(bert).tokenize("Lowest! lowest!"), (Tokens{"[UNK]", "lowest", "[UNK]"}));
}

TEST(BertTokenizerHf, SplitsOnPunctuation) {
  EXPECT_EQ(basic("a\n'll !!to?'d of, can't."), (Tokens{"a", "'", "ll", "!", "!", "to", "?", "'",
                                                        "d", "of", ",", "can", "'", "t", "."}));
}

TEST(BertTokenizerHf, RemovesControlCharacters) {
  EXPECT_EQ(basic("\u200E\u200F"), Tokens{});
  auto tok = small();
  EXPECT_EQ(tok.tokenize("Test"), Tokens{"[UNK]"});
  EXPECT_EQ(tok.tokenize("\u00AD"), Tokens{});
  EXPECT_EQ(tok.tokenize("test"), Tokens{"[UNK]"});
}

TEST(BertTokenizerHf, Wordpiece) {
  auto tok = small();
  EXPECT_EQ(tok.tokenize(""), Tokens{});
  EXPECT_EQ(tok.tokenize("unwanted running"), (Tokens{"un", "##want", "##ed", "runn", "##ing"}));
  EXPECT_EQ(tok.tokenize("unwantedX running"), (Tokens{"[UNK]", "runn", "##ing"}));
}

TEST(BertTokenizerHf, DecodeRoundTrip) {
  auto tok = small();
  Ids ids = tok.encode("UNwant\u00E9d,running").input_ids;
  EXPECT_EQ(ids, (Ids{1, 9, 6, 7, 12, 10, 11, 2}));
  EXPECT_EQ(tok.decode(ids), "[CLS] unwanted, running [SEP]");
  EXPECT_EQ(tok.decode(ids, /*skip_special_tokens=*/true), "unwanted, running");
}

// ---- real vocabularies ---------------------------------------------------------------------

TEST(BertTokenizerUncased, PublishedIds) {
  EXPECT_EQ(uncased().encode("hello world").input_ids, (Ids{101, 7592, 2088, 102}));
  EXPECT_EQ(uncased().encode("Hello, my dog is cute").input_ids,
            (Ids{101, 7592, 1010, 2026, 3899, 2003, 10140, 102}));
}

TEST(BertTokenizerUncased, GlueSentences) {
  // SST-2 dev, line 2.
  EXPECT_EQ(uncased().tokenize_to_ids("it 's a charming and often affecting journey . "),
            (Ids{2009, 1005, 1055, 1037, 11951, 1998, 2411, 12473, 4990, 1012}));
  // MRPC dev, first pair.
  const std::string a =
      "He said the foodservice pie business doesn't fit the company's long-term growth "
      "strategy.";
  const std::string b =
      "\"The foodservice pie business does not fit our long-term growth strategy.";
  EXPECT_EQ(uncased().tokenize(a),
            (Tokens{"he",       "said",  "the", "foods", "##er",   "##vic",    "##e",     "pie",
                    "business", "doesn", "'",   "t",     "fit",    "the",      "company", "'",
                    "s",        "long",  "-",   "term",  "growth", "strategy", "."}));
  EXPECT_EQ(uncased().tokenize_to_ids(a),
            (Ids{2002, 2056, 1996, 9440, 2121, 7903, 2063, 11345, 2449, 2987, 1005, 1056,
                 4906, 1996, 2194, 1005, 1055, 2146, 1011, 2744,  3930, 5656, 1012}));
  auto enc = uncased().encode(a, b);
  const size_t na = 23, nb = uncased().tokenize_to_ids(b).size();
  ASSERT_EQ(enc.input_ids.size(), na + nb + 3);
  EXPECT_EQ(enc.input_ids.front(), 101);
  EXPECT_EQ(enc.input_ids[na + 1], 102);
  EXPECT_EQ(enc.input_ids.back(), 102);
  EXPECT_EQ(enc.token_type_ids[na + 1], 0);
  EXPECT_EQ(enc.token_type_ids[na + 2], 1);
  EXPECT_EQ(enc.token_type_ids.back(), 1);
  EXPECT_EQ(enc.attention_mask, Ids(enc.input_ids.size(), 1));
  EXPECT_EQ(uncased().decode(uncased().tokenize_to_ids(a)),
            "he said the foodservice pie business doesn't fit the company's long - term growth "
            "strategy.");
}

TEST(BertTokenizerUncased, Accents) {
  EXPECT_EQ(uncased().tokenize("H\u00E9llo na\u00EFve caf\u00E9 \u00C5ngstr\u00F6m"),
            (Tokens{"hello", "naive", "cafe", "ang", "##strom"}));
  EXPECT_EQ(uncased().tokenize_to_ids("H\u00E9llo na\u00EFve caf\u00E9 \u00C5ngstr\u00F6m"),
            (Ids{7592, 15743, 7668, 17076, 15687}));
  // Decomposed input strips the same way; U+1E9B U+0323 keeps its base letter (long s).
  EXPECT_EQ(uncased().tokenize_to_ids("e\u0301cole \u1E9B\u0323"), (Ids{12431, 100}));
  // Full lower-casing of each character: dotted capital I becomes i + U+0307 (then stripped).
  EXPECT_EQ(uncased().tokenize_to_ids("\u0130stanbul"), (Ids{9960}));
  EXPECT_EQ(uncased().tokenize_to_ids("un\u00E4ffable"), (Ids{14477, 20961, 3468}));
}

// The Rust tokenizers lower-case character by character: a word-final capital sigma becomes the
// ordinary small sigma U+03C3, not the final form U+03C2 of Python's str.lower() (which the
// Python BertTokenizer of transformers 4 used). Expected values from BertTokenizerFast
// (tokenizers 0.23) on the uncased vocabulary.
TEST(BertTokenizerUncased, CapitalSigmaLowerCasesWithoutFinalForm) {
  EXPECT_EQ(uncased().tokenize("\u039F\u0394\u039F\u03A3 \u03A3\u039F\u03A6\u0399\u0391"),
            (Tokens{"\u03BF", "##\u03B4", "##\u03BF", "##\u03C3", "\u03C3", "##\u03BF", "##\u03C6",
                    "##\u03B9\u03B1"}));
  // "ΣΑΣ ΟΔΥΣΣΕΥΣ σας": a final small sigma written as such stays U+03C2.
  EXPECT_EQ(uncased().tokenize_to_ids("\u03A3\u0391\u03A3 \u039F\u0394\u03A5\u03A3\u03A3"
                                      "\u0395\u03A5\u03A3 \u03C3\u03B1\u03C2"),
            (Ids{1173, 14608, 29733, 1169, 29722, 29735, 29733, 29733, 29723, 29735, 29733, 1173,
                 14608, 19579}));
  // After a cased letter and before punctuation (Python's final-sigma context).
  EXPECT_EQ(uncased().tokenize_to_ids("A\u03A3. \u03A3"), (Ids{1037, 29733, 1012, 1173}));
}

TEST(BertTokenizerUncased, CjkAndEmoji) {
  EXPECT_EQ(uncased().tokenize("ah\u535A\u63A8zz"), (Tokens{"ah", "\u535A", "[UNK]", "z", "##z"}));
  EXPECT_EQ(uncased().tokenize_to_ids("\u6211\u7231\u5317\u4EAC\u5929\u5B89\u95E8"),
            (Ids{1855, 100, 1781, 1755, 1811, 1820, 100}));
  EXPECT_EQ(uncased().tokenize_to_ids("I love \U0001F917 and \U0001F600!"),
            (Ids{1045, 2293, 100, 1998, 100, 999}));
  EXPECT_EQ(uncased().tokenize_to_ids("\u00BD \u2163 \uFB01ne"), (Ids{1092, 100, 1984, 2638}));
}

TEST(BertTokenizerUncased, PunctuationRunsAndSymbols) {
  EXPECT_EQ(uncased().tokenize_to_ids("Wait...what?!?! $100 -- (yes) #hashtag @user"),
            (Ids{3524, 1012, 1012, 1012, 2054, 1029, 999,   1029,  999,  1002, 2531,
                 1011, 1011, 1006, 2748, 1007, 1001, 23325, 15900, 1030, 5310}));
}

TEST(BertTokenizerUncased, WhitespaceAndControlCharacters) {
  EXPECT_EQ(uncased().encode("").input_ids, (Ids{101, 102}));
  EXPECT_EQ(uncased().encode(" \t\n ").input_ids, (Ids{101, 102}));
  // NUL, U+FFFD, soft hyphen and zero-width space vanish; ideographic space separates.
  EXPECT_EQ(uncased().tokenize(std::string("a\0b", 3) + "\uFFFDc\u00ADd\u200Be\u3000f"),
            (Tokens{"abc", "##de", "f"}));
  // Line and paragraph separators split words.
  EXPECT_EQ(uncased().tokenize("x\u2028y\u2029z"), (Tokens{"x", "y", "z"}));
}

TEST(BertTokenizerUncased, LongWords) {
  Ids hundred = uncased().tokenize_to_ids(std::string(100, 'a'));
  EXPECT_EQ(hundred.size(), 50u);
  EXPECT_EQ(hundred[0], 13360);
  EXPECT_EQ(uncased().tokenize_to_ids(std::string(101, 'a')), Ids{100});
  // The limit counts code points, not bytes: 60 two-byte letters is fine.
  std::string accented;
  for (int i = 0; i < 60; ++i) accented += "\u00E9";
  EXPECT_NE(uncased().tokenize_to_ids(accented), Ids{100});
  EXPECT_EQ(uncased().tokenize_to_ids("ok " + std::string(101, 'a') + " ok"),
            (Ids{7929, 100, 7929}));
}

TEST(BertTokenizerUncased, SpecialTokensInText) {
  EXPECT_EQ(uncased().tokenize("hello [MASK] world[SEP]x [mask]"),
            (Tokens{"hello", "[MASK]", "world", "[SEP]", "x", "[", "mask", "]"}));
  EXPECT_EQ(uncased().tokenize_to_ids("hello [MASK] world[SEP]x [mask]"),
            (Ids{7592, 103, 2088, 102, 1060, 1031, 7308, 1033}));
}

TEST(BertTokenizerCased, Tokens) {
  EXPECT_EQ(cased().tokenize("Hello World! \u00C5ngstr\u00F6m na\u00EFve"),
            (Tokens{"Hello", "World", "!", "\u00C5", "##ng", "##st", "##r\u00F6m", "na", "##\u00EF",
                    "##ve"}));
  EXPECT_EQ(cased().tokenize_to_ids("Hello World! \u00C5ngstr\u00F6m na\u00EFve"),
            (Ids{8667, 1291, 106, 230, 2118, 2050, 26370, 9468, 28203, 2707}));
  // No NFC (as BertTokenizerFast): a decomposed accent stays a separate piece.
  EXPECT_EQ(cased().tokenize_to_ids("H\u00E9llo [UNK] \u6211 cafe\u0301"),
            (Ids{145, 2744, 6643, 100, 100, 17287, 28310}));
  EXPECT_EQ(cased().tokenize_to_ids("UNwant\u00E9d,running"),
            (Ids{7414, 5491, 14608, 1181, 117, 1919}));
}

// ---- encode: truncation and padding --------------------------------------------------------

TEST(BertTokenizerEncode, LongestFirstPair) {
  auto tok = letters();  // a=5 ... j=14, [CLS]=2, [SEP]=3, [PAD]=0
  EncodeOptions options;
  options.truncation = Truncation::kLongestFirst;
  // Expected ids from BertTokenizerFast (tokenizers 0.23) on the same vocabulary.
  options.max_length = 8;  // 5 + 3 tokens for a budget of 5: 3 (the longer one) + 2
  auto enc = tok.encode("a b c d e", "f g h", options);
  EXPECT_EQ(enc.input_ids, (Ids{2, 5, 6, 7, 3, 10, 11, 3}));
  EXPECT_EQ(enc.token_type_ids, (Ids{0, 0, 0, 0, 0, 1, 1, 1}));
  EXPECT_EQ(enc.attention_mask, Ids(8, 1));
  // Equal lengths: budget 3 = 1 + 2, the odd token to the second sequence (the old
  // one-at-a-time rule of HF's Python tokenizer kept "a b" + "c").
  options.max_length = 6;
  EXPECT_EQ(tok.encode("a b", "c d", options).input_ids, (Ids{2, 5, 3, 7, 8, 3}));
  // Single sequence: cut from the end.
  options.max_length = 4;
  EXPECT_EQ(tok.encode("a b c d e", std::nullopt, options).input_ids, (Ids{2, 5, 6, 3}));
  // Shorter than max_length: untouched.
  options.max_length = 100;
  EXPECT_EQ(tok.encode("a", "b", options).input_ids, (Ids{2, 5, 3, 6, 3}));
  options.max_length = 2;
  EXPECT_NE(error_of([&] { tok.encode("a", "b", options); }).find("special tokens"),
            std::string::npos);
}

// The Rust tokenizers split the budget in halves as soon as the shorter sequence is longer than
// half of it, where the one-at-a-time rule kept it whole; every case checked with
// BertTokenizerFast (tokenizers 0.23) on the same vocabulary.
TEST(BertTokenizerEncode, LongestFirstPairSplitsLikeRustTokenizers) {
  auto tok = letters();  // a=5 ... j=14, [CLS]=2, [SEP]=3
  EncodeOptions options;
  options.truncation = Truncation::kLongestFirst;
  auto ids = [&](const char* a, const char* b, int64_t max_length) {
    options.max_length = max_length;
    return tok.encode(a, std::string_view(b), options).input_ids;
  };
  // Budget 4, the shorter sequence (4) is over half of it: 2 + 2.
  EXPECT_EQ(ids("a b c d", "e f g h i j", 7), (Ids{2, 5, 6, 3, 9, 10, 3}));
  // The longer first sequence gets the odd token: budget 3 = 2 + 1.
  EXPECT_EQ(ids("a b c d e f g", "h i", 6), (Ids{2, 5, 6, 3, 12, 3}));
  // Budget 1: the first sequence keeps nothing.
  EXPECT_EQ(ids("a b c", "d e f", 4), (Ids{2, 3, 8, 3}));
  // The shorter sequence fits in half of the budget: kept whole, the longer takes the rest.
  EXPECT_EQ(ids("a b c d", "e", 7), (Ids{2, 5, 6, 7, 3, 9, 3}));
  EXPECT_EQ(ids("a", "b c d e f g h i j", 8), (Ids{2, 5, 3, 6, 7, 8, 9, 3}));
}

TEST(BertTokenizerEncode, OnlyFirstOnlySecond) {
  auto tok = letters();
  EncodeOptions options;
  options.max_length = 7;
  options.truncation = Truncation::kOnlyFirst;
  EXPECT_EQ(tok.encode("a b c d", "e f", options).input_ids, (Ids{2, 5, 6, 3, 9, 10, 3}));
  options.truncation = Truncation::kOnlySecond;
  EXPECT_EQ(tok.encode("a b", "c d e f", options).input_ids, (Ids{2, 5, 6, 3, 7, 8, 3}));
  EXPECT_NE(error_of([&] { tok.encode("a b c d", "e f", options); }).find("second sequence"),
            std::string::npos);
  EXPECT_NE(error_of([&] { tok.encode("a b c d", std::nullopt, options); }).find("pair"),
            std::string::npos);
  options.truncation = Truncation::kLongestFirst;
  options.max_length.reset();
  EXPECT_NE(error_of([&] { tok.encode("a", std::nullopt, options); }).find("max_length"),
            std::string::npos);
}

TEST(BertTokenizerEncode, Padding) {
  auto tok = letters();
  EncodeOptions options;
  options.padding = Padding::kMaxLength;
  options.max_length = 6;
  auto enc = tok.encode("a", "b", options);
  EXPECT_EQ(enc.input_ids, (Ids{2, 5, 3, 6, 3, 0}));
  EXPECT_EQ(enc.token_type_ids, (Ids{0, 0, 0, 1, 1, 0}));
  EXPECT_EQ(enc.attention_mask, (Ids{1, 1, 1, 1, 1, 0}));
  // max_length rounded up to the multiple, as HF.
  options.pad_to_multiple_of = 4;
  EXPECT_EQ(tok.encode("a", std::nullopt, options).input_ids, (Ids{2, 5, 3, 0, 0, 0, 0, 0}));
  options.padding = Padding::kLongest;
  EXPECT_EQ(tok.encode("a b", std::nullopt, options).input_ids, (Ids{2, 5, 6, 3}));
  EXPECT_EQ(tok.encode("a b c", std::nullopt, options).attention_mask,
            (Ids{1, 1, 1, 1, 1, 0, 0, 0}));
  // Without padding pad_to_multiple_of does nothing; longer than max_length is not cut.
  options.padding = Padding::kNone;
  EXPECT_EQ(tok.encode("a b c d e f g", std::nullopt, options).input_ids.size(), 9u);
  options.padding = Padding::kMaxLength;
  options.max_length.reset();
  EXPECT_THROW(tok.encode("a", std::nullopt, options), ArgumentError);
}

TEST(BertTokenizerEncode, NoSpecialTokens) {
  auto tok = letters();
  EncodeOptions options;
  options.add_special_tokens = false;
  auto enc = tok.encode("a b", "c", options);
  EXPECT_EQ(enc.input_ids, (Ids{5, 6, 7}));
  EXPECT_EQ(enc.token_type_ids, (Ids{0, 0, 1}));
}

// ---- decode and ids ------------------------------------------------------------------------

TEST(BertTokenizerDecode, SpecialTokensAndCleanup) {
  const auto& tok = uncased();
  Ids ids = tok.encode("Hello, world! I can't go.", "It's fine.").input_ids;
  EXPECT_EQ(tok.decode(ids), "[CLS] hello, world! i can't go. [SEP] it's fine. [SEP]");
  EXPECT_EQ(tok.decode(ids, true), "hello, world! i can't go. it's fine.");
  EXPECT_EQ(tok.decode(ids, true, /*clean_up_tokenization_spaces=*/false),
            "hello , world ! i can ' t go . it ' s fine .");
  EXPECT_EQ(tok.convert_ids_to_tokens({101, 7592, 102}), (Tokens{"[CLS]", "hello", "[SEP]"}));
  EXPECT_EQ(tok.convert_ids_to_tokens({101, 7592, 102}, true), (Tokens{"hello"}));
  EXPECT_EQ(tok.convert_token_to_id("not-a-token"), 100);
  EXPECT_NE(error_of([&] { tok.decode({30522}); }).find("outside the vocabulary"),
            std::string::npos);
  EXPECT_NE(error_of([&] { tok.convert_ids_to_tokens({-100}); }).find("-100"), std::string::npos);
}

// ---- errors --------------------------------------------------------------------------------

TEST(BertTokenizerErrors, InvalidUtf8) {
  for (const std::string bad :
       {std::string("ab\xff"), std::string("\xc3"), std::string("\xed\xa0\x80"),  // surrogate
        std::string("\xc0\xaf"), std::string("x\xf4\x90\x80\x80")}) {
    const std::string message = error_of([&] { uncased().encode(bad); });
    EXPECT_NE(message.find("invalid UTF-8 at byte"), std::string::npos) << message;
  }
  EXPECT_NE(error_of([&] { uncased().encode("ok", std::string("ab\x80")); }).find("byte 2"),
            std::string::npos);
}

TEST(BertTokenizerErrors, VocabFiles) {
  auto message_for = [](const std::string& name, const std::string& content) {
    const std::string path = write_temp(name, content);
    return error_of([&] { BertTokenizer::from_vocab_file(path); });
  };
  EXPECT_NE(message_for("empty.txt", "").find("is empty"), std::string::npos);
  EXPECT_NE(message_for("dup.txt", "[PAD]\n[UNK]\nhello\n[UNK]\n").find("dup.txt:4: duplicate"),
            std::string::npos);
  EXPECT_NE(message_for("blank.txt", "[PAD]\n\n").find("blank.txt:2: empty token"),
            std::string::npos);
  EXPECT_NE(message_for("crlf.txt", "[PAD]\r\n[UNK]\r\n").find("crlf.txt:1:"), std::string::npos);
  EXPECT_NE(message_for("utf8.txt", "[PAD]\nab\xff\n").find("utf8.txt:2: invalid UTF-8"),
            std::string::npos);
  const std::string missing = message_for("missing.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\n");
  EXPECT_NE(missing.find("missing.txt has no [MASK]"), std::string::npos) << missing;
  EXPECT_NE(error_of([] {
              BertTokenizer::from_vocab_file("/nonexistent/vocab.txt");
            }).find("cannot open vocabulary file /nonexistent/vocab.txt"),
            std::string::npos);
  // No final newline is fine.
  auto tok = BertTokenizer::from_vocab_file(
      write_temp("ok.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nhi"));
  EXPECT_EQ(tok.encode("hi").input_ids, (Ids{2, 5, 3}));
}

TEST(BertTokenizer, CopiesShareTheVocabulary) {
  BertTokenizer copy = uncased();
  BertTokenizer moved = std::move(copy);
  EXPECT_EQ(moved.encode("hello world").input_ids, (Ids{101, 7592, 2088, 102}));
  EXPECT_EQ(moved.vocab_size(), 30522);
  EXPECT_EQ(cased().vocab_size(), 28996);
}

}  // namespace bert_tokenizer_test
