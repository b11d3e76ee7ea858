// Reads cases from the JSON file argv[1] and prints, for each, the lrs (and betas) our scheduler
// gives after construction and after each of `steps` step() calls, for
// deepspeed_schedulers_parity.py to compare with DeepSpeed's lr_schedules.py and
// lr_schedules_parity.py with transformers' get_scheduler.
// A case: {"optimizer": "adamw"|"adam"|"sgd", "group_lrs": [lr per param group], "steps": int,
//          "resume_at": int (optional)} and either a DeepSpeed scheduler {"type": str,
//          "params": {...}} or an --lr_scheduler_type schedule {"schedule": str, "warmup": int,
//          "total": int, "kwargs": {...} (optional)}.
// With resume_at = k, after k steps the scheduler's state goes through state_dict() / JSON text
// / load_state_dict() into a scheduler built fresh on a fresh optimizer, which runs the rest.
// Output: a JSON list with one {"lrs": [[...]...], "betas": [[...]...]} per case (betas: beta1
// of each group, or [] for an optimizer without betas).
#include <cmath>
#include <fstream>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>
#include <nlohmann/json.hpp>

#include <ctrainer/trainer/args/choices.h>
#include <ctrainer/trainer/optim/deepspeed_schedulers.h>
#include <ctrainer/trainer/optim/lr_scheduler.h>

namespace {

// One parameter per group; each group's options start as the optimizer's defaults, with its own
// lr (betas (0.9, 0.999), as torch's defaults in the Python reference).
std::shared_ptr<torch::optim::Optimizer> make_optimizer(const std::string& kind,
                                                        const std::vector<double>& lrs) {
  std::vector<torch::optim::OptimizerParamGroup> groups;
  for (double lr : lrs) {
    std::vector<at::Tensor> params{torch::zeros({1}, torch::requires_grad())};
    if (kind == "sgd") {
      groups.emplace_back(params, std::make_unique<torch::optim::SGDOptions>(lr));
    } else if (kind == "adam") {
      groups.emplace_back(params, std::make_unique<torch::optim::AdamOptions>(lr));
    } else {
      groups.emplace_back(params, std::make_unique<torch::optim::AdamWOptions>(lr));
    }
  }
  if (kind == "sgd") {
    return std::make_shared<torch::optim::SGD>(std::move(groups), torch::optim::SGDOptions(lrs[0]));
  }
  if (kind == "adam") {
    return std::make_shared<torch::optim::Adam>(std::move(groups),
                                                torch::optim::AdamOptions(lrs[0]));
  }
  return std::make_shared<torch::optim::AdamW>(std::move(groups),
                                               torch::optim::AdamWOptions(lrs[0]));
}

std::vector<double> beta1s(torch::optim::Optimizer& optimizer) {
  std::vector<double> out;
  for (auto& group : optimizer.param_groups()) {
    auto& options = group.options();
    if (auto* adam = dynamic_cast<torch::optim::AdamOptions*>(&options)) {
      out.push_back(std::get<0>(adam->betas()));
    } else if (auto* adamw = dynamic_cast<torch::optim::AdamWOptions*>(&options)) {
      out.push_back(std::get<0>(adamw->betas()));
    }
  }
  return out;
}

std::vector<double> group_lrs(torch::optim::Optimizer& optimizer) {
  std::vector<double> out;
  for (auto& group : optimizer.param_groups()) out.push_back(group.options().get_lr());
  return out;
}

nlohmann::json run_case(const nlohmann::json& c) {
  const auto kind = c.at("optimizer").get<std::string>();
  const auto lrs = c.at("group_lrs").get<std::vector<double>>();
  const auto steps = c.at("steps").get<int64_t>();
  const int64_t resume_at = c.value("resume_at", int64_t{-1});
  const auto build = [&](std::shared_ptr<torch::optim::Optimizer> optimizer) {
    if (!c.contains("schedule"))
      return ctrainer::create_deepspeed_scheduler(c.at("type"), c.at("params"), optimizer);
    return ctrainer::get_scheduler(ctrainer::parse_choice<ctrainer::SchedulerType>(
                                       c.at("schedule").get<std::string>(), "lr_scheduler_type"),
                                   optimizer, c.at("warmup").get<int64_t>(),
                                   c.at("total").get<int64_t>(),
                                   c.value("kwargs", nlohmann::json()));
  };
  const std::string name = c.value("schedule", c.value("type", std::string()));
  auto optimizer = make_optimizer(kind, lrs);
  auto scheduler = build(optimizer);
  nlohmann::json out{{"lrs", nlohmann::json::array()}, {"betas", nlohmann::json::array()}};
  // The optimizer's own lrs, which the training step reads. Before Python compares them with
  // DeepSpeed's, the dump checks what holds for any schedule: the scheduler reports the lrs it
  // set (what the Trainer logs), they are finite and non-negative, and beta1 is finite (OneCycle's
  // momentum decay may take it past 1, as DeepSpeed's does).
  auto record = [&] {
    const std::vector<double> lrs_now = group_lrs(*optimizer);
    if (scheduler->get_last_lr() != lrs_now)
      throw std::runtime_error(name + ": get_last_lr() differs from the optimizer's lrs");
    for (double lr : lrs_now)
      if (!std::isfinite(lr) || lr < 0)
        throw std::runtime_error(name + ": lr " + std::to_string(lr));
    const std::vector<double> betas_now = beta1s(*optimizer);
    for (double beta : betas_now)
      if (!std::isfinite(beta)) throw std::runtime_error(name + ": beta1 " + std::to_string(beta));
    out["lrs"].push_back(lrs_now);
    out["betas"].push_back(betas_now);
  };
  record();
  for (int64_t s = 0; s < steps; ++s) {
    if (s == resume_at) {
      const std::string saved = scheduler->state_dict().dump();
      optimizer = make_optimizer(kind, lrs);
      scheduler = build(optimizer);
      scheduler->load_state_dict(nlohmann::json::parse(saved));
    }
    scheduler->step();
    record();
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: " << argv[0] << " CASES.json\n";
    return 2;
  }
  try {
    std::ifstream in(argv[1]);
    const auto cases = nlohmann::json::parse(in);
    nlohmann::json out = nlohmann::json::array();
    for (const auto& c : cases) out.push_back(run_case(c));
    std::cout << out.dump() << "\n";
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
