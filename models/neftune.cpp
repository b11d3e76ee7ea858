#include <ctrainer/models/neftune.h>

#include <cmath>

namespace ctrainer {

at::Tensor with_neftune_noise(const at::Tensor& embeddings, std::optional<double> alpha,
                              bool training) {
  if (!training || !alpha) return embeddings;
  // transformers: alpha / torch.sqrt(torch.tensor(T * H)), a float32 tensor, then uniform_.
  const float root = std::sqrt(static_cast<float>(embeddings.size(1) * embeddings.size(2)));
  const double magnitude = static_cast<double>(static_cast<float>(*alpha) / root);
  return embeddings + at::zeros_like(embeddings).uniform_(-magnitude, magnitude);
}

}  // namespace ctrainer
