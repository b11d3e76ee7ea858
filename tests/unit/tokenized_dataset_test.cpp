// Tokenized GLUE splits: equal to tokenizing each example directly, independent of the thread
// count, cached on disk under a key of everything that shapes the result; and the padding
// collator that batches them.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <ctrainer/core/errors.h>
#include <ctrainer/examples/glue/glue_dataset.h>
#include <ctrainer/examples/glue/glue_reader.h>
#include <ctrainer/models/tokenizers/wordpiece/bert_tokenizer.h>
#include <ctrainer/trainer/data/padding_collator.h>
#include <ctrainer/trainer/data/text/tokenized_cache.h>

#include "support/expect_error.h"
#include "support/test_data.h"

namespace ctrainer {
namespace tokenized_dataset_test {
namespace fs = std::filesystem;
using glue::glue_task;
using glue::TokenizeOptions;

const std::string kData = CTRAINER_EXAMPLES_DATA_DIR;
const std::string kRteDir = kData + "/glue/RTE";
const std::string kStsbDir = kData + "/glue/STS-B";

const BertTokenizer& uncased() {
  static const BertTokenizer tok =
      BertTokenizer::from_vocab_file(kData + "/vocab/bert-base-uncased-vocab.txt");
  return tok;
}

std::vector<int64_t> to_vector(const at::Tensor& t) {
  auto c = t.contiguous();
  return std::vector<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
}

TEST(TokenizedDataset, EqualsEncodingEachExampleDirectly) {
  const auto& task = glue_task("rte");
  const auto split = glue::read_glue_split(task, kRteDir, "dev");
  for (bool pad : {false, true}) {
    TokenizeOptions options{.max_seq_length = 64, .pad_to_max_length = pad, .num_threads = 2};
    auto ds = glue::tokenize_split(split, uncased(), options);
    ASSERT_EQ(ds->size(), 277);
    EXPECT_EQ(ds->label_kind(), LabelKind::kClass);
    for (int64_t i : {0, 1, 100, 276}) {
      const auto& ex = split.examples[static_cast<size_t>(i)];
      Encoding want =
          uncased().encode(ex.text_a, std::string_view(*ex.text_b), glue::encode_options(options));
      Example got = ds->get(i);
      EXPECT_EQ(to_vector(got.at("input_ids")), want.input_ids);
      EXPECT_EQ(to_vector(got.at("token_type_ids")), want.token_type_ids);
      EXPECT_EQ(to_vector(got.at("attention_mask")), want.attention_mask);
      EXPECT_EQ(got.at("labels").item<int64_t>(), *ex.label);
      EXPECT_EQ(got.at("labels").scalar_type(), at::kLong);
      EXPECT_EQ(got.at("input_ids").scalar_type(), at::kLong);
    }
    EXPECT_LE(ds->max_length(), 64);
    if (pad) EXPECT_EQ((*ds->lengths())[5], 64);
  }
}

TEST(TokenizedDataset, ResultDoesNotDependOnThreadCount) {
  const auto split = glue::read_glue_split(glue_task("stsb"), kStsbDir, "dev");
  auto one = glue::tokenize_split(split, uncased(), {.max_seq_length = 128, .num_threads = 1});
  auto three = glue::tokenize_split(split, uncased(), {.max_seq_length = 128, .num_threads = 3});
  EXPECT_TRUE(one->data() == three->data());
  EXPECT_EQ(one->label_kind(), LabelKind::kScore);
  Example ex = one->get(1);
  EXPECT_FLOAT_EQ(ex.at("labels").item<float>(), 4.75f);
  EXPECT_EQ(ex.at("labels").scalar_type(), at::kFloat);
  // Test splits have no labels.
  auto test = glue::tokenize_split(glue::read_glue_split(glue_task("stsb"), kStsbDir, "test"),
                                   uncased(), {.max_seq_length = 32});
  EXPECT_FALSE(test->get(0).contains("labels"));
}

TEST(TokenizedDataset, InvalidUtf8NamesFileAndLine) {
  const auto dir = testing::fresh_output_dir("utf8");
  fs::create_directories(dir);
  std::ofstream(dir + "/train.tsv") << "sentence\tlabel\nfine .\t1\nbad \xC3\x28 text\t0\n";
  const auto split = glue::read_glue_split(glue_task("sst2"), dir, "train");
  testing::expect_error([&] { glue::tokenize_split(split, uncased(), {}); },
                        {dir + "/train.tsv:3:"});
}

/// Copies RTE's dev file into a fresh folder (so a test can modify it).
std::string copy_rte_dev(const std::string& name) {
  const auto dir = testing::fresh_output_dir(name);
  fs::create_directories(dir);
  fs::copy_file(kRteDir + "/dev.tsv", dir + "/dev.tsv");
  return dir;
}

TEST(TokenizationCache, SecondLoadHitsAndEveryKeyComponentMisses) {
  const auto& task = glue_task("rte");
  const auto data_dir = copy_rte_dev("data");
  const auto cache = testing::fresh_output_dir("cache");
  const TokenizeOptions options{.max_seq_length = 64};
  auto first = glue::load_glue_dataset(task, data_dir, "dev", uncased(), options, cache);
  EXPECT_FALSE(first.from_cache);
  ASSERT_TRUE(fs::exists(first.cache_file));
  auto second = glue::load_glue_dataset(task, data_dir, "dev", uncased(), options, cache);
  EXPECT_TRUE(second.from_cache);
  EXPECT_EQ(second.cache_file, first.cache_file);
  EXPECT_TRUE(second.dataset->data() == first.dataset->data());
  // Equal to tokenizing directly, without a cache.
  auto direct = glue::load_glue_dataset(task, data_dir, "dev", uncased(), options);
  EXPECT_TRUE(direct.dataset->data() == second.dataset->data());
  EXPECT_TRUE(direct.cache_file.empty());

  auto misses = [&](const BertTokenizer& tok, const TokenizeOptions& opts) {
    auto a = glue::load_glue_dataset(task, data_dir, "dev", tok, opts, cache);
    EXPECT_FALSE(a.from_cache);
    EXPECT_NE(a.cache_file, first.cache_file);
    EXPECT_TRUE(glue::load_glue_dataset(task, data_dir, "dev", tok, opts, cache).from_cache);
  };
  misses(uncased(), {.max_seq_length = 32});
  misses(uncased(), {.max_seq_length = 64, .pad_to_max_length = true});
  BertTokenizerOptions cased_options;
  cased_options.do_lower_case = false;
  misses(BertTokenizer::from_vocab_file(kData + "/vocab/bert-base-cased-vocab.txt", cased_options),
         options);
  misses(
      BertTokenizer::from_vocab_file(kData + "/vocab/bert-base-uncased-vocab.txt", cased_options),
      options);
  // Thread count is not part of the key.
  EXPECT_TRUE(glue::load_glue_dataset(task, data_dir, "dev", uncased(),
                                      {.max_seq_length = 64, .num_threads = 1}, cache)
                  .from_cache);
  // Changing the TSV content misses.
  std::ofstream(data_dir + "/dev.tsv", std::ios::app) << "277\tA new premise.\tA.\tentailment\n";
  auto changed = glue::load_glue_dataset(task, data_dir, "dev", uncased(), options, cache);
  EXPECT_FALSE(changed.from_cache);
  EXPECT_EQ(changed.dataset->size(), 278);
}

TEST(TokenizationCache, CorruptOrForeignFilesAreRebuilt) {
  const auto& task = glue_task("rte");
  const auto data_dir = copy_rte_dev("data");
  const auto cache = testing::fresh_output_dir("cache");
  const TokenizeOptions options{.max_seq_length = 48};
  auto good = glue::load_glue_dataset(task, data_dir, "dev", uncased(), options, cache);
  const auto bytes = fs::file_size(good.cache_file);
  auto reload = [&] {
    auto again = glue::load_glue_dataset(task, data_dir, "dev", uncased(), options, cache);
    EXPECT_FALSE(again.from_cache);
    EXPECT_TRUE(again.dataset->data() == good.dataset->data());
    // ... and the rebuilt file is good again.
    EXPECT_TRUE(
        glue::load_glue_dataset(task, data_dir, "dev", uncased(), options, cache).from_cache);
  };
  fs::resize_file(good.cache_file, bytes / 2);  // truncated
  reload();
  {
    std::fstream f(good.cache_file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(bytes - 100));
    f.put('\x7f');  // one flipped byte in the columns
  }
  reload();
  std::ofstream(good.cache_file, std::ios::trunc) << "garbage";
  reload();
  // A file of another key under this name (e.g. a hash collision) is not used.
  save_tokenized_cache(good.cache_file, {{"other", 1}}, good.dataset->data());
  EXPECT_TRUE(load_tokenized_cache(good.cache_file, {{"other", 1}}).data.has_value());
  reload();
  EXPECT_TRUE(load_tokenized_cache(good.cache_file + ".missing", {}).problem.empty());
}

Example seq_example(std::vector<int64_t> ids, int64_t label) {
  const int64_t n = static_cast<int64_t>(ids.size());
  return Example{{"input_ids", at::tensor(ids, at::kLong)},
                 {"token_type_ids", at::zeros({n}, at::kLong)},
                 {"attention_mask", at::ones({n}, at::kLong)},
                 {"labels", at::scalar_tensor(label, at::kLong)}};
}

TEST(DataCollatorWithPadding, PadsToTheLongestRoundedToMultiple) {
  std::vector<Example> examples{seq_example({101, 7, 102}, 1), seq_example({101, 102}, 0)};
  DataCollatorWithPadding longest({.pad_token_id = 0});
  Batch b = longest(examples);
  EXPECT_TRUE(
      b.at("input_ids").equal(at::tensor({101, 7, 102, 101, 102, 0}, at::kLong).view({2, 3})));
  EXPECT_TRUE(b.at("attention_mask").equal(at::tensor({1, 1, 1, 1, 1, 0}, at::kLong).view({2, 3})));
  EXPECT_TRUE(b.at("token_type_ids").equal(at::zeros({2, 3}, at::kLong)));
  EXPECT_TRUE(b.at("labels").equal(at::tensor({1, 0}, at::kLong)));

  DataCollatorWithPadding multiple({.pad_token_id = 5, .pad_to_multiple_of = 8});
  Batch m = multiple(examples);
  ASSERT_EQ(m.at("input_ids").sizes(), (std::vector<int64_t>{2, 8}));
  EXPECT_EQ(m.at("input_ids")[1][2].item<int64_t>(), 5);
  EXPECT_EQ(m.at("attention_mask").sum().item<int64_t>(), 5);

  DataCollatorWithPadding fixed({.max_length = 6});
  EXPECT_EQ(fixed(examples).at("input_ids").size(1), 6);
  DataCollatorWithPadding too_short({.max_length = 2});
  EXPECT_THROW(too_short(examples), std::invalid_argument);
}

TEST(DataCollatorWithPadding, BatchesOfTokenizedDatasetMatchTheirExamples) {
  const auto split = glue::read_glue_split(glue_task("rte"), kRteDir, "dev");
  auto ds = glue::tokenize_split(split, uncased(), {.max_seq_length = 128});
  DataCollatorWithPadding collate({.pad_token_id = uncased().pad_token_id()});
  std::vector<Example> examples{ds->get(3), ds->get(10), ds->get(42)};
  Batch b = collate(examples);
  const int64_t longest =
      std::max({(*ds->lengths())[3], (*ds->lengths())[10], (*ds->lengths())[42]});
  EXPECT_EQ(b.at("input_ids").size(1), longest);
  for (int64_t i = 0; i < 3; ++i) {
    const auto& ids = examples[static_cast<size_t>(i)].at("input_ids");
    const int64_t n = ids.size(0);
    EXPECT_TRUE(b.at("input_ids")[i].narrow(0, 0, n).equal(ids));
    EXPECT_EQ(b.at("attention_mask")[i].sum().item<int64_t>(), n);
  }
}

}  // namespace tokenized_dataset_test
}  // namespace ctrainer
