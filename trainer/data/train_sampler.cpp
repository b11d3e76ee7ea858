#include <ctrainer/trainer/data/train_sampler.h>

#include <ctrainer/core/errors.h>
#include <ctrainer/trainer/data/distributed_sampler.h>
#include <ctrainer/trainer/data/length_grouped_sampler.h>

namespace ctrainer {

std::shared_ptr<Sampler> make_train_sampler(const Dataset& dataset,
                                            const TrainSamplerOptions& options) {
  const bool distributed = options.num_replicas > 1;
  if (options.strategy == TrainSamplingStrategy::kGroupByLength) {
    std::optional<std::vector<int64_t>> lengths = dataset.lengths();
    if (!lengths)
      throw ArgumentError(
          "--group_by_length needs the length of every training example, but the train dataset "
          "does not provide lengths() (a TokenizedDataset does); drop --group_by_length or "
          "override Dataset::lengths()");
    if (static_cast<int64_t>(lengths->size()) != dataset.size())
      throw ArgumentError("--group_by_length: the train dataset returned " +
                          std::to_string(lengths->size()) + " lengths for " +
                          std::to_string(dataset.size()) + " examples");
    if (distributed)
      return std::make_shared<DistributedLengthGroupedSampler>(
          std::move(*lengths), options.group_batch_size, options.num_replicas, options.rank,
          options.seed, options.drop_last);
    return std::make_shared<LengthGroupedSampler>(std::move(*lengths), options.group_batch_size,
                                                  options.seed);
  }
  const bool shuffle = options.strategy != TrainSamplingStrategy::kSequential;
  if (distributed)
    return std::make_shared<DistributedSampler>(dataset.size(), options.num_replicas, options.rank,
                                                shuffle, options.seed, options.drop_last);
  if (!shuffle) return std::make_shared<SequentialSampler>(dataset.size());
  return std::make_shared<RandomSampler>(dataset.size(), options.seed);
}

}  // namespace ctrainer
