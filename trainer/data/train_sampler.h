#pragma once
/// \file Which sampler orders the training data (HF Trainer's _get_train_sampler).
#include <cstdint>
#include <memory>

#include <ctrainer/trainer/args/choices.h>
#include <ctrainer/trainer/data/dataset.h>
#include <ctrainer/trainer/data/sampler.h>

namespace ctrainer {

/// What decides the training sampler.
struct TrainSamplerOptions {
  int64_t seed = 42;  ///< TrainingArguments::sampler_seed()
  /// --train_sampling_strategy: kRandom reshuffles every epoch, kSequential keeps the dataset's
  /// order, kGroupByLength groups examples of similar length.
  TrainSamplingStrategy strategy = TrainSamplingStrategy::kRandom;
  /// Examples per optimizer step on one process (per-device batch x gradient accumulation):
  /// the batch size HF gives LengthGroupedSampler.
  int64_t group_batch_size = 8;
  int64_t num_replicas = 1;  ///< world size
  int64_t rank = 0;
  bool drop_last = false;  ///< --dataloader_drop_last (used by the distributed samplers)
  /// Seq2SeqTrainingArguments --sortish_sampler (with strategy kRandom): SortishSampler over
  /// batches of `per_device_batch_size` x num_replicas examples.
  bool sortish = false;
  int64_t per_device_batch_size = 8;
};

/// RandomSampler (kRandom), SequentialSampler (kSequential) or LengthGroupedSampler
/// (kGroupByLength); their distributed variants (DistributedSampler, with or without shuffling,
/// DistributedLengthGroupedSampler) when num_replicas > 1; SortishSampler when `sortish`. Throws
/// ArgumentError for kGroupByLength and sortish when the dataset has no lengths().
std::shared_ptr<Sampler> make_train_sampler(const Dataset& dataset,
                                            const TrainSamplerOptions& options);

}  // namespace ctrainer
