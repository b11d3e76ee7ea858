#include <ctrainer/models/kv_cache.h>

#include <stdexcept>
#include <string>

#include <ATen/ATen.h>

#include <ctrainer/core/errors.h>

namespace ctrainer {

KeyValueCache::KeyValueCache(int64_t num_layers) {
  if (num_layers < 1)
    throw ArgumentError("KeyValueCache: a decoder has at least one layer, got " +
                        std::to_string(num_layers));
  layers_.resize(static_cast<size_t>(num_layers));
}

void KeyValueCache::check_layer(int64_t layer) const {
  if (layer < 0 || layer >= num_layers())
    throw std::out_of_range("KeyValueCache: layer " + std::to_string(layer) + " of a cache for " +
                            std::to_string(num_layers()) + " layers");
}

std::pair<at::Tensor, at::Tensor> KeyValueCache::append(int64_t layer, const at::Tensor& keys,
                                                        const at::Tensor& values) {
  check_layer(layer);
  auto& [cached_keys, cached_values] = layers_[static_cast<size_t>(layer)];
  // Concatenation, as DynamicCache: a step copies the layer's past once, which at generation's
  // lengths costs less than the step's matrix products.
  cached_keys = cached_keys.defined() ? at::cat({cached_keys, keys}, -2) : keys;
  cached_values = cached_values.defined() ? at::cat({cached_values, values}, -2) : values;
  return {cached_keys, cached_values};
}

int64_t KeyValueCache::length(int64_t layer) const {
  check_layer(layer);
  const at::Tensor& keys = layers_[static_cast<size_t>(layer)].first;
  return keys.defined() ? keys.size(-2) : 0;
}

void KeyValueCache::select_rows(const at::Tensor& rows) {
  for (auto& [keys, values] : layers_) {
    if (!keys.defined()) continue;
    const at::Tensor on_device = rows.to(keys.device(), at::kLong);
    keys = keys.index_select(0, on_device);
    values = values.index_select(0, on_device);
  }
}

}  // namespace ctrainer
