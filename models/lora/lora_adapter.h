#pragma once
/// \file One projection's LoRA adapter: PEFT's lora.Linear, with the base layer left where the
/// model holds it. y = base(x) + B(A(dropout(x))) * scaling.
#include <memory>

#include <ATen/ATen.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>

#include <ctrainer/models/adaptable_linear.h>
#include <ctrainer/models/dropout.h>
#include <ctrainer/models/lora/lora_config.h>

namespace ctrainer {

/// The adapter of one AdaptableProjection. Its A, B and dropout are registered as the
/// projection's sub-modules "lora_A", "lora_B" and "lora_dropout", so that train() / eval()
/// reach them and their parameters are named
/// "<module>.lora_A.weight" and "<module>.lora_B.weight": PEFT's keys in adapter_model.safetensors.
class LoraAdapter : public ProjectionAdapter {
 public:
  /// Creates A [r, in] and B [out, r] as `config` says (init_lora_weights), registers them on
  /// `host` (the projection's module) and draws from the default CPU generator as PEFT does:
  /// A's and B's default Linear initialisation, then A again (Kaiming-uniform or gaussian).
  LoraAdapter(torch::nn::Module& host, const AdaptableProjection& projection,
              std::shared_ptr<const LoraConfig> config);

  at::Tensor forward(const at::Tensor& input, at::Tensor base_output) override;

  /// scaling * B A laid out as the projection stores its weight ([in, out] when
  /// `fan_in_fan_out`), PEFT's get_delta_weight.
  at::Tensor delta_weight(bool fan_in_fan_out) const;

  const LoraConfig& config() const { return *config_; }
  std::shared_ptr<const LoraConfig> shared_config() const { return config_; }

  torch::nn::Linear lora_A{nullptr}, lora_B{nullptr};

 private:
  std::shared_ptr<const LoraConfig> config_;
  Dropout dropout_{nullptr};
  double scaling_;
};

}  // namespace ctrainer
