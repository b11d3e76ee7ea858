#include <ctrainer/models/fused_cpu_attention.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

#include <ATen/ThreadLocalState.h>
#include <ATen/autocast_mode.h>
#include <torch/autograd.h>

#include <ctrainer/core/parallel_for.h>
#include <ctrainer/models/attention_rows.h>
#include <ctrainer/models/dropout_mask.h>
#include <ctrainer/models/linear_kernel.h>

namespace ctrainer {
namespace {

constexpr int64_t kCausalRowGrain = 32;  // rows per parallel task of the causal fill

/// The masks of one call, broadcast to [B, H, L, S] (views: nothing is copied per head).
struct ScoreMasks {
  at::Tensor blocked;   ///< bool, true where a boolean mask blocks the score
  at::Tensor additive;  ///< fp32, added to the scores
  bool causal = false;
};

/// Rows [first, first + count) of one head and the key columns they can see: with a causal mask
/// (row i sees columns 0..i, as the unfused path's triu fill) the columns from first + count on
/// would only get -inf scores, zero probabilities and zero gradients, so a block leaves them out.
struct RowBlock {
  int64_t first = 0, count = 0, visible_cols = 0;
};

/// The row blocks of a head of `rows` × `cols` scores, the last (the one that sees the most
/// columns) first: one block unless the mask is causal alone. With a boolean mask as well, a row
/// whose visible scores are all blocked attends uniformly to every blocked score of the row,
/// the future's included (the unfused path fills the future first, then the blocked scores at
/// the lowest float over it), so such rows need all their columns.
std::vector<RowBlock> row_blocks(int64_t rows, int64_t cols, const ScoreMasks& masks) {
  if (!masks.causal || masks.blocked.defined()) return {{0, rows, cols}};
  std::vector<RowBlock> blocks;
  for (int64_t first = 0; first < rows; first += kCausalRowsPerBlock) {
    const int64_t count = std::min(kCausalRowsPerBlock, rows - first);
    blocks.push_back({first, count, std::min(cols, first + count)});
  }
  std::reverse(blocks.begin(), blocks.end());
  return blocks;
}

/// Head (b, h)'s part of a [B, H, L, S] mask that `block` computes.
at::Tensor mask_block(const at::Tensor& mask, int64_t b, int64_t h, const RowBlock& block) {
  return mask.select(0, b)
      .select(0, h)
      .narrow(0, block.first, block.count)
      .narrow(1, 0, block.visible_cols);
}

/// Block `block` of head (b, h)'s scores: (q · scale) kᵀ over its rows and visible columns, the
/// causal future at -inf, then the masks as the unfused path applies them (blocked at the lowest
/// float: a row blocked entirely attends uniformly, as transformers' eager attention).
at::Tensor block_scores(const at::Tensor& scaled_q, const at::Tensor& k, const ScoreMasks& masks,
                        int64_t b, int64_t h, const RowBlock& block) {
  at::Tensor scores = ctrainer::linear(scaled_q.narrow(0, block.first, block.count),
                                       k.narrow(0, 0, block.visible_cols));
  if (masks.causal) {
    const int64_t cols = block.visible_cols;
    float* s = scores.mutable_data_ptr<float>();
    ctrainer::parallel_for(0, block.count, kCausalRowGrain, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        const int64_t row = block.first + i;
        if (row + 1 < cols)
          std::fill(s + i * cols + row + 1, s + (i + 1) * cols,
                    -std::numeric_limits<float>::infinity());
      }
    });
  }
  if (masks.blocked.defined())
    scores.masked_fill_(mask_block(masks.blocked, b, h, block),
                        std::numeric_limits<float>::lowest());
  if (masks.additive.defined()) scores.add_(mask_block(masks.additive, b, h, block));
  return scores;
}

/// A fresh [B, H, rows, cols] tensor laid out as [B, rows, H, cols] (what the heads' merge reads
/// as a view), not a view itself.
at::Tensor heads_last_layout(int64_t batch, int64_t heads, int64_t rows, int64_t cols) {
  return at::empty_strided({batch, heads, rows, cols}, {rows * heads * cols, cols, heads * cols, 1},
                           at::TensorOptions().dtype(at::kFloat));
}

/// A head's key or value gradient summed over its row blocks. The blocks' products come out as
/// [D, visible columns]: they add up in that layout, where both operands are read in order (into
/// the heads-last output each add read one of them across rows, 2-3x slower), and the sum goes
/// into the output once.
class BlockGradientSum {
 public:
  /// Adds a block's [D, visible] product; the first block must see the most columns (blocks
  /// come largest first, see row_blocks()), and its product becomes the sum without a copy.
  void add(at::Tensor part) {
    if (!sum_.defined()) {
      sum_ = std::move(part);
      return;
    }
    sum_.narrow(1, 0, part.size(1)).add_(part);
  }
  /// Writes the sum into `head_grad` ([S, D]), zeros in the rows of keys no block saw.
  void write_to(at::Tensor head_grad) const {
    const int64_t seen = sum_.size(1), keys = head_grad.size(0);
    head_grad.narrow(0, 0, seen).copy_(sum_.t());
    if (seen < keys) head_grad.narrow(0, seen, keys - seen).zero_();
  }

 private:
  at::Tensor sum_;
};

/// Calls body(b, h) for every head of a [batch, heads, ...] input, the heads spread over the
/// intra-op threads, each head on one thread. A head's products are small (one side is the head
/// width, 64 in GPT-2): oneDNN splitting each over two threads ran them at ~140 GFLOP/s on the
/// 2-core Zen 4 host, where whole heads per thread leave no synchronisation inside a head (its
/// softmax, dropout and products run serially there, as ctrainer::parallel_for nests). Heads
/// write disjoint slices of the outputs, and a head's result does not depend on the thread it
/// ran on. The calling thread's ATen state (grad mode off inside an autograd Function's forward
/// and backward, the dispatch keys) goes with each head to its thread.
void for_each_head(int64_t batch, int64_t heads,
                   const std::function<void(int64_t, int64_t)>& body) {
  const at::ThreadLocalState caller_state;
  ctrainer::parallel_for(0, batch * heads, 1, [&](int64_t begin, int64_t end) {
    const at::ThreadLocalStateGuard state_guard(caller_state);
    for (int64_t head = begin; head < end; ++head) body(head / heads, head % heads);
  });
}

struct FusedAttentionFunction : torch::autograd::Function<FusedAttentionFunction> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& q,
                            const at::Tensor& k_in, const at::Tensor& v_in, const ScoreMasks& masks,
                            double dropout_p, double scale) {
    const int64_t batch = q.size(0), heads = q.size(1), rows = q.size(2), cols = k_in.size(2);
    const int64_t row_bytes = attention_rows::kept_bytes_per_row(cols);
    // oneDNN runs a weight whose rows are strided (GPT-2's heads are views into the fused qkv
    // projection) on its reference kernel, ~100x slower: the heads of k and v are made dense.
    const at::Tensor k = k_in.contiguous(), v = v_in.contiguous();
    const DropoutMask dropout_mask = DropoutMask::draw(dropout_p);
    const float keep_scale = static_cast<float>(1.0 / (1.0 - dropout_p));
    // Unwritten bits (a causal block's unseen columns) are never read.
    at::Tensor kept_bits =
        at::empty({batch * heads, rows, row_bytes}, q.options().dtype(at::kByte));
    at::Tensor out = heads_last_layout(batch, heads, rows, v.size(3));
    const std::vector<RowBlock> blocks = row_blocks(rows, cols, masks);
    for_each_head(batch, heads, [&](int64_t b, int64_t h) {
      const int64_t head = b * heads + h;
      const at::Tensor scaled_q = q[b][h] * scale;
      uint8_t* head_bits = kept_bits[head].mutable_data_ptr<uint8_t>();
      for (const RowBlock& block : blocks) {
        at::Tensor probs =
            at::_softmax(block_scores(scaled_q, k[b][h], masks, b, h, block), -1, false);
        // Drop in place, and keep one bit per element for the backward. Element indices are
        // those of the contiguous [B, H, L, S] probabilities, as dropout() would number them.
        attention_rows::drop(probs.mutable_data_ptr<float>(), head_bits + block.first * row_bytes,
                             block.count, block.visible_cols, cols, dropout_mask,
                             (head * rows + block.first) * cols, keep_scale);
        out[b][h]
            .narrow(0, block.first, block.count)
            .copy_(ctrainer::linear(probs, v[b][h].narrow(0, 0, block.visible_cols).t()));
      }
    });
    ctx->save_for_backward({q, k_in, v_in, kept_bits});
    if (masks.blocked.defined()) ctx->saved_data["blocked"] = masks.blocked;
    if (masks.additive.defined()) ctx->saved_data["additive"] = masks.additive;
    ctx->saved_data["causal"] = masks.causal;
    ctx->saved_data["keep_scale"] = static_cast<double>(keep_scale);
    ctx->saved_data["scale"] = scale;
    return out;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor& q = saved[0];
    const at::Tensor k = saved[1].contiguous(), v = saved[2].contiguous();  // as in the forward
    const at::Tensor& kept_bits = saved[3];
    ScoreMasks masks;
    if (ctx->saved_data.count("blocked")) masks.blocked = ctx->saved_data["blocked"].toTensor();
    if (ctx->saved_data.count("additive")) masks.additive = ctx->saved_data["additive"].toTensor();
    masks.causal = ctx->saved_data["causal"].toBool();
    const float keep_scale = static_cast<float>(ctx->saved_data["keep_scale"].toDouble());
    const double scale = ctx->saved_data["scale"].toDouble();
    const at::Tensor& grad_out = grads[0];
    const int64_t batch = q.size(0), heads = q.size(1), rows = q.size(2), cols = k.size(2);
    const int64_t row_bytes = attention_rows::kept_bytes_per_row(cols);
    at::Tensor grad_q = heads_last_layout(batch, heads, rows, q.size(3));
    at::Tensor grad_k = heads_last_layout(batch, heads, cols, k.size(3));
    at::Tensor grad_v = heads_last_layout(batch, heads, cols, v.size(3));
    const std::vector<RowBlock> blocks = row_blocks(rows, cols, masks);
    const bool needs_grad_q = ctx->needs_input_grad(0), needs_grad_k = ctx->needs_input_grad(1),
               needs_grad_v = ctx->needs_input_grad(2);
    for_each_head(batch, heads, [&](int64_t b, int64_t h) {
      const at::Tensor scaled_q = q[b][h] * scale;
      const at::Tensor kh = k[b][h], vh = v[b][h];
      // The heads' gradient is strided ([B, L, H, D] read as [B, H, L, D]): one dense copy per
      // head, instead of oneDNN copying each block's rows (dy V) and columns (dyᵀ P) apart.
      const at::Tensor head_grad = grad_out[b][h].contiguous();
      const uint8_t* head_bits = kept_bits[b * heads + h].const_data_ptr<uint8_t>();
      BlockGradientSum head_grad_k, head_grad_v;
      for (const RowBlock& block : blocks) {
        const at::Tensor block_q = scaled_q.narrow(0, block.first, block.count);
        const at::Tensor block_grad = head_grad.narrow(0, block.first, block.count);
        const at::Tensor seen_k = kh.narrow(0, 0, block.visible_cols);
        // The forward's probabilities again: the same products and softmax of the same inputs.
        at::Tensor dropped = block_scores(scaled_q, kh, masks, b, h, block);
        const at::Tensor probs = at::_softmax(dropped, -1, false);
        at::Tensor grad_scores = ctrainer::linear(
            block_grad, vh.narrow(0, 0, block.visible_cols));  // d(dropped), then d(scores)
        // The scores' buffer, no longer needed, receives the dropped probabilities.
        attention_rows::dropout_softmax_backward(
            probs.const_data_ptr<float>(), head_bits + block.first * row_bytes,
            dropped.mutable_data_ptr<float>(), grad_scores.mutable_data_ptr<float>(), block.count,
            block.visible_cols, cols, keep_scale);
        // Blocked scores were overwritten (masked_fill): no gradient reaches q or k through
        // them, which matters in a row blocked entirely (its uniform probabilities have a
        // gradient).
        if (masks.blocked.defined())
          grad_scores.masked_fill_(mask_block(masks.blocked, b, h, block), 0.0f);
        if (needs_grad_v) head_grad_v.add(ctrainer::linear(block_grad.t(), dropped.t()));
        if (needs_grad_q)
          grad_q[b][h]
              .narrow(0, block.first, block.count)
              .copy_(ctrainer::linear(grad_scores, seen_k.t()).mul_(scale));
        if (needs_grad_k) head_grad_k.add(ctrainer::linear(block_q.t(), grad_scores.t()));
      }
      if (needs_grad_k) head_grad_k.write_to(grad_k[b][h]);
      if (needs_grad_v) head_grad_v.write_to(grad_v[b][h]);
    });
    return {ctx->needs_input_grad(0) ? grad_q : at::Tensor(),
            ctx->needs_input_grad(1) ? grad_k : at::Tensor(),
            ctx->needs_input_grad(2) ? grad_v : at::Tensor(),
            at::Tensor(),
            at::Tensor(),
            at::Tensor()};
  }
};

bool is_fp32_cpu_4d(const at::Tensor& t) {
  return t.defined() && t.device().is_cpu() && t.scalar_type() == at::kFloat &&
         t.layout() == at::kStrided && t.dim() == 4 && t.numel() > 0;
}

}  // namespace

bool fused_cpu_attention_applies(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                 const at::Tensor& mask) {
  if (!is_fp32_cpu_4d(q) || !is_fp32_cpu_4d(k) || !is_fp32_cpu_4d(v)) return false;
  for (int dim : {0, 1})
    if (k.size(dim) != q.size(dim) || v.size(dim) != q.size(dim)) return false;
  if (k.size(2) != v.size(2) || k.size(3) != q.size(3)) return false;
  if (at::autocast::is_autocast_enabled(at::kCPU) ||
      linear_kernel_for(q[0][0], k[0][0]) != LinearKernel::kOneDnn)
    return false;
  if (!mask.defined()) return true;
  if (mask.requires_grad() || !mask.device().is_cpu() || mask.layout() != at::kStrided ||
      mask.dim() > 4 || (mask.scalar_type() != at::kBool && mask.scalar_type() != at::kFloat))
    return false;
  const int64_t target[4] = {q.size(0), q.size(1), q.size(2), k.size(2)};
  for (int64_t i = 1; i <= mask.dim(); ++i) {
    const int64_t size = mask.size(-i);
    if (size != 1 && size != target[4 - i]) return false;
  }
  return true;
}

at::Tensor fused_cpu_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                               const at::Tensor& mask, double dropout_p, bool is_causal,
                               double scale) {
  TORCH_CHECK(fused_cpu_attention_applies(q, k, v, mask),
              "fused_cpu_attention: inputs it does not serve (see fused_cpu_attention_applies)");
  TORCH_CHECK(dropout_p >= 0.0 && dropout_p < 1.0,
              "fused_cpu_attention: dropout probability must be in [0, 1), got ", dropout_p);
  ScoreMasks masks;
  masks.causal = is_causal;
  const std::vector<int64_t> target = {q.size(0), q.size(1), q.size(2), k.size(2)};
  if (mask.defined()) {
    if (mask.scalar_type() == at::kBool)
      masks.blocked = mask.logical_not().expand(target);
    else
      masks.additive = mask.expand(target);
  }
  return FusedAttentionFunction::apply(q, k, v, masks, dropout_p, scale);
}

}  // namespace ctrainer
