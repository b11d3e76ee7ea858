// A worker for the DDPStrategy test, run by ctrainer-run: every rank trains the same small MLP
// (after DDPStrategy::setup broadcast rank 0's weights; each rank seeds differently to check
// that) for a few SGD steps on its shard of a fixed global batch, then writes its final
// parameters as hex floats to OUT/params.RANK.txt (bitwise comparable). Rank 0 also trains a
// single-process reference on the whole batch and writes OUT/reference.txt.
// Exit code 0 on success, 3 on an error (the message goes to stderr).
//   --out DIR  --accum A (micro-batches per step, default 1)  --steps K (default 3)
//   --unused-parameter 1  (adds a parameter forward never uses: its bucket never completes
//                          during backward and is reduced at its end)
//   --bucket-cap-mb M / --first-bucket-mb M (small by default, so that there are several)
//   --overlap 0  (DDPOptions::overlap_with_backward = false: buckets reduced after backward)
// After the last step rank 0 prints what the last synchronising backward communicated
// (DDPStrategy::last_stats) next to the size of the gradients.
#include <cstdio>
#include <fstream>
#include <string>

#include <torch/optim/sgd.h>

#include <ctrainer/core/grad_clip.h>
#include <ctrainer/distributed/ddp_strategy.h>
#include <ctrainer/distributed/process_group.h>
#include <ctrainer/distributed/process_info.h>
#include <ctrainer/models/simple/mlp_classifier.h>

#include "support/parameter_dump.h"

namespace {

constexpr int64_t kGlobalBatch = 12;
constexpr int64_t kFeatures = 8;
constexpr double kMaxNorm = 1.0;

/// The MLP, optionally with a parameter that gets no gradient (registered last, so it lands
/// in the first bucket, the one backward would complete first).
class TestModel : public ctrainer::Model {
 public:
  explicit TestModel(bool unused_parameter) {
    mlp_ =
        register_module("mlp", std::make_shared<ctrainer::MLPClassifier>(kFeatures, 16, 3, 0.0, 2));
    if (unused_parameter) register_parameter("unused", torch::ones({40}));
  }
  ctrainer::ModelOutput forward(const ctrainer::Batch& batch) override {
    return mlp_->forward(batch);
  }

 private:
  std::shared_ptr<ctrainer::MLPClassifier> mlp_;
};

std::shared_ptr<TestModel> make_model(uint64_t seed, bool unused_parameter) {
  torch::manual_seed(seed);
  return std::make_shared<TestModel>(unused_parameter);
}

torch::optim::SGD make_optimizer(ctrainer::Model& model) {
  return torch::optim::SGD(model.parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IONBF, 0);
  std::string out_dir = ".";
  int64_t accum = 1, steps = 3;
  bool unused_parameter = false;
  ctrainer::DDPOptions ddp;
  ddp.bucket_cap_mb = 0.001;     // ~1 KiB: several buckets for this ~3 KiB model
  ddp.first_bucket_mb = 0.0002;  // ~200 B: the classifier bias and weight split
  for (int i = 1; i + 1 < argc; ++i) {
    const std::string flag = argv[i];
    const std::string value = argv[++i];
    if (flag == "--out")
      out_dir = value;
    else if (flag == "--accum")
      accum = std::stoll(value);
    else if (flag == "--steps")
      steps = std::stoll(value);
    else if (flag == "--unused-parameter")
      unused_parameter = value == "1";
    else if (flag == "--bucket-cap-mb")
      ddp.bucket_cap_mb = std::stod(value);
    else if (flag == "--first-bucket-mb")
      ddp.first_bucket_mb = std::stod(value);
    else if (flag == "--overlap")
      ddp.overlap_with_backward = value != "0";
  }
  try {
    const auto info = ctrainer::ProcessInfo::from_environment();
    ctrainer::ProcessGroupOptions options;
    options.timeout = std::chrono::seconds(60);
    ctrainer::ProcessGroup group(info, options);
    const int64_t world = info.world_size;
    if (kGlobalBatch % (world * accum) != 0)
      throw std::runtime_error("the global batch of 12 does not split into world x accum");

    torch::manual_seed(7);
    const at::Tensor x = torch::randn({kGlobalBatch, kFeatures});
    const at::Tensor y = torch::arange(kGlobalBatch, at::kLong).remainder(3);

    // A different seed per rank: setup() must make every rank start from rank 0's weights.
    auto model = make_model(42 + static_cast<uint64_t>(info.rank), unused_parameter);
    ctrainer::DDPStrategy strategy(group, ddp);
    strategy.setup(*model, c10::Device(c10::kCPU));
    auto optimizer = make_optimizer(*model);

    const int64_t shard = kGlobalBatch / world, micro = shard / accum;
    for (int64_t step = 0; step < steps; ++step) {
      at::Tensor step_loss = at::zeros({});
      for (int64_t m = 0; m < accum; ++m) {
        const int64_t begin = info.rank * shard + m * micro;
        ctrainer::Batch batch{{"x", x.narrow(0, begin, micro)},
                              {"labels", y.narrow(0, begin, micro)}};
        const at::Tensor loss = model->forward(batch).loss / static_cast<double>(accum);
        strategy.backward(loss, /*sync=*/m == accum - 1);
        step_loss += loss.detach();
      }
      const at::Tensor norm = strategy.clip_grad_norm(*model, kMaxNorm);
      strategy.optimizer_step(optimizer);
      strategy.zero_grad(*model);
      const at::Tensor mean = strategy.mean_across_processes(step_loss);
      if (info.rank == 0)
        std::printf("step %lld: loss %.6f grad norm %.6f\n", static_cast<long long>(step),
                    mean.item<double>(), norm.item<double>());
    }
    if (info.rank == 0) {
      const auto& stats = strategy.last_stats();
      std::size_t gradient_bytes = 0;
      for (const auto& p : model->parameters())
        gradient_bytes += static_cast<std::size_t>(p.numel()) * p.element_size();
      std::printf("last sync: %zu of %zu buckets launched in backward, %zu bytes reduced of %zu\n",
                  stats.buckets_launched_in_backward, stats.bucket_bytes.size(),
                  stats.total_bytes(), gradient_bytes);
    }
    ctrainer::testing::write_parameters(*model,
                                        out_dir + "/params." + std::to_string(info.rank) + ".txt");
    std::printf("rank %lld of %lld: %zu buckets, done\n", static_cast<long long>(info.rank),
                static_cast<long long>(world), strategy.num_buckets());

    if (info.rank == 0) {
      // The same steps in one process on the whole batch (mean loss).
      auto reference = make_model(42, unused_parameter);
      auto reference_optimizer = make_optimizer(*reference);
      for (int64_t step = 0; step < steps; ++step) {
        ctrainer::Batch batch{{"x", x}, {"labels", y}};
        reference->forward(batch).loss.backward();
        ctrainer::clip_grad_norm_(reference->parameters(), kMaxNorm);
        reference_optimizer.step();
        for (auto& p : reference->parameters()) p.mutable_grad() = at::Tensor();
      }
      ctrainer::testing::write_parameters(*reference, out_dir + "/reference.txt");
    }
    group.shutdown();
    return 0;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "ddp_worker: %s\n", error.what());
    return 3;
  }
}
