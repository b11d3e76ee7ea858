// Datasets, samplers, collators, the loader, and evaluation-output concatenation.
#include <gtest/gtest.h>

#include <numeric>
#include <set>

#include <ctrainer/core/errors.h>
#include <ctrainer/trainer/data/data_loader.h>
#include <ctrainer/trainer/evaluation/tensor_concat.h>

namespace ctrainer {
namespace data_test {

std::shared_ptr<TensorDataset> counting_dataset(int64_t n) {
  return std::make_shared<TensorDataset>(std::map<std::string, at::Tensor>{
      {"x", at::arange(n, at::kFloat).unsqueeze(1).repeat({1, 3})},
      {"labels", at::arange(n, at::kLong)}});
}

TEST(Data, RandomSamplerIsAPermutationFixedBySeedAndEpoch) {
  RandomSampler a(50, 42), b(50, 42), c(50, 43);
  auto e0 = a.indices(0);
  EXPECT_EQ(e0, b.indices(0));
  EXPECT_NE(e0, a.indices(1));  // reshuffled every epoch
  EXPECT_NE(e0, c.indices(0));
  EXPECT_EQ(std::set<int64_t>(e0.begin(), e0.end()).size(), 50u);
  // Independent of the global generator (which seeds init and dropout).
  torch::manual_seed(1);
  auto before = a.indices(3);
  torch::manual_seed(2);
  EXPECT_EQ(before, a.indices(3));
}

TEST(Data, LoaderBatchesFollowTheSamplerWithAndWithoutDropLast) {
  auto ds = counting_dataset(10);
  auto sampler = std::make_shared<RandomSampler>(10, 0);
  DataLoader keep(ds, sampler, {.batch_size = 4});
  DataLoader drop(ds, sampler, {.batch_size = 4, .drop_last = true});
  EXPECT_EQ(keep.num_batches(), 3);
  EXPECT_EQ(drop.num_batches(), 2);
  auto order = sampler->indices(0);
  std::vector<int64_t> seen;
  for (int64_t b = 0; b < keep.num_batches(); ++b) {
    Batch batch = keep.batch(b);
    EXPECT_EQ(batch.size(), keep.batch_num_examples(b));
    auto labels = batch.at("labels");
    for (int64_t i = 0; i < labels.size(0); ++i) seen.push_back(labels[i].item<int64_t>());
    EXPECT_TRUE(batch.at("x").select(1, 0).equal(labels.to(at::kFloat)));
  }
  EXPECT_EQ(seen, order);
  EXPECT_EQ(keep.batch(2).size(), 2);
  keep.set_epoch(1);
  EXPECT_FALSE(keep.batch(0).at("labels").equal(
      DataLoader(ds, sampler, {.batch_size = 4}).batch(0).at("labels")));
  EXPECT_THROW(keep.batch(3), std::out_of_range);
}

/// A dataset without the stacked fast path: the loader must stack examples itself, identically.
class ExampleOnlyDataset : public Dataset {
 public:
  explicit ExampleOnlyDataset(std::shared_ptr<TensorDataset> inner) : inner_(std::move(inner)) {}
  int64_t size() const override { return inner_->size(); }
  Example get(int64_t i) const override { return inner_->get(i); }

 private:
  std::shared_ptr<TensorDataset> inner_;
};

TEST(Data, StackedFastPathEqualsCollatingExamples) {
  auto ds = counting_dataset(9);
  auto sampler = std::make_shared<RandomSampler>(9, 5);
  DataLoader fast(ds, sampler, {.batch_size = 4});
  DataLoader slow(std::make_shared<ExampleOnlyDataset>(ds), sampler, {.batch_size = 4});
  for (int64_t b = 0; b < 3; ++b)
    for (const auto& key : {"x", "labels"})
      EXPECT_TRUE(fast.batch(b).at(key).equal(slow.batch(b).at(key)));
}

TEST(Data, CollatorAndDatasetRejectInconsistentInput) {
  DefaultDataCollator collate;
  Example a{{"x", at::zeros({3})}};
  Example b{{"x", at::zeros({4})}};
  EXPECT_THROW(collate({a, b}), std::invalid_argument);
  Example c{{"y", at::zeros({3})}};
  EXPECT_THROW(collate({a, c}), std::invalid_argument);
  EXPECT_THROW(TensorDataset({{"x", at::zeros({3, 2})}, {"y", at::zeros({4})}}), ArgumentError);
  EXPECT_THROW(
      DataLoader(counting_dataset(4), std::make_shared<SequentialSampler>(4), {.batch_size = 0}),
      ArgumentError);
  try {
    Batch batch;
    batch.at("input_ids");
    FAIL();
  } catch (const std::out_of_range& e) {
    EXPECT_NE(std::string(e.what()).find("input_ids"), std::string::npos);
  }
}

TEST(Data, ConcatPaddedPadsRaggedSecondDimensionWithMinus100) {
  auto a = at::ones({2, 3}, at::kLong);
  auto b = at::full({1, 5}, 2, at::kLong);
  auto out = concat_padded({a, b});
  ASSERT_EQ(out.sizes(), (std::vector<int64_t>{3, 5}));
  EXPECT_EQ(out[0][3].item<int64_t>(), -100);
  EXPECT_EQ(out[2][4].item<int64_t>(), 2);
  EXPECT_TRUE(concat_padded({a, a}).equal(at::cat({a, a})));
  EXPECT_FALSE(concat_padded({}).defined());
}

}  // namespace data_test
}  // namespace ctrainer
