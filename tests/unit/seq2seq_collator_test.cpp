// DataCollatorForSeq2Seq and shift_tokens_right on closed forms. Parity with transformers'
// collator: tests/parity/seq2seq_collator_parity.py.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <ctrainer/core/errors.h>
#include <ctrainer/models/generation/shift_tokens.h>
#include <ctrainer/trainer/data/seq2seq_collator.h>

namespace ctrainer {
namespace seq2seq_collator_test {

at::Tensor ids(std::vector<int64_t> values) {
  return at::tensor(values, at::kLong);
}

Example example(std::vector<int64_t> source, std::vector<int64_t> target) {
  Example e;
  e.set("input_ids", ids(source));
  e.set("attention_mask", at::ones({static_cast<int64_t>(source.size())}, at::kLong));
  e.set("labels", ids(target));
  return e;
}

TEST(ShiftTokensRight, StartsWithTheStartTokenAndTurnsIgnoredLabelsIntoPads) {
  const auto labels = ids({5, 6, 7, -100, 8, -100}).reshape({2, 3});
  EXPECT_TRUE(at::equal(generation::shift_tokens_right(labels, 1, 2),
                        ids({2, 5, 6, 2, 1, 8}).reshape({2, 3})));
}

TEST(DataCollatorForSeq2Seq, PadsSourcesWithThePadIdAndLabelsWithMinus100OnTheSameSide) {
  Seq2SeqCollatorOptions options;
  options.pad_token_id = 1;
  options.decoder_start_token_id = 2;
  options.decoder_pad_token_id = 1;
  const std::vector<Example> batch_examples = {example({4, 5, 6}, {7}), example({8}, {9, 10})};
  const Batch right = DataCollatorForSeq2Seq(options)(batch_examples);
  EXPECT_TRUE(at::equal(right.at("input_ids"), ids({4, 5, 6, 8, 1, 1}).reshape({2, 3})));
  EXPECT_TRUE(at::equal(right.at("attention_mask"), ids({1, 1, 1, 1, 0, 0}).reshape({2, 3})));
  EXPECT_TRUE(at::equal(right.at("labels"), ids({7, -100, 9, 10}).reshape({2, 2})));
  EXPECT_TRUE(at::equal(right.at("decoder_input_ids"), ids({2, 7, 2, 9}).reshape({2, 2})));
  options.pad_left = true;
  options.pad_to_multiple_of = 4;
  const Batch left = DataCollatorForSeq2Seq(options)(batch_examples);
  EXPECT_TRUE(at::equal(left.at("input_ids"), ids({1, 4, 5, 6, 1, 1, 1, 8}).reshape({2, 4})));
  EXPECT_TRUE(
      at::equal(left.at("labels"), ids({-100, -100, -100, 7, -100, -100, 9, 10}).reshape({2, 4})));
  EXPECT_TRUE(
      at::equal(left.at("decoder_input_ids"), ids({2, 1, 1, 1, 2, 1, 1, 9}).reshape({2, 4})));
}

TEST(DataCollatorForSeq2Seq, ASequenceLongerThanMaxLengthIsRefusedByName) {
  Seq2SeqCollatorOptions options;
  options.max_length = 2;
  try {
    const DataCollatorForSeq2Seq collator(options);
    collator({example({4, 5, 6}, {7})});
    FAIL() << "a 3-token source was padded to max_length 2";
  } catch (const ArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("sequence of 3 exceeds max_length 2"),
              std::string::npos);
  }
}

}  // namespace seq2seq_collator_test
}  // namespace ctrainer
