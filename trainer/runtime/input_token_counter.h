#pragma once
/// \file HF's include_num_input_tokens_seen: the input tokens of each micro-batch, counted on the
/// device without a host synchronisation and added up over the ranks only when the Trainer logs,
/// evaluates, saves or ends training (transformers gathers at every micro-batch; the totals are
/// the same).
#include <cstdint>

#include <ATen/ATen.h>

#include <ctrainer/core/batch.h>
#include <ctrainer/distributed/strategy.h>
#include <ctrainer/trainer/args/choices.h>

namespace ctrainer {

class InputTokenCounter {
 public:
  explicit InputTokenCounter(InputTokensSeen mode = InputTokensSeen::kNo) : mode_(mode) {}

  bool enabled() const { return mode_ != InputTokensSeen::kNo; }

  /// Starts a training run whose batches live on `device` (nothing pending).
  void start(const at::Device& device);

  /// Counts `batch`'s tokens: every element of input_ids (kAll), or the ones of attention_mask
  /// (kNonPadding; without a mask every element, with a warning, as transformers falls back). A
  /// batch without input_ids counts nothing and is reported once.
  void count(const Batch& batch);

  /// Adds the tokens every rank counted since the last call to `seen` and starts again from
  /// zero. A collective: every rank calls it at the same point of the loop.
  void add_pending_to(Strategy& strategy, int64_t& seen);

 private:
  InputTokensSeen mode_;
  at::Tensor pending_;  // float64 on the batches' device: exact below 2^53 tokens
  bool warned_ = false;
};

}  // namespace ctrainer
