// A DeepSpeed config (--deepspeed ds_config.json) on arbitrary bytes, through everything a run
// does with it: DeepSpeedConfig::from_file, trainer_config_process, fill_hidden_size_keys and
// trainer_config_finalize (transformers' HfTrainerDeepSpeedConfig), the typed sections, the
// ShardingOptions they give (options_from_zero's checks happen in zero()), and the optimizer and
// scheduler the Trainer creates from the "optimizer" / "scheduler" sections, stepped a few
// times. Bad input throws ArgumentError naming --deepspeed and the key.
#include <torch/nn/modules/linear.h>

#include <ctrainer/core/errors.h>
#include <ctrainer/integrations/deepspeed_config.h>
#include <ctrainer/trainer/optim/deepspeed_optimizers.h>
#include <ctrainer/trainer/optim/deepspeed_schedulers.h>
#include <ctrainer/trainer/optim/lr_scheduler.h>

#include "fuzz_support.h"

namespace {

void use_sections(const ctrainer::DeepSpeedConfig& ds) {
  (void)ds.zero_stage();
  (void)ds.dtype();
  (void)ds.loss_scale();
  (void)ds.gradient_clipping();
  (void)ds.zero();
  const auto optimizer_section = ds.optimizer();
  const auto scheduler_section = ds.scheduler();
  if (!optimizer_section) return;
  torch::nn::Linear model(3, 2);
  auto optimizer = ctrainer::create_deepspeed_optimizer(optimizer_section->type,
                                                        optimizer_section->params, *model);
  if (!scheduler_section) return;
  auto scheduler = ctrainer::create_deepspeed_scheduler(scheduler_section->type,
                                                        scheduler_section->params, optimizer);
  for (int i = 0; i < 3; ++i) scheduler->step();
  (void)scheduler->get_last_lr();
  // What a checkpoint saves (scheduler.json) and a resume loads.
  scheduler->load_state_dict(scheduler->state_dict());
  scheduler->step();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ctrainer::fuzz::quiet_logging();
  const auto path =
      ctrainer::fuzz::scratch_file("ds_config.json", ctrainer::fuzz::bytes_of(data, size));
  try {
    ctrainer::DeepSpeedConfig ds = ctrainer::DeepSpeedConfig::from_file(path);
    ctrainer::DeepSpeedTrainerArgs args;
    args.world_size = 2;
    args.fp16 = size % 2 == 1;  // both precisions, by the input's length
    ds.trainer_config_process(args);
    ds.fill_hidden_size_keys(size % 3 == 0 ? std::nullopt : std::optional<int64_t>(64));
    ds.trainer_config_finalize(64, /*num_training_steps=*/100, /*warmup_steps=*/10);
    (void)ds.config().dump();
    use_sections(ds);
  } catch (const ctrainer::ArgumentError&) {
  }
  return 0;
}
