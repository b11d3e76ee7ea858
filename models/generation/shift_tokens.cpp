#include <ctrainer/models/generation/shift_tokens.h>

#include <ATen/ATen.h>

#include <ctrainer/core/errors.h>

namespace ctrainer::generation {

at::Tensor shift_tokens_right(const at::Tensor& labels, int64_t pad_token_id,
                              int64_t decoder_start_token_id) {
  if (labels.dim() != 2)
    throw ArgumentError("shift_tokens_right: labels must be [batch, length], got " +
                        std::to_string(labels.dim()) + " dimensions");
  auto shifted = at::zeros_like(labels);
  const int64_t length = labels.size(1);
  if (length > 1) shifted.slice(1, 1).copy_(labels.slice(1, 0, length - 1));
  if (length > 0) shifted.select(1, 0).fill_(decoder_start_token_id);
  return shifted.masked_fill_(shifted == -100, pad_token_id);
}

}  // namespace ctrainer::generation
