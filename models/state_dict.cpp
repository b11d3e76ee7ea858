#include <ctrainer/models/state_dict.h>

#include <functional>

namespace ctrainer {

std::vector<std::pair<std::string, at::Tensor>> ordered_state_dict(
    const torch::nn::Module& module) {
  std::vector<std::pair<std::string, at::Tensor>> out;
  // By hand rather than named_modules(), which needs the root module held by a shared_ptr.
  std::function<void(const torch::nn::Module&, const std::string&)> visit =
      [&](const torch::nn::Module& current, const std::string& prefix) {
        for (const auto& parameter : current.named_parameters(/*recurse=*/false))
          out.emplace_back(prefix + parameter.key(), parameter.value().detach());
        for (const auto& buffer : current.named_buffers(/*recurse=*/false))
          out.emplace_back(prefix + buffer.key(), buffer.value().detach());
        for (const auto& child : current.named_children())
          visit(*child.value(), prefix + child.key() + ".");
      };
  visit(module, "");
  return out;
}

std::map<std::string, at::Tensor> module_state_dict(const torch::nn::Module& module) {
  const auto ordered = ordered_state_dict(module);
  return {ordered.begin(), ordered.end()};
}

}  // namespace ctrainer
