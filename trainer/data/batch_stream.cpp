#include <ctrainer/trainer/data/batch_stream.h>

#include <algorithm>
#include <string>

namespace ctrainer {

BatchStream::BatchStream(const DataLoader& loader, int64_t first, int64_t end)
    : loader_(loader),
      order_(loader.epoch_order()),
      epoch_(loader.epoch()),
      first_(first),
      end_(end),
      next_(first) {
  if (first < 0 || first > end || end > loader.num_batches())
    throw std::out_of_range("BatchStream: batches [" + std::to_string(first) + ", " +
                            std::to_string(end) + ") are outside [0, " +
                            std::to_string(loader.num_batches()) + ")");
  const int64_t workers = std::min(loader.options().num_workers, end - first);
  if (workers <= 0) return;
  num_workers_ = workers;
  capacity_ = workers * loader.options().prefetch_factor;
  slots_.resize(static_cast<size_t>(capacity_));
  workers_.reserve(static_cast<size_t>(workers));
  for (int64_t w = 0; w < workers; ++w) workers_.emplace_back([this, w] { work(w); });
}

BatchStream::~BatchStream() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  window_moved_.notify_all();
  for (auto& worker : workers_) worker.join();
}

Batch BatchStream::build(int64_t index) const {
  const int64_t batch_size = loader_.options().batch_size;
  const int64_t begin = index * batch_size;
  const int64_t end = std::min<int64_t>(begin + batch_size, static_cast<int64_t>(order_->size()));
  return loader_.collate(std::vector<int64_t>(order_->begin() + begin, order_->begin() + end),
                         epoch_);
}

void BatchStream::work(int64_t worker) {
  for (int64_t k = first_ + worker; k < end_; k += num_workers_) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      window_moved_.wait(lock, [&] { return stop_ || k < next_ + capacity_; });
      if (stop_) return;
    }
    Slot slot;
    try {
      slot.batch = build(k);
    } catch (...) {
      slot.error = std::current_exception();
    }
    const bool failed = static_cast<bool>(slot.error);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      slots_[static_cast<size_t>((k - first_) % capacity_)] = std::move(slot);
    }
    slot_filled_.notify_all();
    if (failed) return;  // the consumer stops at this batch; later ones are not needed
  }
}

void BatchStream::throw_with_context(int64_t index, std::exception_ptr error) const {
  const std::string context =
      "while loading batch " + std::to_string(index) + " of epoch " + std::to_string(epoch_) + ": ";
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    std::throw_with_nested(DataLoaderError(context + e.what()));
  } catch (...) {
    std::throw_with_nested(DataLoaderError(context + "unknown exception"));
  }
}

Batch BatchStream::next() {
  if (done()) throw std::out_of_range("BatchStream: no batch after " + std::to_string(end_ - 1));
  const int64_t index = next_;
  if (workers_.empty()) {
    Batch batch;
    try {
      batch = build(index);
    } catch (...) {
      throw_with_context(index, std::current_exception());
    }
    ++next_;
    return batch;
  }
  Batch batch;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    Slot& mine = slots_[static_cast<size_t>((index - first_) % capacity_)];
    slot_filled_.wait(lock, [&] { return mine.batch.has_value() || mine.error; });
    // A failed batch stays in its slot: calling next() again reports the same error.
    if (mine.error) {
      std::exception_ptr error = mine.error;
      lock.unlock();
      throw_with_context(index, error);
    }
    batch = std::move(*mine.batch);
    mine.batch.reset();
    ++next_;
  }
  window_moved_.notify_all();
  return batch;
}

}  // namespace ctrainer
