// DDPStrategy in a one-process group: the bucket layout, gradients as views into the buckets
// (accumulation in place, zero_grad keeping them), and gradients equal to
// SingleDeviceStrategy's. The multi-process behaviour is in tests/e2e/ddp_test.cpp.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <torch/nn/modules/linear.h>

#include <ctrainer/distributed/ddp_strategy.h>
#include <ctrainer/distributed/process_group.h>
#include <ctrainer/models/model.h>

#include "support/process.h"

namespace ddp_strategy_test {

using ctrainer::testing::free_port;

/// Three Linear layers of 8x8 (+8 bias): 288 bytes of weights, 32 of bias each.
class Stack : public ctrainer::Model {
 public:
  Stack() {
    for (int i = 0; i < 3; ++i)
      layers_.push_back(register_module("l" + std::to_string(i), torch::nn::Linear(8, 8)));
  }
  ctrainer::ModelOutput forward(const ctrainer::Batch& batch) override {
    at::Tensor h = batch.at("x");
    for (auto& layer : layers_) h = torch::tanh(layer->forward(h));
    return {h.pow(2).mean(), h};
  }

 private:
  std::vector<torch::nn::Linear> layers_;
};

class DDPStrategyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ctrainer::ProcessInfo info;
    info.master_addr = "127.0.0.1";
    info.master_port = free_port();
    ctrainer::ProcessGroupOptions options;
    options.timeout = std::chrono::seconds(10);
    group = std::make_unique<ctrainer::ProcessGroup>(info, options);
  }
  std::unique_ptr<ctrainer::ProcessGroup> group;
  ctrainer::Batch batch{{"x", torch::linspace(-1, 1, 32).view({4, 8})}};
};

TEST_F(DDPStrategyTest, BucketsFollowTheCaps) {
  Stack model;
  // Reverse order: l2.bias, l2.weight, l1.bias, ... First bucket <= 40 B: l2.bias (32 B) alone;
  // then <= 330 B: l2.weight (256 B) + l1.bias (32 B); l1.weight + l0.bias; l0.weight.
  ctrainer::DDPOptions options;
  options.first_bucket_mb = 40.0 / (1024 * 1024);
  options.bucket_cap_mb = 330.0 / (1024 * 1024);
  ctrainer::DDPStrategy strategy(*group, options);
  strategy.setup(model, c10::Device(c10::kCPU));
  EXPECT_EQ(strategy.num_buckets(), 4u);

  Stack big;
  ctrainer::DDPStrategy one_bucket(*group);  // defaults: 1 MiB first bucket holds everything
  one_bucket.setup(big, c10::Device(c10::kCPU));
  EXPECT_EQ(one_bucket.num_buckets(), 1u);
}

TEST_F(DDPStrategyTest, GradientsAreBucketViewsThatAccumulateAndMatchSingleDevice) {
  torch::manual_seed(3);
  Stack model;
  torch::manual_seed(3);
  Stack reference;
  ctrainer::DDPOptions options;
  options.first_bucket_mb = options.bucket_cap_mb = 300.0 / (1024 * 1024);
  ctrainer::DDPStrategy strategy(*group, options);
  strategy.setup(model, c10::Device(c10::kCPU));
  ctrainer::SingleDeviceStrategy single;
  single.setup(reference, c10::Device(c10::kCPU));

  std::vector<const void*> storage;
  for (auto& p : model.parameters()) {
    ASSERT_TRUE(p.grad().defined());
    EXPECT_EQ(p.grad().abs().sum().item<float>(), 0.f);
    storage.push_back(p.grad().data_ptr());
  }
  // Two micro-steps: the first without sync (accumulates locally), the second synchronised.
  strategy.backward(model.forward(batch).loss, /*sync=*/false);
  strategy.backward(model.forward(batch).loss, /*sync=*/true);
  single.backward(reference.forward(batch).loss, true);
  single.backward(reference.forward(batch).loss, true);
  const auto params = model.parameters();
  const auto expected = reference.parameters();
  for (std::size_t i = 0; i < params.size(); ++i) {
    EXPECT_EQ(params[i].grad().data_ptr(), storage[i]) << "parameter " << i;
    EXPECT_TRUE(params[i].grad().equal(expected[i].grad())) << "parameter " << i;
    EXPECT_GT(params[i].grad().abs().sum().item<float>(), 0.f);
  }
  strategy.zero_grad(model);
  for (std::size_t i = 0; i < params.size(); ++i) {
    EXPECT_EQ(params[i].grad().data_ptr(), storage[i]);
    EXPECT_EQ(params[i].grad().abs().sum().item<float>(), 0.f);
  }
  EXPECT_EQ(strategy.world_size(), 1);
  EXPECT_FLOAT_EQ(strategy.mean_across_processes(at::scalar_tensor(2.5)).item<float>(), 2.5f);
  EXPECT_EQ(strategy.any_across_processes(at::ones({1})).item<float>(), 1.f);
  EXPECT_EQ(strategy.any_across_processes(at::zeros({1})).item<float>(), 0.f);
}

// last_stats() describes the last synchronising backward: the bytes of every bucket in launch
// order and who launched them (the hooks with overlap, finalize() without).
TEST_F(DDPStrategyTest, LastStatsDescribeTheLastSynchronisingBackward) {
  for (const bool overlap : {true, false}) {
    Stack model;
    ctrainer::DDPOptions options;  // the four buckets of BucketsFollowTheCaps
    options.first_bucket_mb = 40.0 / (1024 * 1024);
    options.bucket_cap_mb = 330.0 / (1024 * 1024);
    options.overlap_with_backward = overlap;
    ctrainer::DDPStrategy strategy(*group, options);
    EXPECT_TRUE(strategy.last_stats().bucket_bytes.empty());
    strategy.setup(model, c10::Device(c10::kCPU));
    strategy.backward(model.forward(batch).loss, /*sync=*/false);
    EXPECT_TRUE(strategy.last_stats().bucket_bytes.empty()) << "no communication without sync";

    strategy.backward(model.forward(batch).loss, /*sync=*/true);
    const ctrainer::ReducerStats& stats = strategy.last_stats();
    EXPECT_EQ(stats.bucket_bytes, (std::vector<std::size_t>{32, 288, 288, 256}));
    EXPECT_EQ(stats.total_bytes(), 864u);  // 3 x (8x8 + 8) floats
    EXPECT_EQ(stats.buckets_launched_in_backward, overlap ? 4u : 0u);
    ASSERT_EQ(stats.bucket_seconds.size(), 4u);
    for (double seconds : stats.bucket_seconds) EXPECT_GE(seconds, 0.0);
    EXPECT_GE(stats.exposed_seconds, 0.0);
  }
}

}  // namespace ddp_strategy_test
