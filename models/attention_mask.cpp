#include <ctrainer/models/attention_mask.h>

#include <string>

#include <ctrainer/core/errors.h>

namespace ctrainer {

at::Tensor causal_padding_mask(const at::Tensor& attention_mask, int64_t length) {
  if (!attention_mask.defined() || attention_mask.all().item<bool>()) return {};
  const at::Tensor causal =
      at::ones({length, length}, attention_mask.options().dtype(at::kBool)).tril();
  const at::Tensor keys = attention_mask.to(at::kBool).view({attention_mask.size(0), 1, 1, length});
  return causal.view({1, 1, length, length}).logical_and(keys);
}

at::Tensor packed_sequence_indices(const at::Tensor& position_ids) {
  const at::Tensor first_minus_one = position_ids.narrow(1, 0, 1) - 1;
  const at::Tensor steps = at::diff(position_ids, 1, -1, first_minus_one);
  const at::Tensor indices = steps.ne(1).cumsum(-1);
  if (indices.select(1, -1).eq(0).all().item<bool>()) return {};
  return indices;
}

at::Tensor decoder_attention_mask(const at::Tensor& attention_mask, const at::Tensor& position_ids,
                                  int64_t length) {
  if (attention_mask.defined() || !position_ids.defined())
    return causal_padding_mask(attention_mask, length);
  const at::Tensor sequence = packed_sequence_indices(position_ids);
  if (!sequence.defined()) return {};
  const at::Tensor causal =
      at::ones({length, length}, position_ids.options().dtype(at::kBool)).tril();
  const at::Tensor same_sequence = sequence.unsqueeze(2).eq(sequence.unsqueeze(1));
  return same_sequence.logical_and(causal).unsqueeze(1);
}

at::Tensor cached_causal_mask(const at::Tensor& attention_mask, int64_t past, int64_t length) {
  const bool padded = attention_mask.defined() && !attention_mask.all().item<bool>();
  if (!padded && (past == 0 || length == 1)) return {};
  const int64_t keys = past + length;
  if (attention_mask.defined() && attention_mask.size(1) != keys)
    throw ArgumentError("attention_mask covers " + std::to_string(attention_mask.size(1)) +
                        " positions; the cache holds " + std::to_string(past) + " and " +
                        std::to_string(length) + " are new");
  const auto bool_options =
      (attention_mask.defined() ? attention_mask.options() : at::TensorOptions()).dtype(at::kBool);
  // Query i sits at position past + i: it sees keys up to there (tril with that offset).
  at::Tensor mask = at::ones({length, keys}, bool_options).tril(past).view({1, 1, length, keys});
  if (padded)
    mask =
        mask.logical_and(attention_mask.to(at::kBool).view({attention_mask.size(0), 1, 1, keys}));
  return mask;
}

}  // namespace ctrainer
