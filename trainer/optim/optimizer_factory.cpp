#include <ctrainer/trainer/optim/optimizer_factory.h>

#include <algorithm>
#include <cctype>
#include <regex>
#include <sstream>
#include <string>
#include <unordered_set>

#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/instancenorm.h>
#include <torch/nn/modules/normalization.h>
#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>

#include <ctrainer/core/errors.h>
#include <ctrainer/trainer/optim/fused_adamw.h>

namespace ctrainer {
namespace {

const std::vector<std::regex>& no_decay_regexes() {
  static const std::vector<std::regex> regexes = [] {
    std::vector<std::regex> out;
    for (const auto& p : no_decay_name_patterns()) out.emplace_back(p, std::regex::ECMAScript);
    return out;
  }();
  return regexes;
}

bool matches_no_decay_pattern(const std::string& name) {
  std::string lower = name;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (const auto& re : no_decay_regexes()) {
    if (std::regex_search(lower, re)) return true;
  }
  return false;
}

bool is_norm_layer(const torch::nn::Module& m) {
  namespace nn = torch::nn;
  const nn::Module* p = &m;
  return dynamic_cast<const nn::LayerNormImpl*>(p) != nullptr ||
         dynamic_cast<const nn::GroupNormImpl*>(p) != nullptr ||
         dynamic_cast<const nn::BatchNorm1dImpl*>(p) != nullptr ||
         dynamic_cast<const nn::BatchNorm2dImpl*>(p) != nullptr ||
         dynamic_cast<const nn::BatchNorm3dImpl*>(p) != nullptr ||
         dynamic_cast<const nn::InstanceNorm1dImpl*>(p) != nullptr ||
         dynamic_cast<const nn::InstanceNorm2dImpl*>(p) != nullptr ||
         dynamic_cast<const nn::InstanceNorm3dImpl*>(p) != nullptr;
}

// HF's trainer_pt_utils.get_parameter_names(model, forbidden_layer_types, forbidden_patterns):
// the parameters of `module` (names relative to it) not inside a forbidden child layer and whose
// name matches no pattern. Patterns are checked at every level as HF does; since each relative
// name starts at a dot boundary this is the same as checking the full name.
void collect_decay_names(const torch::nn::Module& module, std::vector<std::string>& out) {
  for (const auto& child : module.named_children()) {
    if (is_norm_layer(*child.value())) continue;  // its whole subtree gets no decay
    std::vector<std::string> child_names;
    collect_decay_names(*child.value(), child_names);
    for (const auto& n : child_names) {
      std::string full = child.key() + "." + n;
      if (!matches_no_decay_pattern(full)) out.push_back(std::move(full));
    }
  }
  for (const auto& param : module.named_parameters(/*recurse=*/false)) {
    if (!matches_no_decay_pattern(param.key())) out.push_back(param.key());
  }
}

void check_range(bool ok, const std::string& flag, double value, const std::string& expected) {
  if (ok) return;
  std::ostringstream msg;
  msg << "--" << flag << "=" << value << " is out of range; expected " << expected;
  throw ArgumentError(msg.str());
}

}  // namespace

const std::vector<std::string>& no_decay_name_patterns() {
  static const std::vector<std::string> patterns = {R"(bias)", R"(layernorm)", R"(rmsnorm)",
                                                    R"((?:^|\.)norm(?:$|\.))", R"(_norm(?:$|\.))"};
  return patterns;
}

std::vector<std::string> get_decay_parameter_names(const torch::nn::Module& model) {
  std::vector<std::string> hf_order;
  collect_decay_names(model, hf_order);
  const std::unordered_set<std::string> decay(hf_order.begin(), hf_order.end());
  // Report in named_parameters() order (own parameters first), which is also the order of the
  // optimizer's param groups; HF's list lists children first but is only used for membership.
  std::vector<std::string> out;
  out.reserve(decay.size());
  for (const auto& param : model.named_parameters(/*recurse=*/true)) {
    if (decay.count(param.key()) != 0) out.push_back(param.key());
  }
  return out;
}

std::shared_ptr<torch::optim::Optimizer> create_optimizer(const TrainingArguments& args,
                                                          torch::nn::Module& model) {
  if (!is_choice(args.optim)) {
    throw ChoiceError("--optim must be one of " + choices_text<OptimizerName>() +
                      " (got the value " + std::to_string(static_cast<int>(args.optim)) + ")");
  }
  // HF trains adamw_hf as adamw_torch.
  const bool adamw = args.optim != OptimizerName::kSgd;
  check_range(args.learning_rate >= 0.0, "learning_rate", args.learning_rate, ">= 0");
  check_range(args.weight_decay >= 0.0, "weight_decay", args.weight_decay, ">= 0");
  if (adamw) {
    check_range(args.adam_beta1 >= 0.0 && args.adam_beta1 < 1.0, "adam_beta1", args.adam_beta1,
                "a value in [0, 1)");
    check_range(args.adam_beta2 >= 0.0 && args.adam_beta2 < 1.0, "adam_beta2", args.adam_beta2,
                "a value in [0, 1)");
    check_range(args.adam_epsilon >= 0.0, "adam_epsilon", args.adam_epsilon, ">= 0");
  }

  const auto decay_names = get_decay_parameter_names(model);
  const std::unordered_set<std::string> decay(decay_names.begin(), decay_names.end());
  std::vector<at::Tensor> decay_params;
  std::vector<at::Tensor> no_decay_params;
  for (const auto& param : model.named_parameters(/*recurse=*/true)) {
    if (!param.value().requires_grad()) continue;
    (decay.count(param.key()) != 0 ? decay_params : no_decay_params).push_back(param.value());
  }
  if (decay_params.empty() && no_decay_params.empty()) {
    throw ArgumentError(
        "create_optimizer: the model has no trainable parameters "
        "(every parameter has requires_grad=false)");
  }

  // Each group gets a full copy of the defaults with its own weight decay, as HF's group dicts
  // override only "weight_decay".
  auto make_groups = [&](const auto& defaults) {
    using Options = std::decay_t<decltype(defaults)>;
    std::vector<torch::optim::OptimizerParamGroup> groups;
    if (!decay_params.empty()) {
      auto opts = std::make_unique<Options>(defaults);
      opts->weight_decay(args.weight_decay);
      groups.emplace_back(decay_params, std::move(opts));
    }
    if (!no_decay_params.empty()) {
      auto opts = std::make_unique<Options>(defaults);
      opts->weight_decay(0.0);
      groups.emplace_back(no_decay_params, std::move(opts));
    }
    return groups;
  };

  // The optimizer's own defaults keep torch's weight decay (0.01 for AdamW, 0 for SGD), as HF
  // passes weight decay per group only. This matters since torch 2.12: the C++ optimizers merge
  // each group's options with the defaults "by comparison", so a group value equal to the
  // options' constructor default (SGD's no-decay group: 0) counts as unset and would silently
  // inherit the optimizer default. With torch's defaults there, the merge only ever replaces a
  // value by an equal one.
  if (adamw) {
    auto defaults = torch::optim::AdamWOptions(args.learning_rate)
                        .betas(std::make_tuple(args.adam_beta1, args.adam_beta2))
                        .eps(args.adam_epsilon);
    if (args.optim == OptimizerName::kAdamWTorchFused)
      return std::make_shared<FusedAdamW>(make_groups(defaults), defaults);
    return std::make_shared<torch::optim::AdamW>(make_groups(defaults), defaults);
  }
  auto defaults = torch::optim::SGDOptions(args.learning_rate);
  return std::make_shared<torch::optim::SGD>(make_groups(defaults), defaults);
}

}  // namespace ctrainer
