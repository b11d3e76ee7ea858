#pragma once
/// \file Projections that an adapter (LoRA) can attach to: every Linear of the model families is
/// an AdaptableLinear, and GPT-2's Conv1D is an AdaptableProjection too, so that PEFT-style
/// adapters wrap any of them without the families knowing adapters exist.
#include <cstdint>
#include <memory>
#include <utility>

#include <ATen/ATen.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

namespace ctrainer {

/// A side path added to a projection's output (LoRA: dropout, A, B, scaling). It sees the
/// projection's input and its output, and returns the output the model goes on with.
class ProjectionAdapter {
 public:
  virtual ~ProjectionAdapter() = default;
  virtual at::Tensor forward(const at::Tensor& input, at::Tensor base_output) = 0;
};

/// What an adapter needs of the layer it wraps: its shape, its weight (to merge into) and the
/// slot it sits in. A Linear stores its weight [out, in]; GPT-2's Conv1D stores it [in, out]
/// (PEFT's fan_in_fan_out).
class AdaptableProjection {
 public:
  virtual ~AdaptableProjection() = default;

  virtual int64_t in_features() const = 0;
  virtual int64_t out_features() const = 0;
  /// The weight, [out, in] unless fan_in_fan_out().
  virtual at::Tensor& projection_weight() = 0;
  /// Whether projection_weight() is stored [in, out] (HF's Conv1D).
  virtual bool fan_in_fan_out() const = 0;

  /// Attaches `adapter` (nullptr detaches): forward then returns adapter->forward(x, base(x)).
  void set_adapter(std::shared_ptr<ProjectionAdapter> adapter) { adapter_ = std::move(adapter); }
  const std::shared_ptr<ProjectionAdapter>& adapter() const { return adapter_; }

 protected:
  /// The layer's output with the adapter's contribution, if one is attached.
  at::Tensor adapted(const at::Tensor& input, at::Tensor base_output) const {
    return adapter_ ? adapter_->forward(input, std::move(base_output)) : base_output;
  }

 private:
  std::shared_ptr<ProjectionAdapter> adapter_;
};

/// torch::nn::Linear (same options, parameters and initialisation: it is one) whose forward
/// passes through an attached adapter. Code that finds Linears by dynamic_cast to
/// torch::nn::LinearImpl (weight initialisation) still finds it.
class AdaptableLinearImpl : public torch::nn::LinearImpl, public AdaptableProjection {
 public:
  using torch::nn::LinearImpl::LinearImpl;

  at::Tensor forward(const at::Tensor& input);

  int64_t in_features() const override { return options.in_features(); }
  int64_t out_features() const override { return options.out_features(); }
  at::Tensor& projection_weight() override { return weight; }
  bool fan_in_fan_out() const override { return false; }
};
TORCH_MODULE(AdaptableLinear);

}  // namespace ctrainer
