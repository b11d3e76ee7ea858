#include <ctrainer/trainer/data/data_loader.h>

#include <algorithm>
#include <exception>
#include <stdexcept>
#include <typeinfo>

#include <ctrainer/core/errors.h>

namespace ctrainer {

DataLoader::DataLoader(std::shared_ptr<Dataset> dataset, std::shared_ptr<Sampler> sampler,
                       DataLoaderOptions options, std::shared_ptr<DataCollator> collator)
    : dataset_(std::move(dataset)),
      sampler_(std::move(sampler)),
      options_(options),
      collator_(std::move(collator)) {
  if (!dataset_) throw ArgumentError("DataLoader needs a dataset");
  if (!sampler_) throw ArgumentError("DataLoader needs a sampler");
  if (options_.batch_size < 1)
    throw ArgumentError("DataLoader batch_size must be >= 1, got " +
                        std::to_string(options_.batch_size));
  if (options_.num_workers < 0)
    throw ArgumentError("DataLoader num_workers must be >= 0, got " +
                        std::to_string(options_.num_workers));
  if (options_.prefetch_factor < 1)
    throw ArgumentError("DataLoader prefetch_factor must be >= 1, got " +
                        std::to_string(options_.prefetch_factor));
  if (!collator_) collator_ = std::make_shared<DefaultDataCollator>();
  // Only the plain stacking collator may be replaced by the dataset's one-gather fast path.
  const DataCollator& collator_ref = *collator_;
  default_collator_ = typeid(collator_ref) == typeid(DefaultDataCollator);
  set_epoch(0);
}

int64_t DataLoader::num_batches() const {
  const int64_t n = sampler_->size();
  return options_.drop_last ? n / options_.batch_size
                            : (n + options_.batch_size - 1) / options_.batch_size;
}

void DataLoader::set_epoch(int64_t epoch) {
  if (epoch == epoch_) return;
  epoch_ = epoch;
  order_ = std::make_shared<const std::vector<int64_t>>(sampler_->indices(epoch));
}

int64_t DataLoader::batch_num_examples(int64_t index) const {
  const int64_t begin = index * options_.batch_size;
  return std::min<int64_t>(options_.batch_size, static_cast<int64_t>(order_->size()) - begin);
}

namespace {

/// Rethrows the exception being handled, nested in one that names the dataset example it came
/// from: a worker's error then says which example to look at, whatever the dataset wrote.
[[noreturn]] void rethrow_naming_example(int64_t index) {
  const std::string name = "dataset example " + std::to_string(index) + ": ";
  try {
    throw;
  } catch (const std::exception& error) {
    std::throw_with_nested(std::runtime_error(name + error.what()));
  } catch (...) {
    std::throw_with_nested(std::runtime_error(name + "unknown exception"));
  }
}

}  // namespace

Batch DataLoader::collate(const std::vector<int64_t>& indices, std::optional<int64_t> epoch) const {
  std::optional<Batch> out;
  if (default_collator_) {
    try {
      out = dataset_->get_stacked(indices);
    } catch (...) {
      // Which example? Read them one by one to find it (only on this error path).
      for (int64_t i : indices) {
        try {
          (void)dataset_->get(i);
        } catch (...) {
          rethrow_naming_example(i);
        }
      }
      throw;
    }
  }
  if (!out) {
    std::vector<Example> examples;
    examples.reserve(indices.size());
    for (int64_t i : indices) {
      try {
        examples.push_back(dataset_->get(i));
      } catch (...) {
        rethrow_naming_example(i);
      }
    }
    out = collator_->collate(examples,
                             BatchOrigin{.epoch = epoch.value_or(std::max<int64_t>(epoch_, 0)),
                                         .dataset_indices = indices});
  }
#ifdef CTRAINER_WITH_CUDA
  if (options_.pin_memory) return out->pinned();
#endif
  return std::move(*out);
}

Batch DataLoader::batch(int64_t index) const {
  if (index < 0 || index >= num_batches())
    throw std::out_of_range("batch index " + std::to_string(index) + " out of range [0, " +
                            std::to_string(num_batches()) + ")");
  const int64_t begin = index * options_.batch_size;
  const int64_t count = batch_num_examples(index);
  return collate(std::vector<int64_t>(order_->begin() + begin, order_->begin() + begin + count));
}

SamplerState DataLoader::state(int64_t position) const {
  SamplerState s;
  s.sampler = sampler_->name();
  s.seed = sampler_->seed();
  s.epoch = epoch_;
  s.position = position;
  s.details = sampler_->details();
  return s;
}

}  // namespace ctrainer
