#include <ctrainer/core/optimizer_kind.h>

#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>

namespace ctrainer {

namespace {

template <typename State>
ParamStateBuffers adam_buffers(const State& s) {
  ParamStateBuffers out;
  out.step = s.step();
  if (s.exp_avg().defined()) out.buffers["exp_avg"] = s.exp_avg();
  if (s.exp_avg_sq().defined()) out.buffers["exp_avg_sq"] = s.exp_avg_sq();
  if (s.max_exp_avg_sq().defined()) out.buffers["max_exp_avg_sq"] = s.max_exp_avg_sq();
  return out;
}

template <typename State>
std::unique_ptr<torch::optim::OptimizerParamState> make_adam_state(const ParamStateBuffers& s) {
  auto state = std::make_unique<State>();
  state->step(s.step.value_or(0));
  state->exp_avg(s.buffers.at("exp_avg"));
  state->exp_avg_sq(s.buffers.at("exp_avg_sq"));
  if (auto it = s.buffers.find("max_exp_avg_sq"); it != s.buffers.end())
    state->max_exp_avg_sq(it->second);
  return state;
}

}  // namespace

const char* optimizer_kind_name(OptimizerKind kind) {
  switch (kind) {
    case OptimizerKind::kAdamW:
      return "AdamW";
    case OptimizerKind::kAdam:
      return "Adam";
    case OptimizerKind::kSGD:
      return "SGD";
  }
  return "?";
}

std::optional<OptimizerKind> optimizer_kind(const torch::optim::Optimizer& optimizer) {
  // AdamW first: a class derived from one of these counts as its base.
  if (dynamic_cast<const torch::optim::AdamW*>(&optimizer)) return OptimizerKind::kAdamW;
  if (dynamic_cast<const torch::optim::Adam*>(&optimizer)) return OptimizerKind::kAdam;
  if (dynamic_cast<const torch::optim::SGD*>(&optimizer)) return OptimizerKind::kSGD;
  return std::nullopt;
}

std::optional<OptimizerKind> optimizer_kind(const torch::optim::OptimizerOptions& options) {
  if (dynamic_cast<const torch::optim::AdamWOptions*>(&options)) return OptimizerKind::kAdamW;
  if (dynamic_cast<const torch::optim::AdamOptions*>(&options)) return OptimizerKind::kAdam;
  if (dynamic_cast<const torch::optim::SGDOptions*>(&options)) return OptimizerKind::kSGD;
  return std::nullopt;
}

std::optional<ParamStateBuffers> param_state_buffers(const torch::optim::OptimizerParamState& state,
                                                     OptimizerKind kind) {
  switch (kind) {
    case OptimizerKind::kAdamW:
      if (const auto* s = dynamic_cast<const torch::optim::AdamWParamState*>(&state))
        return adam_buffers(*s);
      break;
    case OptimizerKind::kAdam:
      if (const auto* s = dynamic_cast<const torch::optim::AdamParamState*>(&state))
        return adam_buffers(*s);
      break;
    case OptimizerKind::kSGD:
      if (const auto* s = dynamic_cast<const torch::optim::SGDParamState*>(&state)) {
        ParamStateBuffers out;
        if (s->momentum_buffer().defined()) out.buffers["momentum_buffer"] = s->momentum_buffer();
        return out;
      }
      break;
  }
  return std::nullopt;
}

ParamStateBuffers param_state_buffers(const torch::optim::OptimizerParamState& state) {
  for (OptimizerKind kind : {OptimizerKind::kAdamW, OptimizerKind::kAdam, OptimizerKind::kSGD})
    if (auto buffers = param_state_buffers(state, kind)) return *buffers;
  return {};
}

std::unique_ptr<torch::optim::OptimizerParamState> make_param_state(
    OptimizerKind kind, const ParamStateBuffers& saved) {
  switch (kind) {
    case OptimizerKind::kAdamW:
      return make_adam_state<torch::optim::AdamWParamState>(saved);
    case OptimizerKind::kAdam:
      return make_adam_state<torch::optim::AdamParamState>(saved);
    case OptimizerKind::kSGD: {
      auto state = std::make_unique<torch::optim::SGDParamState>();
      state->momentum_buffer(saved.buffers.at("momentum_buffer"));
      return state;
    }
  }
  return nullptr;
}

}  // namespace ctrainer
