#include <ctrainer/models/attention.h>

#include <cmath>
#include <limits>

#include <ATen/ops/scaled_dot_product_attention.h>

#include <ctrainer/models/dropout.h>
#include <ctrainer/models/fused_cpu_attention.h>

namespace ctrainer {

at::Tensor attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                     const at::Tensor& mask, double dropout_p, bool training, bool is_causal,
                     std::optional<double> scale) {
  if (!(training && dropout_p > 0.0 && q.device().is_cpu())) {
    // Fused kernels (flash / memory-efficient) where torch has one for these inputs.
    std::optional<at::Tensor> attn_mask;
    if (mask.defined()) attn_mask = mask;
    return at::scaled_dot_product_attention(q, k, v, attn_mask, training ? dropout_p : 0.0,
                                            is_causal, scale);
  }
  const double factor = scale.value_or(1.0 / std::sqrt(static_cast<double>(q.size(-1))));
  if (dropout_p < 1.0 && q.size(-2) * k.size(-2) >= kFusedAttentionMinScoresPerHead &&
      fused_cpu_attention_applies(q, k, v, mask))
    return fused_cpu_attention(q, k, v, mask, dropout_p, is_causal, factor);
  return unfused_attention_with_dropout(q, k, v, mask, dropout_p, is_causal, factor);
}

at::Tensor unfused_attention_with_dropout(const at::Tensor& q, const at::Tensor& k,
                                          const at::Tensor& v, const at::Tensor& mask,
                                          double dropout_p, bool is_causal, double factor) {
  at::Tensor scores = at::matmul(q, k.transpose(-2, -1)).mul_(factor);
  if (is_causal) {
    const at::Tensor future =
        at::ones({q.size(-2), k.size(-2)}, q.options().dtype(at::kBool)).triu_(1);
    scores.masked_fill_(future, -std::numeric_limits<double>::infinity());
  }
  if (mask.defined()) {
    if (mask.scalar_type() == at::kBool)
      scores.masked_fill_(mask.logical_not(), std::numeric_limits<float>::lowest());
    else
      scores.add_(mask);
  }
  return at::matmul(ctrainer::dropout(at::softmax(scores, -1), dropout_p, true), v);
}

}  // namespace ctrainer
