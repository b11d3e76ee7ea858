#pragma once
/// \file Strategy: everything that depends on how many processes train the model. The Trainer
/// never talks to devices or process groups directly; it calls its Strategy.
#include <memory>
#include <vector>

#include <ATen/ATen.h>

namespace torch::optim {
class Optimizer;
}

namespace ctrainer {

class Model;

/// How gradients are produced, synchronised, clipped and applied.
class Strategy {
 public:
  virtual ~Strategy() = default;
  /// Moves the model to `device` (and, for distributed strategies, wraps/broadcasts it).
  virtual void setup(Model& model, const c10::Device& device) = 0;
  /// Backward of a (scaled) micro-batch loss. `sync` is false inside an accumulation window.
  virtual void backward(const at::Tensor& loss, bool sync) = 0;
  /// Clips the global L2 gradient norm to `max_norm` (no clipping when <= 0) and returns the
  /// norm before clipping as a device tensor (no host synchronisation).
  virtual at::Tensor clip_grad_norm(Model& model, double max_norm) = 0;
  virtual void optimizer_step(torch::optim::Optimizer& optimizer) = 0;
  virtual void zero_grad(Model& model) = 0;
  /// Mean of a scalar over all processes (the logged training loss).
  virtual at::Tensor mean_across_processes(const at::Tensor& value) = 0;
  virtual int64_t world_size() const = 0;
};

/// One process on one device.
class SingleDeviceStrategy : public Strategy {
 public:
  void setup(Model& model, const c10::Device& device) override;
  void backward(const at::Tensor& loss, bool sync) override;
  at::Tensor clip_grad_norm(Model& model, double max_norm) override;
  void optimizer_step(torch::optim::Optimizer& optimizer) override;
  void zero_grad(Model& model) override;
  at::Tensor mean_across_processes(const at::Tensor& value) override { return value; }
  int64_t world_size() const override { return 1; }
};

}  // namespace ctrainer
