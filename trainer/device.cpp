#include <ctrainer/trainer/device.h>

#include <torch/cuda.h>

#include <ctrainer/trainer/errors.h>

namespace ctrainer {

c10::Device select_device(const TrainingArguments& args, int64_t local_rank) {
  if (args.use_cpu || !torch::cuda::is_available()) return c10::Device(c10::kCPU);
  const auto count = static_cast<int64_t>(torch::cuda::device_count());
  if (local_rank >= count)
    throw ArgumentError("local rank " + std::to_string(local_rank) + " needs GPU " +
                        std::to_string(local_rank) + " but only " + std::to_string(count) +
                        " are visible; launch fewer processes per node or pass --use_cpu");
  return c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(local_rank));
}

}  // namespace ctrainer
