// The Tokenizer interface and AutoTokenizer: the WordPiece tokenizer found by tokenizer_class or
// vocab.txt, saved and loaded back as transformers writes it, batches padded as HF pads them.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <ctrainer/core/errors.h>
#include <ctrainer/models/tokenizers/tokenizer_registry.h>
#include <ctrainer/models/tokenizers/wordpiece/bert_tokenizer.h>

#include "support/expect_error.h"
#include "support/test_data.h"

namespace ctrainer {
namespace tokenizer_registry_test {

namespace fs = std::filesystem;
using testing::expect_error;

const fs::path kVocab =
    fs::path(CTRAINER_EXAMPLES_DATA_DIR) / "vocab" / "bert-base-uncased-vocab.txt";
const fs::path kCasedVocab =
    fs::path(CTRAINER_EXAMPLES_DATA_DIR) / "vocab" / "bert-base-cased-vocab.txt";

fs::path folder_with(const std::string& name, const fs::path& vocab, const std::string& config) {
  const fs::path dir = testing::fresh_output_dir(name);
  fs::create_directories(dir);
  fs::copy_file(vocab, dir / "vocab.txt");
  if (!config.empty()) std::ofstream(dir / "tokenizer_config.json") << config;
  return dir;
}

TEST(AutoTokenizer, AVocabularyFileIsWordPiece) {
  const auto tokenizer = AutoTokenizer::from_pretrained(kVocab.string());
  EXPECT_EQ(tokenizer->tokenizer_class(), "BertTokenizer");
  const auto direct = BertTokenizer::from_vocab_file(kVocab.string());
  const Encoding a = tokenizer->encode("Hello, World!", "second one");
  const Encoding b = direct.encode("Hello, World!", "second one");
  EXPECT_EQ(a.input_ids, b.input_ids);
  EXPECT_EQ(a.token_type_ids, b.token_type_ids);
  EXPECT_EQ(tokenizer->pad_id(), 0);
  EXPECT_EQ(tokenizer->token_to_id("[CLS]"), 101);
  EXPECT_EQ(tokenizer->id_to_token(102), "[SEP]");
  EXPECT_FALSE(tokenizer->token_to_id("notatoken123").has_value());
  EXPECT_EQ(tokenizer->special_tokens().mask, "[MASK]");
  EXPECT_FALSE(tokenizer->special_tokens().bos.has_value());
}

TEST(AutoTokenizer, TokenizerConfigDecidesClassAndCase) {
  // A cased vocabulary with do_lower_case false: "Hello" stays one cased token.
  const auto cased = folder_with(
      "cased", kCasedVocab, R"({"tokenizer_class": "BertTokenizerFast", "do_lower_case": false})");
  const auto tokenizer = AutoTokenizer::from_pretrained(cased.string());
  EXPECT_EQ(tokenizer->tokenize("Hello"), (std::vector<std::string>{"Hello"}));
  // The caller's choice wins over the file's.
  const auto lowered = AutoTokenizer::from_pretrained(cased.string(), {.do_lower_case = true});
  EXPECT_EQ(lowered->tokenize("Hello"), (std::vector<std::string>{"hello"}));

  const auto gpt2 = folder_with("gpt2", kVocab, R"({"tokenizer_class": "GPT2Tokenizer"})");
  expect_error([&] { AutoTokenizer::from_pretrained(gpt2.string()); },
               {"tokenizer_config.json", "tokenizer_class GPT2Tokenizer",
                "BertTokenizer, DistilBertTokenizer, ElectraTokenizer"});
  const fs::path empty = testing::fresh_output_dir("no_tokenizer");
  fs::create_directories(empty);
  expect_error([&] { AutoTokenizer::from_pretrained(empty.string()); },
               {"holds no tokenizer this build reads", "vocab.txt"});
}

TEST(AutoTokenizer, SavePretrainedRoundTrips) {
  const auto original =
      AutoTokenizer::from_pretrained(kCasedVocab.string(), {.do_lower_case = false});
  const fs::path dir = testing::fresh_output_dir("saved_tokenizer");
  original->save_pretrained(dir.string());
  // vocab.txt is the file transformers would write: one token per line, by id.
  std::ifstream a(kCasedVocab, std::ios::binary), b(dir / "vocab.txt", std::ios::binary);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(a), {}),
            std::string(std::istreambuf_iterator<char>(b), {}));
  const auto loaded = AutoTokenizer::from_pretrained(dir.string());
  EXPECT_EQ(loaded->tokenize("Hello World"), original->tokenize("Hello World"));
  EXPECT_EQ(loaded->fingerprint(), original->fingerprint());
}

TEST(TokenizerInterface, BatchesArePaddedToTheLongest) {
  const auto tokenizer = AutoTokenizer::from_pretrained(kVocab.string());
  const std::vector<std::string> texts = {"a", "a much longer sentence than the first", "mid one"};
  const auto batch = tokenizer->encode_batch(
      texts, nullptr, {.padding = Padding::kLongest, .pad_to_multiple_of = 4});
  ASSERT_EQ(batch.size(), 3u);
  const Encoding longest = tokenizer->encode(texts[1]);
  const size_t padded = (longest.input_ids.size() + 3) / 4 * 4;
  for (size_t i = 0; i < batch.size(); ++i) {
    const Encoding alone = tokenizer->encode(texts[i]);
    ASSERT_EQ(batch[i].input_ids.size(), padded) << i;
    ASSERT_EQ(batch[i].attention_mask.size(), padded) << i;
    ASSERT_EQ(batch[i].token_type_ids.size(), padded) << i;
    for (size_t t = 0; t < padded; ++t) {
      const bool real = t < alone.input_ids.size();
      EXPECT_EQ(batch[i].input_ids[t], real ? alone.input_ids[t] : 0) << i << " " << t;
      EXPECT_EQ(batch[i].attention_mask[t], real ? 1 : 0) << i << " " << t;
    }
  }
  const std::vector<std::string> pairs = {"x"};
  expect_error([&] { tokenizer->encode_batch(texts, &pairs); }, {"3 texts but 1 pairs"});
  const auto decoded = tokenizer->decode_batch({batch[2].input_ids}, /*skip_special_tokens=*/true);
  EXPECT_EQ(decoded, (std::vector<std::string>{"mid one"}));
}

TEST(TokenizerInterface, TheFingerprintFollowsWhatChangesTheOutput) {
  const auto lower = AutoTokenizer::from_pretrained(kVocab.string(), {.do_lower_case = true});
  const auto again = AutoTokenizer::from_pretrained(kVocab.string(), {.do_lower_case = true});
  const auto cased = AutoTokenizer::from_pretrained(kVocab.string(), {.do_lower_case = false});
  const auto other = AutoTokenizer::from_pretrained(kCasedVocab.string(), {.do_lower_case = true});
  EXPECT_EQ(lower->fingerprint(), again->fingerprint());
  EXPECT_NE(lower->fingerprint(), cased->fingerprint());
  EXPECT_NE(lower->fingerprint().at("vocab_hash"), other->fingerprint().at("vocab_hash"));
  EXPECT_EQ(lower->fingerprint().at("tokenizer_revision"), kBertTokenizerRevision);
}

}  // namespace tokenizer_registry_test
}  // namespace ctrainer
