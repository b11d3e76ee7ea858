#pragma once
/// \file The one place where torch 2.x releases differ for ctrainer (2.11 is the oldest supported,
/// cmake/CtrainerTorch.cmake refuses older ones), plus thin spellings of thread-local torch state
/// that several layers share. Version gates use TORCH_VERSION_MAJOR/MINOR; ops are
/// feature-tested with __has_include(<ATen/ops/X.h>). Keep each section small and documented.
#include <type_traits>
#include <utility>

#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/csrc/autograd/variable.h>
#include <torch/version.h>

/// True when the linked libtorch is at least MAJOR.MINOR.
#define CTRAINER_TORCH_AT_LEAST(MAJOR, MINOR) \
  (TORCH_VERSION_MAJOR > (MAJOR) ||           \
   (TORCH_VERSION_MAJOR == (MAJOR) && TORCH_VERSION_MINOR >= (MINOR)))

static_assert(CTRAINER_TORCH_AT_LEAST(2, 11),
              "ctrainer needs torch >= 2.11 (cmake/CtrainerTorch.cmake says how to get it)");

namespace ctrainer::compat {

// ---- autograd: handles of graph nodes ---------------------------------------------------------

/// What torch::autograd::impl::grad_accumulator returns: std::shared_ptr<Node> up to torch 2.11,
/// c10::intrusive_ptr<Node> in later releases. Holding one keeps a parameter's accumulator (and
/// the hooks installed on it) alive.
using AutogradNodeHandle =
    decltype(torch::autograd::impl::grad_accumulator(std::declval<const at::Tensor&>()));

// ---- autocast: the thread-local mixed-precision state (trainer/precision, models) -----------

/// Whether autocast is on for one device type, and the dtype it casts eligible ops to.
struct AutocastState {
  bool enabled = false;
  at::ScalarType dtype = at::kBFloat16;
};

inline AutocastState get_autocast_state(c10::DeviceType device) {
  return {at::autocast::is_autocast_enabled(device), at::autocast::get_autocast_dtype(device)};
}

inline void set_autocast_state(c10::DeviceType device, const AutocastState& state) {
  at::autocast::set_autocast_enabled(device, state.enabled);
  at::autocast::set_autocast_dtype(device, state.dtype);
}

// ---- dispatcher: which kernels this build has -------------------------------------------------

/// Whether the operator `name` (e.g. "aten::_amp_update_scale_") has a kernel for `device` in
/// this libtorch build. Asking the dispatcher is exact for any build (the wheel has CPU and CUDA
/// kernels for the fused loss-scaling ops), where a version number would only be a guess.
inline bool has_kernel_for(const char* name, c10::DeviceType device) {
  c10::DispatchKey key;
  switch (device) {
    case c10::DeviceType::CPU:
      key = c10::DispatchKey::CPU;
      break;
    case c10::DeviceType::CUDA:
      key = c10::DispatchKey::CUDA;
      break;
    default:
      return false;
  }
  auto op = c10::Dispatcher::singleton().findSchema({name, ""});
  return op.has_value() && op->hasKernelForDispatchKey(key);
}

}  // namespace ctrainer::compat
