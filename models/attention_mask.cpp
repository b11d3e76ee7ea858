#include <ctrainer/models/attention_mask.h>

namespace ctrainer {

at::Tensor causal_padding_mask(const at::Tensor& attention_mask, int64_t length) {
  if (!attention_mask.defined() || attention_mask.all().item<bool>()) return {};
  const at::Tensor causal =
      at::ones({length, length}, attention_mask.options().dtype(at::kBool)).tril();
  const at::Tensor keys = attention_mask.to(at::kBool).view({attention_mask.size(0), 1, 1, length});
  return causal.view({1, 1, length, length}).logical_and(keys);
}

}  // namespace ctrainer
