// The CUDA code paths, run where a GPU is visible: cuda:<local_rank> placement, pinned batches and
// non-blocking copies, GradScaler's fused CUDA kernels, NCCL, the tf32 flags, autocast on the GPU,
// and the Trainer on cuda:0 (against the CPU, in fp16 with loss scaling, and stop + resume).
// On a machine without a GPU (or a build without CTRAINER_WITH_CUDA) every test skips and says
// why: there the CUDA paths are only compiled and linked.
#include <gtest/gtest.h>

#include <filesystem>

#include <torch/cuda.h>

#include <ctrainer/core/batch.h>
#include <ctrainer/core/errors.h>
#include <ctrainer/distributed/cuda_support.h>
#include <ctrainer/distributed/process_group.h>
#include <ctrainer/models/simple/mlp_classifier.h>
#include <ctrainer/trainer/precision/autocast_scope.h>
#include <ctrainer/trainer/precision/grad_scaler.h>
#include <ctrainer/trainer/precision/precision.h>
#include <ctrainer/trainer/runtime/device.h>
#include <ctrainer/trainer/trainer.h>

#include "support/process.h"
#include "support/test_data.h"

namespace ctrainer {
namespace cuda_test {
namespace fs = std::filesystem;

#ifdef CTRAINER_WITH_CUDA
constexpr bool kBuiltWithCuda = true;
#else
constexpr bool kBuiltWithCuda = false;
#endif

#define REQUIRE_CUDA()                                                                   \
  do {                                                                                   \
    if (!kBuiltWithCuda) GTEST_SKIP() << "built without CTRAINER_WITH_CUDA";             \
    if (!torch::cuda::is_available())                                                    \
      GTEST_SKIP() << "no CUDA device visible: the CUDA paths are compiled and linked, " \
                      "run the suite on a GPU machine to execute them";                  \
  } while (false)

const c10::Device kGpu(c10::kCUDA, 0);

int compute_capability_major() {
  return require_cuda_support("cuda_test").compute_capability_major(0);  // the CUDA module's
}

TEST(Cuda, DeviceIsCudaLocalRankUnlessUseCpu) {
  REQUIRE_CUDA();
  TrainingArguments args;
  EXPECT_EQ(select_device(args, 0), kGpu);
  const auto count = static_cast<int64_t>(torch::cuda::device_count());
  try {
    select_device(args, count);  // one process more per node than GPUs
    FAIL() << "expected an ArgumentError";
  } catch (const ArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("--use_cpu"), std::string::npos) << e.what();
  }
  args.use_cpu = true;
  EXPECT_TRUE(select_device(args, 0).is_cpu());
  args.use_cpu = false;  // given explicitly: a GPU, which is there
  EXPECT_EQ(select_device(args, 0), kGpu);
}

// Runs where the CUDA tests skip: a GPU request that cannot be met is an error, not a silent CPU
// run; without the flag the CPU is the fallback, as in HF.
TEST(Cuda, ExplicitUseCpuFalseWithoutAGpuIsAnError) {
  if (torch::cuda::is_available()) GTEST_SKIP() << "a GPU is visible: the request can be met";
  TrainingArguments args;
  EXPECT_TRUE(select_device(args, 0).is_cpu());
  args.use_cpu = false;
  try {
    select_device(args, 0);
    FAIL() << "expected an ArgumentError";
  } catch (const ArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("--use_cpu false asks for a GPU, but no CUDA GPU is "
                                         "visible"),
              std::string::npos)
        << e.what();
  }
}

TEST(Cuda, PinnedBatchesCopyWithoutBlockingAndArriveIntact) {
  REQUIRE_CUDA();
  Batch batch({{"input_ids", at::arange(64, at::kLong).view({8, 8})}, {"labels", at::randn({8})}});
  Batch pinned = batch.pinned();
  for (const auto& [key, value] : pinned) EXPECT_TRUE(value.is_pinned()) << key;
  Batch on_gpu = pinned.to(kGpu);
  torch::cuda::synchronize();
  for (const auto& [key, value] : on_gpu) {
    EXPECT_EQ(value.device(), kGpu) << key;
    EXPECT_TRUE(value.cpu().equal(batch.at(key))) << key;
  }
}

/// Gradients with one inf, on `device`, as parameters of a GradScaler step.
std::vector<at::Tensor> params_with_grads(const c10::Device& device, bool with_inf) {
  std::vector<at::Tensor> params;
  for (int64_t n : {5, 7}) {
    at::Tensor p = at::zeros({n}, at::TensorOptions().device(device)).requires_grad_();
    at::Tensor g = at::arange(n, at::kFloat).mul(1024.0).to(device);
    if (with_inf && n == 7) g[3] = std::numeric_limits<float>::infinity();
    p.mutable_grad() = g;
    params.push_back(p);
  }
  return params;
}

TEST(Cuda, GradScalerUsesTheFusedKernelsAndAgreesWithTheCpu) {
  REQUIRE_CUDA();
  GradScaler gpu({}, kGpu), cpu({}, c10::Device(c10::kCPU));
  EXPECT_TRUE(gpu.uses_fused_kernels());
  for (bool with_inf : {false, true, false}) {
    auto gpu_params = params_with_grads(kGpu, with_inf);
    auto cpu_params = params_with_grads(c10::Device(c10::kCPU), with_inf);
    at::Tensor gpu_found = gpu.unscale_(gpu_params);
    at::Tensor cpu_found = cpu.unscale_(cpu_params);
    EXPECT_EQ(gpu_found.device(), kGpu);
    EXPECT_EQ(gpu_found.item<float>(), with_inf ? 1.0f : 0.0f);
    EXPECT_EQ(cpu_found.item<float>(), gpu_found.item<float>());
    if (!with_inf)
      for (size_t i = 0; i < gpu_params.size(); ++i)
        EXPECT_TRUE(gpu_params[i].grad().cpu().equal(cpu_params[i].grad())) << i;
    gpu.update(gpu_found);
    cpu.update(cpu_found);
    EXPECT_EQ(gpu.get_scale(), cpu.get_scale());
  }
  EXPECT_EQ(gpu.get_scale(), 32768.0);  // 2^16 halved once by the overflow
  EXPECT_EQ(gpu.state_dict(), cpu.state_dict());
}

TEST(Cuda, NcclProcessGroupOfOneReducesGathersAndBroadcasts) {
  REQUIRE_CUDA();
  ProcessInfo info;
  info.master_port = testing::free_port();
  ProcessGroupOptions options;
  options.backend = "nccl";
  options.timeout = std::chrono::seconds(60);
  ProcessGroup group(info, options);
  EXPECT_EQ(group.backend(), "nccl");
  at::Tensor t = at::arange(6, at::TensorOptions().dtype(at::kFloat).device(kGpu));
  group.all_reduce(t, Reduction::kAverage);
  EXPECT_TRUE(t.cpu().equal(at::arange(6, at::kFloat)));
  at::Tensor half = t.to(at::kBFloat16);
  group.all_reduce(half);
  EXPECT_TRUE(half.cpu().equal(at::arange(6, at::kFloat).to(at::kBFloat16)));
  auto gathered = group.all_gather(t);
  ASSERT_EQ(gathered.size(), 1u);
  EXPECT_EQ(gathered[0].device(), kGpu);
  group.broadcast(t, 0);
  group.barrier();
  group.shutdown();
}

TEST(Cuda, Tf32FlagFollowsTheArgument) {
  REQUIRE_CUDA();
  if (compute_capability_major() < 8) GTEST_SKIP() << "GPU older than Ampere";
  apply_tf32(true, kGpu);
  EXPECT_TRUE(at::globalContext().allowTF32CuBLAS());
  EXPECT_TRUE(at::globalContext().allowTF32CuDNN());
  apply_tf32(false, kGpu);
  EXPECT_FALSE(at::globalContext().allowTF32CuBLAS());
  EXPECT_FALSE(at::globalContext().allowTF32CuDNN());
}

TEST(Cuda, AutocastCastsMatmulsOnTheGpuAndRestoresTheState) {
  REQUIRE_CUDA();
  at::Tensor a = at::randn({4, 4}, at::TensorOptions().device(kGpu));
  {
    AutocastScope scope(c10::DeviceType::CUDA, at::kHalf);
    EXPECT_EQ(at::matmul(a, a).scalar_type(), at::kHalf);
  }
  EXPECT_EQ(at::matmul(a, a).scalar_type(), at::kFloat);
  EXPECT_THROW(Precision({.mixed = MixedPrecision::kFp16}, c10::Device(c10::kCPU)),
               ArgumentError);  // fp16 stays a GPU recipe
  Precision fp16({.mixed = MixedPrecision::kFp16, .loss_scaling = GradScalerOptions{}}, kGpu);
  ASSERT_NE(fp16.grad_scaler(), nullptr);
  EXPECT_TRUE(fp16.grad_scaler()->uses_fused_kernels());
}

struct GpuRun {
  std::vector<at::Tensor> params;  ///< on the CPU
  std::vector<nlohmann::json> history;
};

/// An MLP (no dropout, so both devices draw no random numbers) on 40 blobs, batch 8.
GpuRun train_mlp(bool use_cpu, bool fp16, const std::string& dir, int64_t max_steps = 10,
                 std::optional<int64_t> stop_at = std::nullopt,
                 std::optional<std::string> resume = std::nullopt) {
  auto data = testing::make_blobs_dataset(40, 6, 3);
  TrainingArguments args = testing::quiet_args("unused");
  args.output_dir = dir;
  args.use_cpu = use_cpu;
  args.fp16 = fp16;
  args.per_device_train_batch_size = 8;
  args.max_steps = max_steps;
  args.learning_rate = 5e-3;
  args.warmup_steps = 2;
  args.weight_decay = 0.01;
  args.logging_steps = 1;
  args.save_strategy = SaveStrategy::kSteps;
  args.save_steps = 3;
  args.resume_from_checkpoint = resume;
  torch::manual_seed(5);
  auto model = std::make_shared<MLPClassifier>(6, 32, 2, /*dropout=*/0.0, /*layers=*/2);
  std::vector<std::shared_ptr<TrainerCallback>> callbacks;
  if (stop_at) callbacks.push_back(std::make_shared<testing::StopAt>(*stop_at));
  Trainer trainer(model, args, {.train_dataset = data, .callbacks = callbacks});
  EXPECT_EQ(trainer.device().is_cuda(), !use_cpu);
  trainer.train();
  GpuRun run;
  for (const auto& p : model->parameters()) {
    EXPECT_EQ(p.device().is_cuda(), !use_cpu);
    run.params.push_back(p.detach().cpu().clone());
  }
  for (const auto& entry : trainer.state().log_history)
    if (entry.contains("loss")) run.history.push_back(entry);
  return run;
}

TEST(Cuda, TrainerOnTheGpuMatchesTheCpu) {
  REQUIRE_CUDA();
  at::globalContext().setAllowTF32CuBLAS(false);  // fp32 matmuls, comparable with the CPU
  GpuRun gpu = train_mlp(false, false, testing::fresh_output_dir("gpu"));
  GpuRun cpu = train_mlp(true, false, testing::fresh_output_dir("cpu"));
  ASSERT_EQ(gpu.params.size(), cpu.params.size());
  for (size_t i = 0; i < gpu.params.size(); ++i)
    EXPECT_TRUE(at::allclose(gpu.params[i], cpu.params[i], 1e-4, 1e-5)) << "parameter " << i;
  ASSERT_EQ(gpu.history.size(), cpu.history.size());
  for (size_t i = 0; i < gpu.history.size(); ++i)
    EXPECT_NEAR(gpu.history[i]["loss"].get<double>(), cpu.history[i]["loss"].get<double>(), 1e-4);
}

TEST(Cuda, Fp16TrainingCheckpointsTheScalerAndResumesExactly) {
  REQUIRE_CUDA();
  const std::string whole = testing::fresh_output_dir("whole");
  const std::string parts = testing::fresh_output_dir("parts");
  GpuRun uninterrupted = train_mlp(false, true, whole);
  for (const auto& entry : uninterrupted.history)
    EXPECT_TRUE(std::isfinite(entry["loss"].get<double>())) << entry.dump();
  train_mlp(false, true, parts, 10, /*stop_at=*/6);
  ASSERT_TRUE(fs::exists(fs::path(parts) / "checkpoint-6" / "scaler.json"));
  GpuRun resumed = train_mlp(false, true, parts, 10, std::nullopt, parts + "/checkpoint-6");
  for (size_t i = 0; i < resumed.params.size(); ++i)
    EXPECT_TRUE(resumed.params[i].equal(uninterrupted.params[i])) << "parameter " << i;
}

}  // namespace cuda_test
}  // namespace ctrainer
