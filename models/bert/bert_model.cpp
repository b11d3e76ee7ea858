#include <ctrainer/models/bert/bert_model.h>

#include <limits>
#include <set>

#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>
#include <torch/nn/modules/normalization.h>

#include <ctrainer/core/errors.h>

namespace ctrainer {
namespace {

double lowest_finite(at::ScalarType dtype) {
  switch (dtype) {
    case at::kDouble:
      return std::numeric_limits<double>::lowest();
    case at::kFloat:
      return std::numeric_limits<float>::lowest();
    case at::kHalf:
      return static_cast<double>(std::numeric_limits<c10::Half>::lowest());
    case at::kBFloat16:
      return static_cast<double>(std::numeric_limits<c10::BFloat16>::lowest());
    default:
      throw ArgumentError("attention masks need a floating-point dtype");
  }
}

}  // namespace

at::Tensor extended_attention_mask(const at::Tensor& mask, at::ScalarType dtype) {
  if (!mask.defined()) return {};
  if (mask.dim() != 2)
    throw ArgumentError("attention_mask must be [batch, sequence], got " +
                        std::to_string(mask.dim()) + " dimensions");
  at::Tensor m = mask.unsqueeze(1).unsqueeze(2).to(dtype);
  return (1.0 - m) * lowest_finite(dtype);
}

void init_bert_weights(torch::nn::Module& module, double std) {
  torch::NoGradGuard no_grad;
  auto init = [std](torch::nn::Module& m) {
    if (auto* linear = dynamic_cast<torch::nn::LinearImpl*>(&m)) {
      linear->weight.normal_(0.0, std);
      if (linear->bias.defined()) linear->bias.zero_();
    } else if (auto* embedding = dynamic_cast<torch::nn::EmbeddingImpl*>(&m)) {
      embedding->weight.normal_(0.0, std);
      if (auto pad = embedding->options.padding_idx()) embedding->weight[*pad].zero_();
    } else if (auto* norm = dynamic_cast<torch::nn::LayerNormImpl*>(&m)) {
      norm->weight.fill_(1.0);
      norm->bias.zero_();
    }
  };
  // modules(include_self=true) needs the module in a shared_ptr, which a constructor's `*this`
  // is not yet: visit the module itself by reference.
  init(module);
  for (const auto& child : module.modules(/*include_self=*/false)) init(*child);
}

void init_missing_bert_weights(torch::nn::Module& model, const std::vector<std::string>& keys,
                               double std) {
  torch::NoGradGuard no_grad;
  const std::set<std::string> missing(keys.begin(), keys.end());
  for (const auto& item : model.named_modules(/*name_prefix=*/"", /*include_self=*/true)) {
    const std::string dot = item.key().empty() ? "" : item.key() + ".";
    const std::shared_ptr<torch::nn::Module>& module = item.value();
    const auto lacks = [&](const char* name) { return missing.count(dot + name) > 0; };
    if (auto* linear = dynamic_cast<torch::nn::LinearImpl*>(module.get())) {
      if (lacks("weight")) linear->weight.normal_(0.0, std);
      if (linear->bias.defined() && lacks("bias")) linear->bias.zero_();
    } else if (auto* embedding = dynamic_cast<torch::nn::EmbeddingImpl*>(module.get())) {
      if (!lacks("weight")) continue;
      embedding->weight.normal_(0.0, std);
      if (auto pad = embedding->options.padding_idx()) embedding->weight[*pad].zero_();
    } else if (auto* norm = dynamic_cast<torch::nn::LayerNormImpl*>(module.get())) {
      if (lacks("weight")) norm->weight.fill_(1.0);
      if (lacks("bias")) norm->bias.zero_();
    }
  }
}

BertPoolerImpl::BertPoolerImpl(const BertConfig& c) {
  dense = register_module("dense", AdaptableLinear(c.hidden_size, c.hidden_size));
}

at::Tensor BertPoolerImpl::forward(const at::Tensor& hidden) {
  return at::tanh(dense->forward(hidden.select(1, 0)));
}

BertModelImpl::BertModelImpl(const BertConfig& config, bool add_pooling_layer,
                             bool initialise_weights)
    : config_(config) {
  config_.validate();
  embeddings = register_module("embeddings", BertEmbeddings(config_));
  encoder = register_module("encoder", BertEncoder(config_));
  if (add_pooling_layer) pooler = register_module("pooler", BertPooler(config_));
  if (initialise_weights) init_bert_weights(*this, config_.initializer_range);
}

at::Tensor BertModelImpl::encode(const at::Tensor& input_ids, const at::Tensor& attention_mask,
                                 const at::Tensor& token_type_ids,
                                 int64_t last_layer_query_length) {
  if (attention_mask.defined() && attention_mask.sizes() != input_ids.sizes())
    throw ArgumentError("attention_mask must have the shape of input_ids");
  at::Tensor hidden = embeddings->forward(input_ids, token_type_ids);
  at::Tensor mask = extended_attention_mask(attention_mask, hidden.scalar_type());
  return encoder->forward(hidden, mask, last_layer_query_length);
}

BertModelOutput BertModelImpl::forward(const at::Tensor& input_ids,
                                       const at::Tensor& attention_mask,
                                       const at::Tensor& token_type_ids) {
  BertModelOutput out;
  out.last_hidden_state = encode(input_ids, attention_mask, token_type_ids, -1);
  if (pooler) out.pooler_output = pooler->forward(out.last_hidden_state);
  return out;
}

at::Tensor BertModelImpl::pooled_output(const at::Tensor& input_ids,
                                        const at::Tensor& attention_mask,
                                        const at::Tensor& token_type_ids) {
  if (!pooler)
    throw ArgumentError("pooled_output needs the pooling layer (BertModel with add_pooling_layer)");
  return pooler->forward(encode(input_ids, attention_mask, token_type_ids, 1));
}

}  // namespace ctrainer
