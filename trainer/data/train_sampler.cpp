#include <ctrainer/trainer/data/train_sampler.h>

#include <ctrainer/core/errors.h>
#include <ctrainer/trainer/data/distributed_sampler.h>
#include <ctrainer/trainer/data/length_grouped_sampler.h>
#include <ctrainer/trainer/data/sortish_sampler.h>

namespace ctrainer {
namespace {

/// The dataset's lengths, which the length-ordered samplers need (`flag` asked for one).
std::vector<int64_t> example_lengths(const Dataset& dataset, const std::string& flag) {
  std::optional<std::vector<int64_t>> lengths = dataset.lengths();
  if (!lengths)
    throw ArgumentError(flag +
                        " needs the length of every training example, but the train dataset "
                        "does not provide lengths() (a TokenizedDataset does); drop " +
                        flag + " or override Dataset::lengths()");
  if (static_cast<int64_t>(lengths->size()) != dataset.size())
    throw ArgumentError(flag + ": the train dataset returned " + std::to_string(lengths->size()) +
                        " lengths for " + std::to_string(dataset.size()) + " examples");
  return std::move(*lengths);
}

}  // namespace

std::shared_ptr<Sampler> make_train_sampler(const Dataset& dataset,
                                            const TrainSamplerOptions& options) {
  const bool distributed = options.num_replicas > 1;
  if (options.sortish) {
    if (options.strategy != TrainSamplingStrategy::kRandom)
      throw ArgumentError("--sortish_sampler needs --train_sampling_strategy random");
    return std::make_shared<SortishSampler>(example_lengths(dataset, "--sortish_sampler"),
                                            options.per_device_batch_size * options.num_replicas,
                                            options.seed, options.num_replicas, options.rank,
                                            options.drop_last);
  }
  if (options.strategy == TrainSamplingStrategy::kGroupByLength) {
    std::vector<int64_t> lengths = example_lengths(dataset, "--group_by_length");
    if (distributed)
      return std::make_shared<DistributedLengthGroupedSampler>(
          std::move(lengths), options.group_batch_size, options.num_replicas, options.rank,
          options.seed, options.drop_last);
    return std::make_shared<LengthGroupedSampler>(std::move(lengths), options.group_batch_size,
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
