#include <ctrainer/core/forward_hooks.h>

#include <atomic>
#include <mutex>
#include <stdexcept>
#include <unordered_map>

namespace ctrainer {
namespace {

/// Every declared hook point and the hooks installed on it, by owner.
struct Registry {
  std::mutex mutex;
  std::unordered_map<const torch::nn::Module*, std::shared_ptr<ModuleForwardHooks>> points;
  /// Number of points with hooks: the fast path of enter() when no strategy installed any.
  std::atomic<int> installed{0};
};

Registry& registry() {
  static Registry* instance = new Registry();  // never destroyed: modules may outlive main
  return *instance;
}

}  // namespace

ForwardHookPoint::ForwardHookPoint(const torch::nn::Module& owner) : owner_(&owner) {
  auto& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.points.emplace(owner_, nullptr);
}

ForwardHookPoint::~ForwardHookPoint() {
  auto& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.points.find(owner_);
  if (it == r.points.end()) return;
  if (it->second) r.installed.fetch_sub(1, std::memory_order_relaxed);
  r.points.erase(it);
}

ForwardHookPoint::Scope ForwardHookPoint::enter() const {
  auto& r = registry();
  if (r.installed.load(std::memory_order_relaxed) == 0) return Scope(nullptr);
  std::shared_ptr<ModuleForwardHooks> hooks;
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    auto it = r.points.find(owner_);
    if (it != r.points.end()) hooks = it->second;
  }
  if (hooks) hooks->before_forward();
  return Scope(std::move(hooks));
}

at::Tensor ForwardHookPoint::Scope::finish(at::Tensor output) {
  if (!hooks_) return output;
  auto hooks = std::move(hooks_);
  return hooks->after_forward(std::move(output));
}

bool has_forward_hook_point(const torch::nn::Module& module) {
  auto& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  return r.points.count(&module) > 0;
}

void set_forward_hooks(const torch::nn::Module& module, std::shared_ptr<ModuleForwardHooks> hooks) {
  auto& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.points.find(&module);
  if (it == r.points.end())
    throw std::logic_error("set_forward_hooks: the module declares no ForwardHookPoint");
  if (it->second && !hooks) r.installed.fetch_sub(1, std::memory_order_relaxed);
  if (!it->second && hooks) r.installed.fetch_add(1, std::memory_order_relaxed);
  it->second = std::move(hooks);
}

}  // namespace ctrainer
