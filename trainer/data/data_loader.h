#pragma once
/// \file DataLoader: batches of a dataset in sampler order, with random access by batch index.
#include <cstdint>
#include <memory>
#include <vector>

#include <ctrainer/trainer/data/collator.h>
#include <ctrainer/trainer/data/dataset.h>
#include <ctrainer/trainer/data/sampler.h>

namespace ctrainer {

/// Loader options (HF / PyTorch DataLoader names).
struct DataLoaderOptions {
  int64_t batch_size = 8;
  bool drop_last = false;
  /// Put batches in page-locked memory so host-to-device copies are asynchronous (CUDA only;
  /// ignored on CPU-only builds, where there is no device copy).
  bool pin_memory = false;
};

/// Yields the batches of one epoch. Batch `i` of an epoch can be fetched directly, which lets a
/// resumed run jump to the next unseen batch without touching the skipped ones.
class DataLoader {
 public:
  /// `collator` may be null: DefaultDataCollator is used.
  DataLoader(std::shared_ptr<Dataset> dataset, std::shared_ptr<Sampler> sampler,
             DataLoaderOptions options, std::shared_ptr<DataCollator> collator = nullptr);

  /// Batches per epoch.
  int64_t num_batches() const;
  /// Selects the epoch whose order batch() returns (recomputes the sampler order).
  void set_epoch(int64_t epoch);
  int64_t epoch() const { return epoch_; }
  /// Batch `index` (0-based) of the current epoch, on the host.
  Batch batch(int64_t index) const;
  /// Number of examples in batch `index` without building it.
  int64_t batch_num_examples(int64_t index) const;

  const Dataset& dataset() const { return *dataset_; }
  std::shared_ptr<Dataset> dataset_ptr() const { return dataset_; }
  const Sampler& sampler() const { return *sampler_; }
  const DataLoaderOptions& options() const { return options_; }

 private:
  std::shared_ptr<Dataset> dataset_;
  std::shared_ptr<Sampler> sampler_;
  DataLoaderOptions options_;
  std::shared_ptr<DataCollator> collator_;
  bool default_collator_ = false;
  int64_t epoch_ = -1;
  std::vector<int64_t> order_;
};

}  // namespace ctrainer
