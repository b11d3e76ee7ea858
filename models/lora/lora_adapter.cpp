#include <ctrainer/models/lora/lora_adapter.h>

#include <cmath>

#include <torch/nn/init.h>

namespace ctrainer {

LoraAdapter::LoraAdapter(torch::nn::Module& host, const AdaptableProjection& projection,
                         std::shared_ptr<const LoraConfig> config)
    : config_(std::move(config)), scaling_(config_->scaling()) {
  const int64_t r = config_->r;
  lora_A = host.register_module(
      "lora_A",
      torch::nn::Linear(torch::nn::LinearOptions(projection.in_features(), r).bias(false)));
  lora_B = host.register_module(
      "lora_B",
      torch::nn::Linear(torch::nn::LinearOptions(r, projection.out_features()).bias(false)));
  // A sub-module of the projection too, so that train() / eval() reach it (no tensors to save).
  dropout_ = host.register_module("lora_dropout", Dropout(config_->lora_dropout));
  // PEFT's reset_lora_parameters: B starts at zero so that the adapted model starts as the base.
  torch::NoGradGuard no_grad;
  if (config_->init_lora_weights == "true") {
    torch::nn::init::kaiming_uniform_(lora_A->weight, std::sqrt(5.0));
    lora_B->weight.zero_();
  } else if (config_->init_lora_weights == "gaussian") {
    torch::nn::init::normal_(lora_A->weight, 0.0, 1.0 / static_cast<double>(r));
    lora_B->weight.zero_();
  }
  // "false": both keep their Linear initialisation, as PEFT leaves them.
}

at::Tensor LoraAdapter::forward(const at::Tensor& input, at::Tensor base_output) {
  // PEFT: result + lora_B(lora_A(dropout(x))) * scaling, with x in the adapter's dtype.
  const at::Tensor x = input.to(lora_A->weight.scalar_type());
  return base_output + lora_B->forward(lora_A->forward(dropout_->forward(x))) * scaling_;
}

at::Tensor LoraAdapter::delta_weight(bool fan_in_fan_out) const {
  at::Tensor delta = at::matmul(lora_B->weight, lora_A->weight) * scaling_;  // [out, in]
  return fan_in_fan_out ? delta.t() : delta;
}

}  // namespace ctrainer
