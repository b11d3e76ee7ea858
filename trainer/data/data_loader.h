#pragma once
/// \file DataLoader: batches of a dataset in sampler order, with random access by batch index
/// and a prefetching stream over a range of batches.
#include <cstdint>
#include <memory>
#include <optional>
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
  /// Threads that build batches ahead of the consumer in a BatchStream (HF's
  /// dataloader_num_workers; threads, not processes). 0: batches are built on demand by the
  /// consuming thread.
  int64_t num_workers = 0;
  /// Batches each worker may hold ready ahead of the consumer (HF's dataloader_prefetch_factor):
  /// at most num_workers * prefetch_factor batches wait in memory.
  int64_t prefetch_factor = 2;
};

/// Yields the batches of one epoch. Batch `i` of an epoch can be fetched directly, which lets a
/// resumed run jump to the next unseen batch without touching the skipped ones; BatchStream
/// (batch_stream.h) prefetches a range of them with worker threads.
class DataLoader {
 public:
  /// `collator` may be null: DefaultDataCollator is used. Throws ArgumentError for
  /// batch_size < 1, num_workers < 0 or prefetch_factor < 1.
  DataLoader(std::shared_ptr<Dataset> dataset, std::shared_ptr<Sampler> sampler,
             DataLoaderOptions options, std::shared_ptr<DataCollator> collator = nullptr);

  /// Batches per epoch.
  int64_t num_batches() const;
  /// Selects the epoch whose order batch() returns (recomputes the sampler order). Streams
  /// already open keep the order they were opened with.
  void set_epoch(int64_t epoch);
  int64_t epoch() const { return epoch_; }
  /// Batch `index` (0-based) of the current epoch, on the host (pinned when pin_memory on a
  /// CUDA build). Thread-safe with other const calls.
  Batch batch(int64_t index) const;
  /// Number of examples in batch `index` without building it.
  int64_t batch_num_examples(int64_t index) const;
  /// The batch of the given dataset indices (the collator, or the dataset's stacked fast path
  /// with the default collator; pinned like batch()), as built in `epoch` (default: the
  /// current one), which collators that draw random numbers seed them with.
  Batch collate(const std::vector<int64_t>& dataset_indices,
                std::optional<int64_t> epoch = std::nullopt) const;
  /// The current epoch's dataset indices, in visiting order (shared, immutable).
  std::shared_ptr<const std::vector<int64_t>> epoch_order() const { return order_; }
  /// Where the loader stands after consuming `position` batches of the current epoch.
  SamplerState state(int64_t position) const;

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
  std::shared_ptr<const std::vector<int64_t>> order_;
};

}  // namespace ctrainer
