#include <ctrainer/trainer/runtime/device.h>

#include <torch/cuda.h>

#include <ctrainer/core/errors.h>
#include <ctrainer/core/logging.h>
#include <ctrainer/distributed/cuda_support.h>

namespace ctrainer {

c10::Device select_device(const TrainingArguments& args, int64_t local_rank) {
  require_valid_cuda_support_setting();
  if (args.on_cpu_requested()) return c10::Device(c10::kCPU);
  if (const auto warning = cuda_support_warning()) logging::logger()->warn(*warning);
  if (!torch::cuda::is_available()) {
    // Unset --use_cpu falls back to the CPU, as HF does; an explicit --use_cpu false is a request
    // for a GPU that cannot be met, and silently training on the CPU would hide that.
    if (args.use_cpu.has_value())
      throw ArgumentError(
          "--use_cpu false asks for a GPU, but no CUDA GPU is visible (no GPU or driver, "
          "CUDA_VISIBLE_DEVICES empty, or a libtorch without CUDA; CUDA support " +
          cuda_support_status() + "); drop --use_cpu false to train on the CPU");
    return c10::Device(c10::kCPU);
  }
  const auto count = static_cast<int64_t>(torch::cuda::device_count());
  if (local_rank >= count)
    throw ArgumentError("local rank " + std::to_string(local_rank) + " needs GPU " +
                        std::to_string(local_rank) + " but only " + std::to_string(count) +
                        " are visible; launch fewer processes per node or pass --use_cpu");
  return c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(local_rank));
}

}  // namespace ctrainer
