// The language-modeling collators: DataCollatorForLanguageModeling against transformers' own
// output (tests/data/collators/lm_collator_golden.json, made by make_lm_collator_golden.py next
// to it), its per-batch seeding, its checks and its 80/10/10 shares; DataCollatorWithFlattening
// in closed form. Packed vs padded decoders: tests/unit/packed_sequences_test.cpp.
#include <gtest/gtest.h>

#include <fstream>

#include <torch/torch.h>

#include <nlohmann/json.hpp>

#include <ctrainer/core/errors.h>
#include <ctrainer/trainer/data/flattening_collator.h>
#include <ctrainer/trainer/data/language_modeling_collator.h>

namespace ctrainer {
namespace language_modeling_collator_test {

using nlohmann::json;

json golden() {
  std::ifstream in(std::string(CTRAINER_TEST_DATA_DIR) + "/collators/lm_collator_golden.json");
  return json::parse(in);
}

at::Tensor long_tensor(const json& rows) {
  std::vector<at::Tensor> out;
  for (const json& row : rows)
    out.push_back(at::tensor(row.get<std::vector<int64_t>>(), at::kLong));
  return at::stack(out);
}

std::vector<Example> examples_of(const json& list) {
  std::vector<Example> examples;
  for (const json& item : list) {
    Example e;
    e.set("input_ids", at::tensor(item["input_ids"].get<std::vector<int64_t>>(), at::kLong));
    if (item.contains("offset_mapping")) {
      std::vector<int64_t> flat;
      for (const json& pair : item["offset_mapping"]) {
        flat.push_back(pair[0]);
        flat.push_back(pair[1]);
      }
      e.set("offset_mapping", at::tensor(flat, at::kLong).view({-1, 2}));
    }
    examples.push_back(e);
  }
  return examples;
}

LanguageModelingCollatorOptions options_of(const json& g, const json& settings) {
  LanguageModelingCollatorOptions o;
  o.mlm = settings.value("mlm", true);
  o.whole_word_mask = settings.value("whole_word_mask", false);
  o.mlm_probability = settings.value("mlm_probability", 0.15);
  o.mask_replace_prob = settings.value("mask_replace_prob", 0.8);
  o.random_replace_prob = settings.value("random_replace_prob", 0.1);
  if (settings.contains("pad_to_multiple_of"))
    o.pad_to_multiple_of = settings["pad_to_multiple_of"];
  o.pad_token_id = g["pad_token_id"].get<int64_t>();
  o.mask_token_id = g["mask_token_id"].get<int64_t>();
  o.vocabulary_size = g["vocabulary_size"];
  o.special_token_ids = g["special_token_ids"].get<std::vector<int64_t>>();
  o.seed = g["seed"].get<uint64_t>();
  return o;
}

TEST(DataCollatorForLanguageModeling, MasksAsTransformersDoesBatchAfterBatch) {
  const json g = golden();
  ASSERT_EQ(g["settings"].size(), 4u);
  for (const auto& [name, setting] : g["settings"].items()) {
    SCOPED_TRACE(name);
    const DataCollatorForLanguageModeling collator(options_of(g, setting["options"]));
    const auto examples =
        examples_of(setting["options"].value("whole_word_mask", false) ? g["padded_examples"]
                                                                       : g["ragged_examples"]);
    ASSERT_EQ(setting["batches"].size(), 2u);
    for (const json& expected : setting["batches"]) {
      const Batch batch = collator(examples);
      EXPECT_TRUE(batch.at("input_ids").equal(long_tensor(expected["input_ids"])));
      EXPECT_TRUE(batch.at("labels").equal(long_tensor(expected["labels"])));
      EXPECT_FALSE(batch.contains("offset_mapping"));
    }
  }
}

TEST(DataCollatorForLanguageModeling, WholeWordsAreMaskedWhole) {
  const json g = golden();
  const json& batches = g["settings"]["whole_word_mask"]["batches"];
  // "unbelievably" is 5 tokens (positions 1-5 of row 1): all masked or none, in both batches.
  for (const json& batch : batches) {
    const auto row = batch["labels"][1].get<std::vector<int64_t>>();
    const bool first = row[1] != -100;
    for (int i = 2; i <= 5; ++i) EXPECT_EQ(row[static_cast<size_t>(i)] != -100, first);
  }
}

TEST(DataCollatorForLanguageModeling, ABatchDrawsFromItsOriginNotFromTheCallOrder) {
  const json g = golden();
  const DataCollatorForLanguageModeling collator(
      options_of(g, g["settings"]["default"]["options"]));
  const auto examples = examples_of(g["ragged_examples"]);
  const BatchOrigin a{.epoch = 0, .dataset_indices = {4, 9, 1}};
  const BatchOrigin b{.epoch = 0, .dataset_indices = {2, 3, 5}};
  const BatchOrigin a_later{.epoch = 1, .dataset_indices = {4, 9, 1}};
  const Batch first_a = collator.collate(examples, a);
  const Batch first_b = collator.collate(examples, b);
  // Another thread, another order, a resumed run: the same draws for the same origin.
  const DataCollatorForLanguageModeling resumed(options_of(g, g["settings"]["default"]["options"]));
  EXPECT_TRUE(resumed.collate(examples, b).at("labels").equal(first_b.at("labels")));
  EXPECT_TRUE(resumed.collate(examples, a).at("input_ids").equal(first_a.at("input_ids")));
  EXPECT_FALSE(first_a.at("labels").equal(first_b.at("labels")));
  EXPECT_FALSE(collator.collate(examples, a_later).at("labels").equal(first_a.at("labels")));
}

TEST(DataCollatorForLanguageModeling, ReplacesEightyTenTenOfTheChosenTokens) {
  LanguageModelingCollatorOptions o;
  o.pad_token_id = 0;
  o.mask_token_id = 1;
  o.vocabulary_size = 1000;
  o.seed = 3;
  o.mlm_probability = 0.5;
  const DataCollatorForLanguageModeling collator(o);
  Example e;
  e.set("input_ids", at::randint(2, 1000, {20000}, at::kLong));
  const Batch batch = collator({e, e});
  const at::Tensor chosen = batch.at("labels").ne(-100);
  const double n = chosen.sum().item<double>();
  EXPECT_NEAR(n / 40000.0, 0.5, 0.01);
  const at::Tensor masked = batch.at("input_ids").eq(1).logical_and(chosen);
  const at::Tensor kept = batch.at("input_ids").eq(batch.at("labels")).logical_and(chosen);
  EXPECT_NEAR(masked.sum().item<double>() / n, 0.8, 0.01);
  // Random replacements may draw the original token (1 in 1000): "kept" is 10% plus that.
  EXPECT_NEAR(kept.sum().item<double>() / n, 0.1, 0.01);
  // Unchosen tokens are never changed.
  const at::Tensor original = at::stack({e.at("input_ids"), e.at("input_ids")});
  EXPECT_TRUE(batch.at("input_ids")
                  .masked_select(chosen.logical_not())
                  .equal(original.masked_select(chosen.logical_not())));
}

TEST(DataCollatorForLanguageModeling, CausalLabelsAreTheInputsWithPadsIgnored) {
  LanguageModelingCollatorOptions o;
  o.mlm = false;
  o.pad_token_id = 0;
  o.pad_left = true;
  const DataCollatorForLanguageModeling collator(o);
  Example a, b;
  a.set("input_ids", torch::tensor({5, 6, 7}, torch::kLong));
  a.set("attention_mask", torch::tensor({1, 1, 1}, torch::kLong));
  b.set("input_ids", torch::tensor({8}, torch::kLong));
  b.set("attention_mask", torch::tensor({1}, torch::kLong));
  const Batch batch = collator({a, b});
  EXPECT_TRUE(batch.at("input_ids").equal(torch::tensor({{5, 6, 7}, {0, 0, 8}}, torch::kLong)));
  EXPECT_TRUE(
      batch.at("attention_mask").equal(torch::tensor({{1, 1, 1}, {0, 0, 1}}, torch::kLong)));
  EXPECT_TRUE(batch.at("labels").equal(torch::tensor({{5, 6, 7}, {-100, -100, 8}}, torch::kLong)));
}

TEST(DataCollatorForLanguageModeling, RefusesWhatTransformersRefuses) {
  LanguageModelingCollatorOptions o;
  o.pad_token_id = 0;
  o.vocabulary_size = 10;
  EXPECT_THROW(DataCollatorForLanguageModeling{o}, ArgumentError);  // mlm without a mask token
  o.mask_token_id = 1;
  o.mlm_probability = 1.5;
  EXPECT_THROW(DataCollatorForLanguageModeling{o}, ArgumentError);
  o.mlm_probability = 0.15;
  o.mask_replace_prob = 0.8;
  o.random_replace_prob = 0.3;
  EXPECT_THROW(DataCollatorForLanguageModeling{o}, ArgumentError);  // 0.8 + 0.3 > 1
  o.random_replace_prob = 0.1;
  o.pad_token_id.reset();
  EXPECT_THROW(DataCollatorForLanguageModeling{o}, ArgumentError);  // no pad token
  o.pad_token_id = 0;
  o.mlm = false;
  o.whole_word_mask = true;
  EXPECT_THROW(DataCollatorForLanguageModeling{o}, ArgumentError);
  o.mlm = true;
  const DataCollatorForLanguageModeling no_offsets(o);
  Example e;
  e.set("input_ids", torch::tensor({5, 6}, torch::kLong));
  EXPECT_THROW(no_offsets({e}), std::invalid_argument);  // whole words need offset_mapping
}

TEST(DataCollatorWithFlattening, PacksAsTransformersDocumentsIt) {
  const DataCollatorWithFlattening collator;
  Example a, b, empty;
  a.set("input_ids", torch::tensor({1, 2, 3}, torch::kLong));
  b.set("input_ids", torch::tensor({4, 5}, torch::kLong));
  empty.set("input_ids", torch::zeros({0}, torch::kLong));
  const Batch batch = collator({a, empty, b});
  EXPECT_TRUE(batch.at("input_ids").equal(torch::tensor({{1, 2, 3, 4, 5}}, torch::kLong)));
  EXPECT_TRUE(batch.at("labels").equal(torch::tensor({{-100, 2, 3, -100, 5}}, torch::kLong)));
  EXPECT_TRUE(batch.at("position_ids").equal(torch::tensor({{0, 1, 2, 0, 1}}, torch::kLong)));
  EXPECT_FALSE(batch.contains("attention_mask"));
  EXPECT_THROW(collator({empty}), std::invalid_argument);
}

TEST(DataCollatorWithFlattening, KeepsGivenLabelsAndOptions) {
  const DataCollatorWithFlattening collator(
      {.return_position_ids = false, .separator_id = -1, .return_seq_idx = true});
  Example a, b;
  a.set("input_ids", torch::tensor({1, 2}, torch::kLong));
  a.set("labels", torch::tensor({7, 8}, torch::kLong));
  b.set("input_ids", torch::tensor({3, 4, 5}, torch::kLong));
  b.set("labels", torch::tensor({9, -100, 6}, torch::kLong));
  const Batch batch = collator({a, b});
  EXPECT_TRUE(batch.at("labels").equal(torch::tensor({{-1, 8, -1, -100, 6}}, torch::kLong)));
  EXPECT_TRUE(batch.at("seq_idx").equal(torch::tensor({{0, 0, 1, 1, 1}}, torch::kInt)));
  EXPECT_FALSE(batch.contains("position_ids"));
  b.set("labels", torch::tensor({9}, torch::kLong));
  EXPECT_THROW(collator({a, b}), std::invalid_argument);
}

}  // namespace language_modeling_collator_test
}  // namespace ctrainer
