#pragma once
/// \file Which modules become ZeRO-3 / FSDP FULL_SHARD units (FSDP's auto_wrap_policy): by layer
/// class name (fsdp_transformer_layer_cls_to_wrap) or by size (fsdp_min_num_params).
#include <cstdint>
#include <string>
#include <vector>

#include <ctrainer/distributed/sharding_options.h>

namespace torch::nn {
class Module;
}

namespace ctrainer {

/// A wrapped module and the trainable parameters it owns (those not owned by an earlier unit).
struct WrapUnit {
  std::string path;        ///< module path, e.g. "bert.encoder.layer.3"
  std::string class_name;  ///< e.g. "BertLayer"
  const torch::nn::Module* module = nullptr;
  std::vector<std::string> parameter_names;  ///< named_parameters() names, registration order
};

/// "BertLayer" for ctrainer::BertLayerImpl: the module's class name without namespace and the
/// "Impl" suffix of TORCH_MODULE classes (how fsdp_transformer_layer_cls_to_wrap names it).
std::string module_class_name(const torch::nn::Module& module);

/// The units of `model` under `options` (wrap_layer_classes, wrap_min_num_params), in
/// registration order (the order their forwards run in a sequential model). By class: every
/// module whose class is listed, outermost first (a listed module inside a unit adds nothing).
/// By size: bottom-up, a module whose trainable parameters not yet in a unit number at least
/// wrap_min_num_params. Only modules that declare a ForwardHookPoint can be units: a listed
/// class without one is an ArgumentError naming it, and the size policy skips such modules.
/// A listed class that matches nothing is an ArgumentError listing the classes the model has
/// (HF's "Could not find the transformer layer class to wrap in the model"). The root module is
/// never a unit: its remaining parameters form the root segment.
std::vector<WrapUnit> find_wrap_units(const torch::nn::Module& model,
                                      const ShardingOptions& options);

}  // namespace ctrainer
