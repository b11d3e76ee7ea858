#pragma once
/// \file Forward hook points: where a distributed strategy may run code right before and after a
/// module's forward. ZeRO-3 / FSDP FULL_SHARD all-gathers a unit's parameters before its forward
/// and frees them after. torch::nn::Module has no forward hooks in C++, so a module class that
/// can be such a unit declares a ForwardHookPoint member and brackets its forward with it:
///
///     class MyLayerImpl : public torch::nn::Module {
///       ForwardHookPoint hook_point_{*this};
///       at::Tensor forward(const at::Tensor& x) {
///         auto hooks = hook_point_.enter();
///         at::Tensor y = ...;
///         return hooks.finish(y);
///       }
///     };
///
/// Without installed hooks (every run that is not ZeRO-3) enter() and finish() cost one relaxed
/// atomic load each.
#include <memory>

#include <ATen/ATen.h>

namespace torch::nn {
class Module;
}

namespace ctrainer {

/// What a strategy runs around the forward of a module it installed itself on.
class ModuleForwardHooks {
 public:
  virtual ~ModuleForwardHooks() = default;
  /// Before the module's forward computes anything (ZeRO-3: make its parameters available).
  virtual void before_forward() = 0;
  /// After its forward, with its output; returns the output to use (it may attach autograd
  /// hooks to it, e.g. to re-gather the parameters before the module's backward).
  virtual at::Tensor after_forward(at::Tensor output) = 0;
};

/// A module's declaration that it runs installed forward hooks (see the file comment). Neither
/// copyable nor movable: it registers the address of its owner.
class ForwardHookPoint {
 public:
  explicit ForwardHookPoint(const torch::nn::Module& owner);
  ~ForwardHookPoint();
  ForwardHookPoint(const ForwardHookPoint&) = delete;
  ForwardHookPoint& operator=(const ForwardHookPoint&) = delete;

  /// Brackets one forward: runs before_forward now; finish(output) runs after_forward. A scope
  /// left without finish() (an exception) runs nothing more.
  class Scope {
   public:
    at::Tensor finish(at::Tensor output);

   private:
    friend class ForwardHookPoint;
    explicit Scope(std::shared_ptr<ModuleForwardHooks> hooks) : hooks_(std::move(hooks)) {}
    std::shared_ptr<ModuleForwardHooks> hooks_;
  };
  Scope enter() const;

 private:
  const torch::nn::Module* owner_;
};

/// Whether `module` declares a ForwardHookPoint.
bool has_forward_hook_point(const torch::nn::Module& module);

/// Installs `hooks` on `module`'s hook point, replacing any; null removes them. Throws
/// std::logic_error when the module declares no ForwardHookPoint.
void set_forward_hooks(const torch::nn::Module& module, std::shared_ptr<ModuleForwardHooks> hooks);

}  // namespace ctrainer
