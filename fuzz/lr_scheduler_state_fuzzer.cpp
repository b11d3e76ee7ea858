// A checkpoint's scheduler.json on arbitrary bytes, as CheckpointManager::load reads it:
// read_json_file (std::runtime_error), then LRScheduler::load_state_dict (ArgumentError) into
// the scheduler the file is for: a DeepSpeed one when it names its "type" (WarmupLR,
// WarmupDecayLR, WarmupCosineLR, OneCycle), else HF's linear and cosine schedules. Both over an
// AdamW with two param groups, as the Trainer builds it. Then a few steps of training.
// Differential check: a state that loads saves (state_dict) and loads again.
#include <cstdio>
#include <cstdlib>

#include <torch/optim/adamw.h>

#include <ctrainer/core/errors.h>
#include <ctrainer/core/json_file.h>
#include <ctrainer/trainer/args/choices.h>
#include <ctrainer/trainer/optim/deepspeed_schedulers.h>
#include <ctrainer/trainer/optim/lr_scheduler.h>

#include "fuzz_support.h"

namespace {

std::shared_ptr<torch::optim::Optimizer> make_optimizer() {
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(std::vector<at::Tensor>{at::zeros({2}).requires_grad_()},
                      std::make_unique<torch::optim::AdamWOptions>(5e-5));
  groups.emplace_back(std::vector<at::Tensor>{at::zeros({3}).requires_grad_()},
                      std::make_unique<torch::optim::AdamWOptions>(5e-5));
  return std::make_shared<torch::optim::AdamW>(std::move(groups));
}

std::vector<std::shared_ptr<ctrainer::LRScheduler>> schedulers_for(const nlohmann::json& state) {
  std::vector<std::shared_ptr<ctrainer::LRScheduler>> out;
  if (state.is_object() && state.contains("type") && state["type"].is_string()) {
    const std::string type = state["type"].get<std::string>();
    nlohmann::json params = nlohmann::json::object();
    if (type == "WarmupDecayLR" || type == "WarmupCosineLR")
      params = {{"total_num_steps", 100}, {"warmup_num_steps", 10}};
    else if (type == "OneCycle")
      params = {{"cycle_min_lr", 1e-5}, {"cycle_max_lr", 1e-3}, {"cycle_first_step_size", 10}};
    try {
      out.push_back(ctrainer::create_deepspeed_scheduler(type, params, make_optimizer()));
    } catch (const ctrainer::ArgumentError&) {  // a type that does not exist
    }
    return out;
  }
  for (const auto type : {ctrainer::SchedulerType::kLinear, ctrainer::SchedulerType::kCosine})
    out.push_back(ctrainer::get_scheduler(type, make_optimizer(), 10, 100));
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ctrainer::fuzz::quiet_logging();
  const auto path =
      ctrainer::fuzz::scratch_file("scheduler.json", ctrainer::fuzz::bytes_of(data, size));
  nlohmann::json state;
  try {
    state = ctrainer::read_json_file(path, "checkpoint file");
  } catch (const std::runtime_error&) {
    return 0;
  }
  for (const auto& scheduler : schedulers_for(state)) {
    try {
      scheduler->load_state_dict(state);
    } catch (const ctrainer::ArgumentError&) {
      continue;
    }
    try {
      scheduler->load_state_dict(scheduler->state_dict());
    } catch (const ctrainer::ArgumentError& e) {
      std::fprintf(stderr, "lr_scheduler_state_fuzzer: state_dict() output does not load: %s\n",
                   e.what());
      std::abort();
    }
    for (int i = 0; i < 3; ++i) scheduler->step();
    (void)scheduler->get_last_lr();
  }
  return 0;
}
