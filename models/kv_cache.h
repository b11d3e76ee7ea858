#pragma once
/// \file The key/value cache of a decoder's self-attention (transformers' DynamicCache): each
/// layer's keys and values of the tokens seen so far, so that a generation step runs the model on
/// its new token only.
#include <cstdint>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

namespace ctrainer {

class KeyValueCache {
 public:
  /// A cache for a decoder of `num_layers` layers, holding nothing yet.
  explicit KeyValueCache(int64_t num_layers);

  /// Appends the keys and values [batch, kv_heads, new_positions, head_dim] that layer `layer`
  /// computed for its new tokens, and returns the layer's keys and values of every position
  /// (past and new), as DynamicCache.update does. A layer outside 0..num_layers()-1 throws
  /// std::out_of_range (here and in length()).
  std::pair<at::Tensor, at::Tensor> append(int64_t layer, const at::Tensor& keys,
                                           const at::Tensor& values);

  /// How many positions layer `layer` holds (0 before its first append).
  int64_t length(int64_t layer = 0) const;
  int64_t num_layers() const { return static_cast<int64_t>(layers_.size()); }

  /// Keeps batch rows `rows` (a long tensor of row indices, repeats allowed) in that order, in
  /// every layer: beam search's reorder_cache after it chose which beams continue.
  void select_rows(const at::Tensor& rows);

 private:
  void check_layer(int64_t layer) const;  // std::out_of_range unless 0 <= layer < num_layers()
  std::vector<std::pair<at::Tensor, at::Tensor>> layers_;
};

/// The keys and values an encoder-decoder's cross-attention computed from the encoder's output,
/// one (keys, values) pair per decoder layer, made at the first generation step and reused at
/// every later one (the encoder's output does not change).
using CrossAttentionCache = std::vector<std::pair<at::Tensor, at::Tensor>>;

}  // namespace ctrainer
