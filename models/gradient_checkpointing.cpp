#include <ctrainer/models/gradient_checkpointing.h>

#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include <ATen/core/ivalue.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/custom_function.h>

#include <ctrainer/core/torch_compat.h>

namespace ctrainer {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

/// The default generators' states that a block's dropout draws from.
struct RngSnapshot {
  at::Tensor cpu;
  std::optional<at::Device> device;  ///< the accelerator of the input, when it is not the CPU
  at::Tensor device_state;

  static RngSnapshot capture(const at::Device& device) {
    RngSnapshot s;
    s.cpu = state_of(at::detail::getDefaultCPUGenerator());
    if (!device.is_cpu()) {
      s.device = device;
      s.device_state = state_of(at::globalContext().defaultGenerator(device));
    }
    return s;
  }

  void restore() const {
    set(at::detail::getDefaultCPUGenerator(), cpu);
    if (device) set(at::globalContext().defaultGenerator(*device), device_state);
  }

 private:
  static at::Tensor state_of(at::Generator gen) {
    std::lock_guard<std::mutex> lock(gen.mutex());
    return gen.get_state();
  }
  static void set(at::Generator gen, const at::Tensor& state) {
    std::lock_guard<std::mutex> lock(gen.mutex());
    gen.set_state(state);
  }
};

/// The autocast (mixed precision) state of the CPU and of the input's device type, so the
/// recompute casts exactly as the forward did (torch.utils.checkpoint replays it too).
struct AutocastSnapshot {
  std::vector<std::pair<c10::DeviceType, compat::AutocastState>> states;

  static AutocastSnapshot capture(const at::Device& device) {
    AutocastSnapshot s;
    s.states.emplace_back(c10::DeviceType::CPU, compat::get_autocast_state(c10::DeviceType::CPU));
    if (device.type() == c10::DeviceType::CUDA)
      s.states.emplace_back(device.type(), compat::get_autocast_state(device.type()));
    return s;
  }

  void restore() const {
    for (const auto& [type, state] : states) compat::set_autocast_state(type, state);
  }
};

/// What backward needs besides the saved input: the block and the RNG state at forward time.
/// Held by the autograd context as an IValue capsule, so it lives exactly as long as the graph.
struct CheckpointState : torch::CustomClassHolder {
  CheckpointedBlock block;
  RngSnapshot rng;
  AutocastSnapshot autocast;
};

/// Leaves the recompute's autocast scope and gives the caller its autocast and RNG state back.
void end_recompute(const AutocastSnapshot& autocast, const RngSnapshot& rng) {
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  autocast.restore();
  rng.restore();
}

class CheckpointFunction : public torch::autograd::Function<CheckpointFunction> {
 public:
  // Function::apply runs this with grad mode off: the block keeps no activations.
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& input,
                            at::TensorList parameters, c10::intrusive_ptr<CheckpointState> state) {
    state->rng = RngSnapshot::capture(input.device());
    state->autocast = AutocastSnapshot::capture(input.device());
    variable_list saved{input};
    saved.insert(saved.end(), parameters.begin(), parameters.end());
    ctx->save_for_backward(saved);
    at::Tensor output = state->block(input);
    ctx->saved_data["state"] = c10::IValue::make_capsule(std::move(state));
    return output;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    auto state =
        c10::static_intrusive_pointer_cast<CheckpointState>(ctx->saved_data["state"].toCapsule());
    const variable_list saved = ctx->get_saved_variables();
    const at::Tensor& saved_input = saved.at(0);
    at::Tensor input = saved_input.detach().requires_grad_(saved_input.requires_grad());

    const RngSnapshot caller_rng = RngSnapshot::capture(input.device());
    const AutocastSnapshot caller_autocast = AutocastSnapshot::capture(input.device());
    state->rng.restore();
    state->autocast.restore();
    // An autocast region caches the casts of leaf tensors and clears them when its outermost
    // scope ends; the recompute is such a scope, so weights cast here never outlive it.
    at::autocast::increment_nesting();
    at::Tensor output;
    try {
      torch::AutoGradMode grad_on(true);
      // A view of the leaf, so autocast does not cache (and share) its casts: the forward saw a
      // non-leaf here, cast once per consumer, and the gradients must be summed the same way.
      output = state->block(input.requires_grad() ? input.view_as(input) : input);
    } catch (...) {
      end_recompute(caller_autocast, caller_rng);
      throw;
    }
    end_recompute(caller_autocast, caller_rng);

    // Differentiate with respect to everything that wants a gradient; frozen parameters get none.
    variable_list wrt;
    if (input.requires_grad()) wrt.push_back(input);
    for (size_t i = 1; i < saved.size(); ++i)
      if (saved[i].requires_grad()) wrt.push_back(saved[i]);
    variable_list grads;
    if (!wrt.empty() && output.requires_grad()) {
      grads = torch::autograd::grad({output}, wrt, {grad_outputs.at(0)}, /*retain_graph=*/false,
                                    /*create_graph=*/false, /*allow_unused=*/true);
    } else {
      grads.assign(wrt.size(), at::Tensor());
    }

    // One gradient per forward input: input, each parameter, then the (non-tensor) state.
    variable_list result;
    size_t next = 0;
    result.push_back(input.requires_grad() ? grads[next++] : at::Tensor());
    for (size_t i = 1; i < saved.size(); ++i)
      result.push_back(saved[i].requires_grad() ? grads[next++] : at::Tensor());
    result.push_back(at::Tensor());
    return result;
  }
};

}  // namespace

at::Tensor checkpoint(const CheckpointedBlock& block, const at::Tensor& input,
                      const std::vector<at::Tensor>& parameters) {
  auto state = c10::make_intrusive<CheckpointState>();
  state->block = block;
  return CheckpointFunction::apply(input, at::TensorList(parameters), std::move(state));
}

}  // namespace ctrainer
