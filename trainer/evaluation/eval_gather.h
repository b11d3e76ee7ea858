#pragma once
/// \file Putting the evaluation outputs of a data-parallel job back together: each rank
/// evaluated dataset rows r, r + W, r + 2W, ... (ShardedSequentialSampler, or torch's
/// DistributedSampler with drop_last), and metrics need the rows of the whole dataset, in order,
/// each once (HF/accelerate's gather_for_metrics).
#include <cstdint>

#include <ATen/ATen.h>

#include <ctrainer/distributed/strategy.h>

namespace ctrainer {

/// Gathers `local` (this rank's rows, in its sampler's order) from every process and returns
/// the rows of the whole dataset in dataset order: at most `dataset_size` rows (fewer when the
/// sampler or the loader dropped a ragged tail). The first ranks may hold one row more than the
/// others (uneven shares), and a rank without rows may return an undefined tensor; anything else
/// is an error naming the rank.
/// Rows of different width are padded with `padding_index` as concat_padded does. Undefined
/// on every rank -> undefined. With one process, `local` is returned as it is.
at::Tensor gather_in_dataset_order(Strategy& strategy, const at::Tensor& local,
                                   int64_t dataset_size, double padding_index = -100);

}  // namespace ctrainer
