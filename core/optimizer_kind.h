#pragma once
/// \file The optimizers whose state ctrainer checkpoints (torch::optim's AdamW, Adam and SGD) and
/// their per-parameter state as named buffers: the one table of kinds that the plain and the
/// sharded checkpoint codecs and the sharded strategy's memory count share.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include <ATen/core/Tensor.h>

namespace torch::optim {
class Optimizer;
class OptimizerOptions;
class OptimizerParamState;
}  // namespace torch::optim

namespace ctrainer {

enum class OptimizerKind { kAdamW, kAdam, kSGD };

/// "AdamW", "Adam" or "SGD" (the names checkpoints record).
const char* optimizer_kind_name(OptimizerKind kind);

/// The kind of `optimizer` by its class, or nothing for another optimizer.
std::optional<OptimizerKind> optimizer_kind(const torch::optim::Optimizer& optimizer);
/// The kind of a param group's options, or nothing for another optimizer's.
std::optional<OptimizerKind> optimizer_kind(const torch::optim::OptimizerOptions& options);

/// One parameter's optimizer state: its buffers by HF / torch name ("exp_avg", "exp_avg_sq",
/// "max_exp_avg_sq" for Adam(W) with amsgrad, "momentum_buffer" for SGD; undefined ones left out)
/// and Adam's step (nothing for SGD).
struct ParamStateBuffers {
  std::map<std::string, at::Tensor> buffers;
  std::optional<int64_t> step;
};

/// The buffers of `state`, which must be `kind`'s state; nothing when it is another kind's.
std::optional<ParamStateBuffers> param_state_buffers(const torch::optim::OptimizerParamState& state,
                                                     OptimizerKind kind);
/// The buffers of `state` whatever its kind (empty for a state of another optimizer).
ParamStateBuffers param_state_buffers(const torch::optim::OptimizerParamState& state);

/// A `kind` state made of `saved` (which must hold the buffers that kind requires:
/// exp_avg and exp_avg_sq, or momentum_buffer; std::out_of_range otherwise).
std::unique_ptr<torch::optim::OptimizerParamState> make_param_state(OptimizerKind kind,
                                                                    const ParamStateBuffers& saved);

}  // namespace ctrainer
