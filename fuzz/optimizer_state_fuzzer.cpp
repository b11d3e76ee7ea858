// A checkpoint's optimizer state on arbitrary bytes: optimizer.json, a line "@@", then
// optimizer.safetensors, read as CheckpointManager::load reads them (load_safetensors:
// SafetensorsError; read_json_file: std::runtime_error) and restored with
// load_optimizer_state_dict (ArgumentError) into the optimizer type the file names (AdamW, Adam
// or SGD; else AdamW) over fixed parameters: group 0 holds shapes [2, 3] and [3], group 1 [4].
// Then one optimizer step, and the differential check that the restored state saves
// (optimizer_state_dict) and restores into a fresh optimizer.
#include <cstdio>
#include <cstdlib>

#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>

#include <ctrainer/core/errors.h>
#include <ctrainer/core/json_file.h>
#include <ctrainer/integrations/safetensors.h>
#include <ctrainer/trainer/checkpoint/optimizer_state.h>

#include "fuzz_support.h"

namespace {

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const std::string& type,
                                                        std::vector<at::Tensor>& params) {
  params = {at::zeros({2, 3}).requires_grad_(), at::zeros({3}).requires_grad_(),
            at::zeros({4}).requires_grad_()};
  std::vector<torch::optim::OptimizerParamGroup> groups;
  if (type == "SGD") {
    groups.emplace_back(std::vector<at::Tensor>{params[0], params[1]},
                        std::make_unique<torch::optim::SGDOptions>(0.1));
    groups.emplace_back(std::vector<at::Tensor>{params[2]},
                        std::make_unique<torch::optim::SGDOptions>(0.1));
    return std::make_unique<torch::optim::SGD>(std::move(groups), torch::optim::SGDOptions(0.1));
  }
  if (type == "Adam") {
    groups.emplace_back(std::vector<at::Tensor>{params[0], params[1]},
                        std::make_unique<torch::optim::AdamOptions>());
    groups.emplace_back(std::vector<at::Tensor>{params[2]},
                        std::make_unique<torch::optim::AdamOptions>());
    return std::make_unique<torch::optim::Adam>(std::move(groups));
  }
  groups.emplace_back(std::vector<at::Tensor>{params[0], params[1]},
                      std::make_unique<torch::optim::AdamWOptions>());
  groups.emplace_back(std::vector<at::Tensor>{params[2]},
                      std::make_unique<torch::optim::AdamWOptions>());
  return std::make_unique<torch::optim::AdamW>(std::move(groups));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ctrainer::fuzz::quiet_logging();
  const auto parts = ctrainer::fuzz::split_parts(ctrainer::fuzz::bytes_of(data, size), 2);
  const auto meta_path = ctrainer::fuzz::scratch_file("optimizer.json", parts[0]);
  const auto tensors_path = ctrainer::fuzz::scratch_file(
      "optimizer.safetensors", parts.size() > 1 ? parts[1] : std::string_view());

  ctrainer::OptimizerStateDict state;
  try {
    state.tensors = ctrainer::load_safetensors(tensors_path.string()).tensors;
    state.meta = ctrainer::read_json_file(meta_path, "checkpoint file");
  } catch (const std::runtime_error&) {  // SafetensorsError, read_json_file's errors
    return 0;
  }
  std::string type = "AdamW";
  if (state.meta.is_object() && state.meta.contains("optimizer") &&
      state.meta["optimizer"].is_string())
    type = state.meta["optimizer"].get<std::string>();

  std::vector<at::Tensor> params;
  auto optimizer = make_optimizer(type, params);
  try {
    ctrainer::load_optimizer_state_dict(*optimizer, state);
  } catch (const ctrainer::ArgumentError&) {
    return 0;
  }
  for (auto& p : params) p.mutable_grad() = at::ones_like(p);
  optimizer->step();

  const ctrainer::OptimizerStateDict saved = ctrainer::optimizer_state_dict(*optimizer);
  std::vector<at::Tensor> fresh_params;
  auto fresh = make_optimizer(type, fresh_params);
  try {
    ctrainer::load_optimizer_state_dict(*fresh, saved);
  } catch (const ctrainer::ArgumentError& e) {
    std::fprintf(stderr, "optimizer_state_fuzzer: a restored state does not save and restore: %s\n",
                 e.what());
    std::abort();
  }
  return 0;
}
