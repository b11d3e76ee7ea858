#include <ctrainer/trainer/optim/deepspeed_optimizers.h>

#include <algorithm>
#include <cctype>
#include <set>
#include <sstream>

#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>
#include <nlohmann/json.hpp>

#include <ctrainer/core/errors.h>
#include <ctrainer/core/strings.h>
#include <ctrainer/trainer/optim/deepspeed_params.h>
#include <ctrainer/trainer/optim/fused_adamw.h>

namespace ctrainer {
namespace {

using deepspeed_detail::DsParams;

std::string format(double v) {
  std::ostringstream out;
  out << v;
  return out.str();
}

void check(bool ok, const DsParams& p, const std::string& key, double value,
           const std::string& expected) {
  if (!ok) {
    throw ArgumentError(p.path(key) + " = " + format(value) + " is out of range; expected " +
                        expected);
  }
}

// DeepSpeed hands its optimizer `model_parameters` as HF computes them:
// list(filter(lambda p: p.requires_grad, model.parameters())).
std::vector<at::Tensor> trainable_parameters(torch::nn::Module& model) {
  std::vector<at::Tensor> out;
  for (auto& p : model.parameters(/*recurse=*/true)) {
    if (p.requires_grad()) out.push_back(p);
  }
  if (out.empty()) {
    throw ArgumentError(
        "create_deepspeed_optimizer: the model has no trainable parameters (every parameter has "
        "requires_grad=false)");
  }
  return out;
}

std::shared_ptr<torch::optim::Optimizer> make_adam(bool adamw_type, const nlohmann::json& params,
                                                   const std::string& type,
                                                   torch::nn::Module& model) {
  const DsParams p(params, "optimizer", type,
                   {"lr", "betas", "eps", "weight_decay", "adam_w_mode", "torch_adam",
                    "bias_correction", "amsgrad", "set_grad_none", "foreach"});
  // engine.py: `effective_adam_w_mode = name == "adamw" or adam_w_mode` (default True).
  const bool adam_w_mode = p.boolean("adam_w_mode", true) || adamw_type;
  const bool torch_adam = p.boolean("torch_adam", false);
  const double lr = p.number("lr", 1e-3);
  const auto betas = p.number_list("betas", 2, {0.9, 0.999});
  const double eps = p.number("eps", 1e-8);
  // FusedAdam and DeepSpeedCPUAdam default to 0; torch.optim.AdamW (torch_adam) to 0.01.
  const double weight_decay = p.number("weight_decay", torch_adam && adam_w_mode ? 0.01 : 0.0);
  const bool amsgrad = p.boolean("amsgrad", false);
  check(lr >= 0.0, p, "lr", lr, ">= 0");
  check(eps >= 0.0, p, "eps", eps, ">= 0");
  check(weight_decay >= 0.0, p, "weight_decay", weight_decay, ">= 0");
  check(betas[0] >= 0.0 && betas[0] < 1.0, p, "betas", betas[0], "betas[0] in [0, 1)");
  check(betas[1] >= 0.0 && betas[1] < 1.0, p, "betas", betas[1], "betas[1] in [0, 1)");
  if (!p.boolean("bias_correction", true)) {
    throw ArgumentError(p.path("bias_correction") +
                        " = false is not supported by ctrainer (its Adam always corrects the "
                        "moment bias, like torch's); remove it");
  }
  if (amsgrad && !torch_adam) {
    // FusedAdam: `if amsgrad: raise RuntimeError('FusedAdam does not support the AMSGrad ...')`.
    throw ArgumentError(p.path("amsgrad") +
                        " = true needs \"torch_adam\": true (DeepSpeed's FusedAdam has no "
                        "AMSGrad); set torch_adam or remove amsgrad");
  }
  if (p.has("foreach") && !torch_adam) {
    throw ArgumentError(p.path("foreach") +
                        " is a parameter of torch's Adam, used only with \"torch_adam\": true; "
                        "remove it or set torch_adam");
  }
  // set_grad_none and foreach change how (not what) the update is computed; accepted as is.
  p.boolean("set_grad_none", true);
  p.boolean("foreach", false);

  const auto betas_tuple = std::make_tuple(betas[0], betas[1]);
  const auto parameters = trainable_parameters(model);
  if (adam_w_mode) {
    auto options = torch::optim::AdamWOptions(lr)
                       .betas(betas_tuple)
                       .eps(eps)
                       .weight_decay(weight_decay)
                       .amsgrad(amsgrad);
    // DeepSpeed's FusedAdam is a one-pass multi-tensor kernel, as FusedAdamW is; torch_adam
    // asks for torch's own implementation.
    if (!torch_adam) return std::make_shared<FusedAdamW>(parameters, options);
    return std::make_shared<torch::optim::AdamW>(parameters, options);
  }
  // adam_w_mode false: FusedAdam's L2 mode, grad += weight_decay * param, as torch's Adam does.
  auto options = torch::optim::AdamOptions(lr)
                     .betas(betas_tuple)
                     .eps(eps)
                     .weight_decay(weight_decay)
                     .amsgrad(amsgrad);
  return std::make_shared<torch::optim::Adam>(parameters, options);
}

std::shared_ptr<torch::optim::Optimizer> make_sgd(const nlohmann::json& params,
                                                  torch::nn::Module& model) {
  // torch.optim.SGD(params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False).
  const DsParams p(params, "optimizer", "SGD",
                   {"lr", "momentum", "dampening", "weight_decay", "nesterov", "foreach"});
  const double lr = p.number("lr", 1e-3);
  const double momentum = p.number("momentum", 0.0);
  const double dampening = p.number("dampening", 0.0);
  const double weight_decay = p.number("weight_decay", 0.0);
  const bool nesterov = p.boolean("nesterov", false);
  p.boolean("foreach", false);  // a speed switch only
  check(lr >= 0.0, p, "lr", lr, ">= 0");
  check(momentum >= 0.0, p, "momentum", momentum, ">= 0");
  check(weight_decay >= 0.0, p, "weight_decay", weight_decay, ">= 0");
  if (nesterov && (momentum <= 0.0 || dampening != 0.0)) {
    throw ArgumentError(p.path("nesterov") +
                        " = true needs momentum > 0 and dampening 0 (torch's rule); set "
                        "optimizer.params.momentum or drop nesterov");
  }
  auto options = torch::optim::SGDOptions(lr)
                     .momentum(momentum)
                     .dampening(dampening)
                     .weight_decay(weight_decay)
                     .nesterov(nesterov);
  return std::make_shared<torch::optim::SGD>(trainable_parameters(model), options);
}

const char* kSupportedText = "Adam, AdamW or SGD";

}  // namespace

std::shared_ptr<torch::optim::Optimizer> create_deepspeed_optimizer(const std::string& type,
                                                                    const nlohmann::json& params,
                                                                    torch::nn::Module& model) {
  // engine.py refuses this key before building any optimizer.
  if (params.is_object() && params.contains("max_grad_norm")) {
    throw ArgumentError(
        "optimizer.params.max_grad_norm is not an optimizer parameter in DeepSpeed; remove it "
        "and set the top-level \"gradient_clipping\" (or --max_grad_norm) instead");
  }
  const std::string name = lower(type);
  if (name == "adam" || name == "adamw") return make_adam(name == "adamw", params, type, model);
  if (type == "SGD") return make_sgd(params, model);

  // DeepSpeed's own optimizers (config.py DEEPSPEED_OPTIMIZERS and the 1-bit family of earlier
  // releases), matched case-insensitively as DeepSpeed does.
  static const std::set<std::string> deepspeed_only = {
      "adagrad", "lamb", "lion",       "muadam",      "muadamw",
      "musgd",   "muon", "onebitadam", "zerooneadam", "onebitlamb"};
  if (deepspeed_only.count(name) != 0) {
    throw ArgumentError("optimizer.type \"" + type +
                        "\" is a DeepSpeed optimizer that ctrainer does not support; use " +
                        kSupportedText + ", or drop the \"optimizer\" section to use --optim");
  }
  // Any other name DeepSpeed resolves as getattr(torch.optim, type).
  static const std::set<std::string> torch_optimizers = {
      "Adadelta", "Adafactor", "Adamax",  "ASGD",  "LBFGS",
      "NAdam",    "RAdam",     "RMSprop", "Rprop", "SparseAdam"};
  if (torch_optimizers.count(type) != 0) {
    throw ArgumentError("optimizer.type \"" + type +
                        "\" (DeepSpeed takes it from torch.optim) is not supported by ctrainer; "
                        "use " +
                        kSupportedText + ", or drop the \"optimizer\" section to use --optim");
  }
  const std::string hint = name == "sgd" ? " (the name is case-sensitive: \"SGD\")" : "";
  throw ArgumentError("optimizer.type \"" + type + "\" is not an optimizer ctrainer knows" + hint +
                      "; use " + kSupportedText);
}

}  // namespace ctrainer
