#include <ctrainer/models/model.h>

#include <torch/nn/modules/embedding.h>

namespace ctrainer {

int64_t Model::num_parameters(bool exclude_embeddings) const {
  int64_t total = 0;
  for (const auto& p : parameters()) total += p.numel();
  if (!exclude_embeddings) return total;
  for (const auto& module : modules(/*include_self=*/false))
    if (dynamic_cast<const torch::nn::EmbeddingImpl*>(module.get()) != nullptr)
      for (const auto& p : module->parameters(/*recurse=*/false)) total -= p.numel();
  return total;
}

double Model::floating_point_ops(const Batch& batch) const {
  if (!batch.contains("input_ids")) return 0.0;
  if (!non_embedding_parameters_) non_embedding_parameters_ = num_parameters(true);
  return 6.0 * static_cast<double>(batch.at("input_ids").numel()) *
         static_cast<double>(*non_embedding_parameters_);
}

}  // namespace ctrainer
