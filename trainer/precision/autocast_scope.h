#pragma once
/// \file AutocastScope: turns autocast on for one device type while it lives (RAII), the C++ form
/// of Python's `with torch.autocast(device_type, dtype):`.
#include <optional>

#include <c10/core/DeviceType.h>
#include <c10/core/ScalarType.h>

#include <ctrainer/core/torch_compat.h>

namespace ctrainer {

/// While alive, eligible ops (matmul, linear, conv, ...) on `device` run in `dtype`; on
/// destruction the previous autocast state is restored and, when the outermost scope ends, the
/// cast cache is cleared (torch.autocast's __enter__/__exit__). Autocast state is per thread.
/// A scope given no dtype does nothing (fp32 runs pay nothing).
/// Put forward and loss inside the scope and backward outside: gradients then come out in the
/// parameters' dtype (fp32), as PyTorch's AMP recipe prescribes.
class AutocastScope {
 public:
  AutocastScope(c10::DeviceType device, std::optional<at::ScalarType> dtype);
  ~AutocastScope();
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  c10::DeviceType device_;
  bool active_ = false;
  compat::AutocastState previous_;
  bool previous_cache_enabled_ = true;
};

}  // namespace ctrainer
