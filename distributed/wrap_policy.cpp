#include <ctrainer/distributed/wrap_policy.h>

#include <algorithm>
#include <functional>
#include <set>
#include <unordered_set>

#include <torch/nn/module.h>

#include <ctrainer/core/errors.h>
#include <ctrainer/core/forward_hooks.h>

namespace ctrainer {
namespace {

std::string join_path(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : prefix + "." + name;
}

/// Trainable parameters of `module` (recursively) under `path`, with their full names.
std::vector<std::string> trainable_names(const torch::nn::Module& module, const std::string& path) {
  std::vector<std::string> names;
  for (const auto& item : module.named_parameters(/*recurse=*/true))
    if (item.value().requires_grad()) names.push_back(join_path(path, item.key()));
  return names;
}

struct Walker {
  const ShardingOptions& options;
  std::unordered_set<std::string> taken;
  std::vector<WrapUnit> units;

  std::vector<std::string> untaken(const torch::nn::Module& module, const std::string& path) const {
    std::vector<std::string> names;
    for (auto& name : trainable_names(module, path))
      if (!taken.count(name)) names.push_back(std::move(name));
    return names;
  }

  void take(const torch::nn::Module& module, const std::string& path,
            std::vector<std::string> names) {
    for (const auto& name : names) taken.insert(name);
    units.push_back({path, module_class_name(module), &module, std::move(names)});
  }

  /// Pre-order: an outer listed module takes its whole subtree.
  void by_class(const torch::nn::Module& module, const std::string& path, bool is_root) {
    const std::string cls = module_class_name(module);
    const auto& wanted = options.wrap_layer_classes;
    if (!is_root && std::find(wanted.begin(), wanted.end(), cls) != wanted.end()) {
      if (!has_forward_hook_point(module))
        throw ArgumentError(
            "fsdp_transformer_layer_cls_to_wrap " + cls + " matches module '" + path +
            "', but that class declares no ForwardHookPoint, so its parameters cannot be "
            "all-gathered before its forward. Add `ForwardHookPoint hook_point_{*this};` to the "
            "class and bracket its forward with it (core/forward_hooks.h), or wrap "
            "another class (ctrainer's BertLayer and BertEmbeddings declare one)");
      auto names = untaken(module, path);
      if (!names.empty()) take(module, path, std::move(names));
      return;
    }
    for (const auto& child : module.named_children())
      by_class(*child.value(), join_path(path, child.key()), false);
  }

  /// Post-order: children become units before their parents are considered.
  void by_size(const torch::nn::Module& module, const std::string& path, bool is_root) {
    for (const auto& child : module.named_children())
      by_size(*child.value(), join_path(path, child.key()), false);
    if (is_root || !has_forward_hook_point(module)) return;
    auto names = untaken(module, path);
    int64_t count = 0;
    const auto params = module.named_parameters(/*recurse=*/true);
    for (const auto& item : params)
      if (std::find(names.begin(), names.end(), join_path(path, item.key())) != names.end())
        count += item.value().numel();
    if (!names.empty() && count >= options.wrap_min_num_params)
      take(module, path, std::move(names));
  }
};

void collect_class_names(const torch::nn::Module& module, std::set<std::string>& out) {
  out.insert(module_class_name(module));
  for (const auto& child : module.children()) collect_class_names(*child, out);
}

}  // namespace

std::string module_class_name(const torch::nn::Module& module) {
  std::string name = module.name();
  if (const auto colon = name.rfind("::"); colon != std::string::npos)
    name = name.substr(colon + 2);
  if (name.size() > 4 && name.compare(name.size() - 4, 4, "Impl") == 0)
    name.resize(name.size() - 4);
  return name;
}

std::vector<WrapUnit> find_wrap_units(const torch::nn::Module& model,
                                      const ShardingOptions& options) {
  Walker walker{options, {}, {}};
  if (!options.wrap_layer_classes.empty()) {
    walker.by_class(model, "", true);
    for (const auto& cls : options.wrap_layer_classes) {
      const bool found = std::any_of(walker.units.begin(), walker.units.end(),
                                     [&](const WrapUnit& u) { return u.class_name == cls; });
      if (!found) {
        std::set<std::string> classes;
        collect_class_names(model, classes);
        std::string list;
        for (const auto& c : classes) list += (list.empty() ? "" : ", ") + c;
        throw ArgumentError("fsdp_transformer_layer_cls_to_wrap " + cls +
                            ": could not find the transformer layer class to wrap in the model "
                            "(its module classes are " +
                            list + ")");
      }
    }
  } else if (options.wrap_min_num_params > 0) {
    walker.by_size(model, "", true);
    // by_size appends children first; registration order is what forward order follows.
    std::vector<std::string> order;
    for (const auto& item : model.named_parameters(true)) order.push_back(item.key());
    auto first_index = [&](const WrapUnit& unit) {
      return std::find(order.begin(), order.end(), unit.parameter_names.front()) - order.begin();
    };
    std::stable_sort(
        walker.units.begin(), walker.units.end(),
        [&](const WrapUnit& a, const WrapUnit& b) { return first_index(a) < first_index(b); });
  }
  return std::move(walker.units);
}

}  // namespace ctrainer
