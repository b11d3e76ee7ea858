// run_clm's data (examples/language_modeling): text files read as HF datasets reads them, the
// validation split as its percent slicing cuts it, group_texts' blocks (the remainder dropped per
// 1,000 texts), --config_overrides as update_from_string reads them, and the block size rule.
// The whole pipeline against transformers: parity.run_clm_vs_hf.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <ctrainer/core/errors.h>
#include <ctrainer/examples/language_modeling/lm_datasets.h>
#include <ctrainer/examples/language_modeling/lm_model.h>
#include <ctrainer/models/tokenizers/tokenizer_registry.h>

namespace ctrainer {
namespace language_modeling_data_test {
namespace fs = std::filesystem;

const std::string kTokenizer = std::string(CTRAINER_EXAMPLES_DATA_DIR) + "/text/kjv-bpe-8k";

std::string write_temp(const std::string& name, const std::string& text) {
  const fs::path path = fs::temp_directory_path() / ("ctrainer_lm_data_" + name);
  std::ofstream(path, std::ios::binary) << text;
  return path.string();
}

TEST(LanguageModelingData, TextLinesSplitWherePythonSplitlinesDoes) {
  const std::string path = write_temp("lines.txt",
                                      "a\r\nb\rc\n\nd\x0b"
                                      "e\xe2\x80\xa8"
                                      "f");
  EXPECT_EQ(run_lm::read_text_examples(path, true),
            (std::vector<std::string>{"a\n", "b\n", "c\n", "\n", "d\x0b", "e\xe2\x80\xa8", "f"}));
  EXPECT_EQ(run_lm::read_text_examples(path, false),
            (std::vector<std::string>{"a", "b", "c", "", "d", "e", "f"}));
}

TEST(LanguageModelingData, JsonReadsTheTextFieldElseTheFirst) {
  EXPECT_EQ(run_lm::read_text_examples(
                write_temp("a.jsonl", "{\"id\": 1, \"text\": \"x\"}\n\n{\"text\": \"y\"}\n"), true),
            (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(run_lm::read_text_examples(
                write_temp("b.json", "[{\"body\": \"first\", \"a\": \"second\"}]"), true),
            (std::vector<std::string>{"first"}));
  try {
    run_lm::read_text_examples(write_temp("c.jsonl", "{\"text\": \"x\"}\n{oops\n"), true);
    FAIL() << "no error";
  } catch (const ArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("line 2"), std::string::npos) << e.what();
  }
  EXPECT_THROW(run_lm::read_text_examples(write_temp("d.jsonl", "{\"text\": 3}\n"), true),
               ArgumentError);
}

TEST(LanguageModelingData, TheValidationSplitRoundsAsDatasetsDoes) {
  auto sizes = [](size_t n, int64_t percent) {
    const auto [validation, train] =
        run_lm::split_validation(std::vector<std::string>(n, "x"), percent);
    return std::pair{validation.size(), train.size()};
  };
  EXPECT_EQ(sizes(33479, 5), (std::pair<size_t, size_t>{1674, 31805}));  // 1673.95
  EXPECT_EQ(sizes(10, 25), (std::pair<size_t, size_t>{2, 8}));           // 2.5: half to even
  EXPECT_EQ(sizes(30, 5), (std::pair<size_t, size_t>{2, 28}));           // 1.5: half to even
  EXPECT_EQ(sizes(30, 0), (std::pair<size_t, size_t>{0, 30}));
}

TEST(LanguageModelingData, GroupTextsDropsEachThousandsRemainder) {
  const auto tokenizer = AutoTokenizer::from_pretrained(kTokenizer);
  std::vector<std::string> texts;
  for (int i = 0; i < 2500; ++i) texts.push_back("In the beginning " + std::to_string(i) + "\n");
  constexpr int64_t kBlock = 7;
  std::vector<int64_t> expected;
  int64_t blocks = 0;
  for (size_t begin = 0; begin < texts.size(); begin += 1000) {
    std::vector<int64_t> group;
    for (size_t i = begin; i < std::min(texts.size(), begin + 1000); ++i) {
      const auto ids = tokenizer->encode(texts[i]).input_ids;
      group.insert(group.end(), ids.begin(), ids.end());
    }
    const auto kept = static_cast<int64_t>(group.size()) / kBlock * kBlock;
    expected.insert(expected.end(), group.begin(), group.begin() + kept);
    blocks += kept / kBlock;
  }
  const auto dataset = run_lm::group_texts(texts, *tokenizer, kBlock, "train", std::nullopt);
  ASSERT_EQ(dataset->size(), blocks);
  std::vector<int64_t> got;
  for (int64_t i = 0; i < dataset->size(); ++i) {
    const Example e = dataset->get(i);
    EXPECT_TRUE(e.at("labels").equal(e.at("input_ids")));
    EXPECT_EQ(e.at("attention_mask").sum().item<int64_t>(), kBlock);
    const at::Tensor ids = e.at("input_ids").contiguous();
    got.insert(got.end(), ids.data_ptr<int64_t>(), ids.data_ptr<int64_t>() + kBlock);
  }
  EXPECT_EQ(got, expected);
  EXPECT_EQ(run_lm::group_texts(texts, *tokenizer, kBlock, "train", 3)->size(), 3);
  EXPECT_THROW(run_lm::group_texts({"short"}, *tokenizer, 64, "validation", std::nullopt),
               ArgumentError);
}

TEST(LanguageModelingData, ConfigOverridesReadEachValueAsItsKeysType) {
  const nlohmann::json defaults = {{"n_embd", 768},
                                   {"resid_pdrop", 0.1},
                                   {"scale_attn_weights", true},
                                   {"activation_function", "gelu_new"}};
  const nlohmann::json out = run_lm::apply_config_overrides(
      defaults, "n_embd=64,resid_pdrop=0,scale_attn_weights=no,activation_function=relu");
  EXPECT_EQ(out["n_embd"], 64);
  EXPECT_EQ(out["resid_pdrop"], 0.0);
  EXPECT_EQ(out["scale_attn_weights"], false);
  EXPECT_EQ(out["activation_function"], "relu");
  EXPECT_THROW(run_lm::apply_config_overrides(defaults, "n_layers=2"), ArgumentError);
  EXPECT_THROW(run_lm::apply_config_overrides(defaults, "n_embd=6.5"), ArgumentError);
  EXPECT_THROW(run_lm::apply_config_overrides(defaults, "scale_attn_weights=maybe"), ArgumentError);
  EXPECT_THROW(run_lm::apply_config_overrides(defaults, "n_embd"), ArgumentError);
}

TEST(LanguageModelingData, BlockSizeFollowsTheTokenizerAndThePositions) {
  run_lm::ModelArguments model_args;
  model_args.model_type = "gpt2";
  model_args.config_overrides = "n_embd=16,n_layer=1,n_head=2,vocab_size=8192,n_positions=512";
  model_args.tokenizer_name = kTokenizer;
  const run_lm::LmModel lm = run_lm::load_lm_model(model_args, ModelTask::kCausalLM);
  EXPECT_EQ(lm.config->max_positions(), 512);
  // model_max_length 1024 > 512 positions: min(1024, 512).
  EXPECT_EQ(run_lm::resolve_block_size(std::nullopt, lm), 512);
  EXPECT_EQ(run_lm::resolve_block_size(128, lm), 128);
  EXPECT_EQ(run_lm::resolve_block_size(4096, lm), 1024);  // capped at model_max_length
  model_args.config_overrides = "n_embd=16,n_layer=1,n_head=2,vocab_size=100";
  EXPECT_THROW(run_lm::load_lm_model(model_args, ModelTask::kCausalLM), ArgumentError);
}

}  // namespace language_modeling_data_test
}  // namespace ctrainer
