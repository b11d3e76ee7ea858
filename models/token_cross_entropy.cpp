#include <ctrainer/models/token_cross_entropy.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include <torch/autograd.h>

namespace ctrainer {
namespace {

constexpr int64_t kChunkBytes = int64_t{8} << 20;  // a chunk and its softmax stay in the L3 cache

int64_t rows_per_chunk(int64_t requested, int64_t vocab) {
  if (requested > 0) return requested;
  return std::max<int64_t>(1, kChunkBytes / (vocab * static_cast<int64_t>(sizeof(float))));
}

/// The targets as the kernel reads them: `valid` (bool, not ignored) and `safe` (int64, the
/// target where valid and 0 elsewhere, so that gathers and scatters stay in range).
struct Targets {
  at::Tensor valid, safe;
};

Targets checked_targets(const at::Tensor& targets, int64_t vocab, int64_t ignore_index) {
  const at::Tensor indices = targets.to(at::kLong);
  const at::Tensor valid = indices.ne(ignore_index);
  const at::Tensor out_of_range = valid.logical_and(indices.lt(0).logical_or(indices.ge(vocab)));
  if (out_of_range.any().item<bool>()) {
    const int64_t bad = indices.masked_select(out_of_range)[0].item<int64_t>();
    throw std::invalid_argument("cross-entropy: target " + std::to_string(bad) +
                                " is out of bounds for " + std::to_string(vocab) +
                                " classes (labels must be token ids below the vocabulary size, "
                                "or " +
                                std::to_string(ignore_index) + " to ignore a position)");
  }
  return {valid, indices.masked_fill(valid.logical_not(), 0)};
}

struct ChunkedCrossEntropyFunction : torch::autograd::Function<ChunkedCrossEntropyFunction> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& logits,
                            const at::Tensor& valid, const at::Tensor& safe, bool mean,
                            int64_t chunk_rows) {
    const int64_t rows = logits.size(0), vocab = logits.size(1);
    const int64_t chunk = std::min(rows, rows_per_chunk(chunk_rows, vocab));
    // -log p(target) of every row: each chunk's log-probabilities go to one reused buffer
    // (at::_log_softmax's own kernel, row by row the values the unchunked call gives).
    at::Tensor row_losses = at::empty({rows}, logits.options());
    at::Tensor log_probs = at::empty({chunk, vocab}, logits.options());
    for (int64_t first = 0; first < rows; first += chunk) {
      const int64_t count = std::min(chunk, rows - first);
      at::Tensor chunk_log_probs = log_probs.narrow(0, 0, count);
      at::_log_softmax_out(chunk_log_probs, logits.narrow(0, first, count), 1, false);
      at::Tensor chunk_losses = row_losses.narrow(0, first, count);
      at::neg_out(chunk_losses,
                  chunk_log_probs.gather(1, safe.narrow(0, first, count).unsqueeze(1)).squeeze(1));
    }
    // An ignored row adds nothing, even when its logits are not finite (nll_loss skips it).
    const at::Tensor total = at::where(valid, row_losses, 0.0f).sum();
    ctx->save_for_backward({logits, valid, safe});
    ctx->saved_data["mean"] = mean;
    ctx->saved_data["chunk"] = chunk;
    if (!mean) return total;
    const int64_t count = valid.sum().item<int64_t>();
    ctx->saved_data["count"] = count;
    return total / static_cast<double>(count);  // 0 / 0 = NaN with nothing to average
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor &logits = saved[0], &valid = saved[1], &safe = saved[2];
    const int64_t rows = logits.size(0), chunk = ctx->saved_data["chunk"].toInt();
    at::Tensor row_scale = grads[0].to(at::kFloat);
    if (ctx->saved_data["mean"].toBool())
      row_scale = row_scale / static_cast<double>(ctx->saved_data["count"].toInt());
    // d loss / d logits = (softmax - one_hot(target)) · scale for a target, 0 for an ignored row.
    row_scale = at::where(valid, row_scale, 0.0f).unsqueeze(1);
    const at::Tensor minus_one = valid.to(at::kFloat).neg_().unsqueeze(1);
    at::Tensor grad = at::empty_like(logits, at::MemoryFormat::Contiguous);
    for (int64_t first = 0; first < rows; first += chunk) {
      const int64_t count = std::min(chunk, rows - first);
      at::Tensor chunk_grad = grad.narrow(0, first, count);
      at::_softmax_out(chunk_grad, logits.narrow(0, first, count), 1, false);
      chunk_grad.scatter_add_(1, safe.narrow(0, first, count).unsqueeze(1),
                              minus_one.narrow(0, first, count));
      chunk_grad.mul_(row_scale.narrow(0, first, count));
    }
    return {grad, at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

bool takes_chunked_kernel(const at::Tensor& logits) {
  return logits.device().is_cpu() && logits.scalar_type() == at::kFloat &&
         logits.layout() == at::kStrided && logits.dim() == 2 && logits.size(0) > 0 &&
         logits.size(1) > 0;
}

}  // namespace

at::Tensor token_cross_entropy(const at::Tensor& logits, const at::Tensor& targets,
                               at::Reduction::Reduction reduction, int64_t ignore_index,
                               int64_t chunk_rows) {
  TORCH_CHECK(reduction == at::Reduction::Sum || reduction == at::Reduction::Mean,
              "token_cross_entropy: reduction must be Sum or Mean");
  TORCH_CHECK(logits.dim() == 2 && targets.dim() == 1 && targets.size(0) == logits.size(0),
              "token_cross_entropy: logits [N, V] and targets [N] expected, got ", logits.sizes(),
              " and ", targets.sizes());
  if (!takes_chunked_kernel(logits))
    return at::cross_entropy_loss(logits, targets.to(at::kLong), /*weight=*/{}, reduction,
                                  ignore_index);
  const Targets checked = checked_targets(targets, logits.size(1), ignore_index);
  return ChunkedCrossEntropyFunction::apply(logits.contiguous(), checked.valid, checked.safe,
                                            reduction == at::Reduction::Mean, chunk_rows);
}

}  // namespace ctrainer
