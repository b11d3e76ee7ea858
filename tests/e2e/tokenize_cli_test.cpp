// ctrainer-tokenize end to end: stdin lines in, one JSON object per line out, clear errors.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace {

const std::string kBinary = CTRAINER_TOKENIZE_BINARY;
const std::string kUncased = std::string(CTRAINER_VOCAB_DIR) + "/bert-base-uncased-vocab.txt";

struct Result {
  int exit_code = -1;
  std::string out;
  std::string err;
};

/// Runs the binary with `args`, `input` on stdin; captures stdout, stderr and the exit code.
Result run(const std::string& args, const std::string& input) {
  // Per-process names: ctest -j runs the cases of this file in parallel processes.
  const auto dir = std::filesystem::temp_directory_path();
  const std::string tag = std::to_string(::getpid());
  const std::string in_path = (dir / ("ctrainer_tokenize_e2e_in_" + tag + ".txt")).string();
  const std::string err_path = (dir / ("ctrainer_tokenize_e2e_err_" + tag + ".txt")).string();
  std::ofstream(in_path, std::ios::binary) << input;
  const std::string command = kBinary + " " + args + " < '" + in_path + "' 2> '" + err_path + "'";
  Result result;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return result;
  char buffer[4096];
  for (size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;)
    result.out.append(buffer, n);
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream err(err_path);
  result.err.assign(std::istreambuf_iterator<char>(err), std::istreambuf_iterator<char>());
  return result;
}

TEST(TokenizeCli, TextsAndPairs) {
  Result r = run("--vocab " + kUncased, "hello world\nThe cat\tsat on the mat.\n\n");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(
      r.out,
      "{\"input_ids\": [101, 7592, 2088, 102], \"token_type_ids\": [0, 0, 0, 0], "
      "\"attention_mask\": [1, 1, 1, 1]}\n"
      "{\"input_ids\": [101, 1996, 4937, 102, 2938, 2006, 1996, 13523, 1012, 102], "
      "\"token_type_ids\": [0, 0, 0, 0, 1, 1, 1, 1, 1, 1], "
      "\"attention_mask\": [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]}\n"
      "{\"input_ids\": [101, 102], \"token_type_ids\": [0, 0], \"attention_mask\": [1, 1]}\n");
}

TEST(TokenizeCli, MaxLengthTruncatesLongestFirst) {
  Result r = run("--vocab " + kUncased + " --max_length 6", "the cat sat on the mat\tthe dog\n");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // 6 + 2 + 3 = 11 tokens: the first text loses 4, then the pair 1 on the tie.
  EXPECT_EQ(r.out,
            "{\"input_ids\": [101, 1996, 4937, 102, 1996, 102], "
            "\"token_type_ids\": [0, 0, 0, 0, 1, 1], \"attention_mask\": [1, 1, 1, 1, 1, 1]}\n");
}

TEST(TokenizeCli, CasedVocabulary) {
  const std::string cased = std::string(CTRAINER_VOCAB_DIR) + "/bert-base-cased-vocab.txt";
  Result r = run("--vocab " + cased + " --do_lower_case false", "Hello World!\n");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.substr(0, 44), "{\"input_ids\": [101, 8667, 1291, 106, 102], \"");
}

TEST(TokenizeCli, InvalidUtf8LineFails) {
  Result r = run("--vocab " + kUncased, "hello\nbad \xff byte\nnever reached\n");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("stdin line 2: invalid UTF-8 at byte 4"), std::string::npos) << r.err;
  // The line before the error was still printed.
  EXPECT_EQ(r.out.find("[101, 7592, 102]"), 14u) << r.out;
}

TEST(TokenizeCli, BadArguments) {
  Result r = run("", "x\n");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("give one of --tokenizer_name PATH"), std::string::npos) << r.err;
  r = run("--tokenizer_name /nonexistent/folder", "x\n");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("/nonexistent/folder"), std::string::npos) << r.err;
  r = run("--vocab " + kUncased + " --truncation only_first", "x\n");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--truncation needs --max_length"), std::string::npos) << r.err;
  r = run("--vocab " + kUncased + " --max_length 0", "x\n");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--max_length expects a positive integer"), std::string::npos) << r.err;
  r = run("--vocab /nonexistent/vocab.txt", "x\n");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("/nonexistent/vocab.txt"), std::string::npos) << r.err;
  r = run("--vocab " + kUncased, "a\tb\tc\n");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("stdin line 1: expected one text or two tab-separated texts, got 3"),
            std::string::npos)
      << r.err;
}

/// A tokenizer.json folder: WordLevel over whitespace, [CLS] A [SEP] (B [SEP]), a WordPiece-free
/// decoder (tokens joined by spaces), "[PAD]" padding from tokenizer_config.json.
std::filesystem::path word_level_folder() {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("ctrainer_tokenize_e2e_json_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "tokenizer.json") << R"({"model": {"type": "WordLevel", "unk_token": "[UNK]",
      "vocab": {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3, "hello": 4, "world": 5}},
    "normalizer": {"type": "Lowercase"}, "pre_tokenizer": {"type": "WhitespaceSplit"},
    "added_tokens": [{"id": 2, "content": "[CLS]", "special": true, "normalized": false},
                     {"id": 3, "content": "[SEP]", "special": true, "normalized": false}],
    "post_processor": {"type": "BertProcessing", "sep": ["[SEP]", 3], "cls": ["[CLS]", 2]}})";
  std::ofstream(dir / "tokenizer_config.json") << R"({"pad_token": "[PAD]"})";
  return dir;
}

TEST(TokenizeCli, TokenizerJsonPrintsTokensOffsetsAndDecodes) {
  const auto dir = word_level_folder();
  Result r = run("--tokenizer_name " + dir.string() + " --decode", "Hello  WORLD x\n");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "{\"input_ids\": [2, 4, 5, 1, 3], \"token_type_ids\": [0, 0, 0, 0, 0], "
            "\"attention_mask\": [1, 1, 1, 1, 1], "
            "\"tokens\": [\"[CLS]\", \"hello\", \"world\", \"[UNK]\", \"[SEP]\"], "
            "\"offsets\": [[0, 0], [0, 5], [7, 12], [13, 14], [0, 0]], "
            "\"special_tokens_mask\": [1, 0, 0, 0, 1], "
            "\"decoded\": \"[CLS] hello world [UNK] [SEP]\", "
            "\"decoded_without_special\": \"hello world [UNK]\"}\n");
  // Padding, no special tokens, jsonl input with a pair.
  r = run("--tokenizer_name " + (dir / "tokenizer.json").string() +
              " --input_format jsonl --add_special_tokens false --max_length 4 --padding max_length"
              " --padding_side left",
          "[\"hello\", \"world\"]\n");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.substr(0, 99),
            "{\"input_ids\": [0, 0, 4, 5], \"token_type_ids\": [0, 0, 0, 1], "
            "\"attention_mask\": [0, 0, 1, 1], \"tokens");
  std::filesystem::remove_all(dir);
}

TEST(TokenizeCli, ContinueOnErrorReportsTheLineAndGoesOn) {
  const auto dir = word_level_folder();
  // max_length 4 leaves 2 tokens for one text, 1 for a pair (as the Rust library counts): line 1
  // must lose a token but has no second text; line 2's second text would lose its only token;
  // line 3 fits and needs no truncation.
  const std::string input = "hello world x\nhello\tworld\nhello\n";
  const std::string flags =
      "--tokenizer_name " + dir.string() + " --max_length 4 --truncation only_second";
  Result r = run(flags, input);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("stdin line 1: truncation only_second needs a pair"), std::string::npos)
      << r.err;
  r = run(flags + " --continue_on_error --save_to " + (dir / "saved").string(), input);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out.substr(0, 10), "{\"error\": ") << r.out;
  EXPECT_NE(r.out.find("\n{\"error\": \"truncation: the sequence to truncate has 1 tokens"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("\n{\"input_ids\": [2, 4, 3], "), std::string::npos) << r.out;
  EXPECT_TRUE(std::filesystem::is_regular_file(dir / "saved" / "tokenizer.json"));
  std::filesystem::remove_all(dir);
}

}  // namespace
