#pragma once
/// \file Device selection: CUDA (device = local rank) when available and not --use_cpu.
#include <c10/core/Device.h>

#include <ctrainer/trainer/args/training_args.h>

namespace ctrainer {

/// The device this process trains on: cuda:<local_rank> when this build has CUDA, a GPU is
/// visible and --use_cpu is not set; the CPU otherwise. Throws ArgumentError when --use_cpu
/// false was given explicitly and no GPU can be used, or when local_rank has no GPU.
c10::Device select_device(const TrainingArguments& args, int64_t local_rank = 0);

}  // namespace ctrainer
