// gather_in_dataset_order: evaluation outputs of ranks that each evaluated rows r, r + W, ...
// come back as the whole dataset in order, each row once; ragged widths are padded with -100.
// The collective is replaced by a strategy that hands out fixed per-rank parts, so every
// interleaving case is checked without processes (the multi-process path is
// ctrainer_trainer_ddp_e2e_test).
#include <gtest/gtest.h>

#include <functional>

#include <ctrainer/distributed/strategy.h>
#include <ctrainer/trainer/data/distributed_sampler.h>
#include <ctrainer/trainer/evaluation/eval_gather.h>

namespace ctrainer {
namespace eval_gather_test {

/// A strategy whose all_gather returns the given per-rank tensors.
class FixedGatherStrategy : public Strategy {
 public:
  explicit FixedGatherStrategy(std::vector<at::Tensor> parts) : parts_(std::move(parts)) {}
  void setup(torch::nn::Module&, const c10::Device&) override {}
  void backward(const at::Tensor&, bool) override {}
  at::Tensor clip_grad_norm(torch::nn::Module&, double) override { return {}; }
  void optimizer_step(torch::optim::Optimizer&) override {}
  void zero_grad(torch::nn::Module&) override {}
  at::Tensor mean_across_processes(const at::Tensor& v) override { return v; }
  at::Tensor any_across_processes(const at::Tensor& f) override { return f; }
  std::vector<at::Tensor> all_gather(const at::Tensor&) override { return parts_; }
  int64_t world_size() const override { return static_cast<int64_t>(parts_.size()); }

 private:
  std::vector<at::Tensor> parts_;
};

/// Expects `fn` to throw a std::runtime_error whose message contains `needle`.
void expect_failure(const std::function<void()>& fn, const std::string& needle) {
  try {
    fn();
    ADD_FAILURE() << "no exception; expected one mentioning " << needle;
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

/// Rank `rank`'s rows as ShardedSequentialSampler assigns them, valued by their dataset index.
at::Tensor share(int64_t n, int64_t world, int64_t rank) {
  const auto idx = ShardedSequentialSampler(n, world, rank).indices(0);
  return at::tensor(idx, at::kLong);
}

TEST(EvalGather, UnevenSharesComeBackInDatasetOrderEachRowOnce) {
  for (int64_t n : {1, 2, 7, 9, 37})
    for (int64_t world : {2, 3, 4}) {
      SCOPED_TRACE(std::to_string(n) + " rows over " + std::to_string(world) + " ranks");
      std::vector<at::Tensor> parts;
      for (int64_t r = 0; r < world; ++r) parts.push_back(share(n, world, r));
      FixedGatherStrategy strategy(parts);
      const at::Tensor got = gather_in_dataset_order(strategy, parts[0], n);
      EXPECT_TRUE(at::equal(got, at::arange(n, at::kLong))) << got;
    }
}

TEST(EvalGather, EqualSharesOfTorchsDropLastSamplerAreCutToWhatWasEvaluated) {
  // DistributedSampler(drop_last) on 7 rows over 3 ranks: 2 rows each, row 6 dropped.
  std::vector<at::Tensor> parts;
  for (int64_t r = 0; r < 3; ++r)
    parts.push_back(at::tensor(DistributedSampler(7, 3, r, false, 0, true).indices(0), at::kLong));
  FixedGatherStrategy strategy(parts);
  EXPECT_TRUE(at::equal(gather_in_dataset_order(strategy, parts[0], 7), at::arange(6, at::kLong)));
}

TEST(EvalGather, RowsOfDifferentWidthArePaddedWithMinus100) {
  // Rank 0 evaluated rows 0 and 2 (width 2), rank 1 row 1 (width 3): token-level outputs.
  const at::Tensor rank0 = at::tensor({0.f, 0.5f, 2.f, 2.5f}).reshape({2, 2});
  const at::Tensor rank1 = at::tensor({1.f, 1.5f, 1.75f}).reshape({1, 3});
  FixedGatherStrategy strategy({rank0, rank1});
  const at::Tensor got = gather_in_dataset_order(strategy, rank0, 3);
  const at::Tensor expected =
      at::tensor({0.f, 0.5f, -100.f, 1.f, 1.5f, 1.75f, 2.f, 2.5f, -100.f}).reshape({3, 3});
  EXPECT_TRUE(at::equal(got, expected)) << got;
}

TEST(EvalGather, OneProcessAndMissingOutputs) {
  const at::Tensor local = at::arange(5, at::kLong);
  FixedGatherStrategy one({local});
  EXPECT_TRUE(gather_in_dataset_order(one, local, 5).is_same(local));  // untouched
  FixedGatherStrategy none({at::Tensor(), at::Tensor()});
  EXPECT_FALSE(gather_in_dataset_order(none, at::Tensor(), 4).defined());
  // One row over two ranks: rank 1 had nothing to evaluate and produced nothing.
  const at::Tensor row = at::tensor({4.f, 2.f}).reshape({1, 2});
  FixedGatherStrategy one_row({row, at::Tensor()});
  EXPECT_TRUE(at::equal(gather_in_dataset_order(one_row, row, 1), row));
  // Nothing from a rank that should have had rows is an error.
  FixedGatherStrategy half({local, at::Tensor()});
  expect_failure([&] { gather_in_dataset_order(half, local, 9); },
                 "rank 1 produced 0 rows after rank 0's 5");
}

TEST(EvalGather, SharesThatAreNotTheSamplersAreAnError) {
  // Rank 1 holds more rows than rank 0: not rows r, r + W, ... of one dataset.
  FixedGatherStrategy strategy({at::arange(2, at::kLong), at::arange(3, at::kLong)});
  expect_failure([&] { gather_in_dataset_order(strategy, at::arange(2, at::kLong), 5); },
                 "rank 1 produced 3 rows after rank 0's 2");
}

}  // namespace eval_gather_test
}  // namespace ctrainer
