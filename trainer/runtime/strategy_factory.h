#pragma once
/// \file Choosing the Strategy of a run from the launch environment: one process trains with
/// SingleDeviceStrategy; several join a process group and train with DDPStrategy.
#include <memory>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include <ctrainer/distributed/process_group.h>
#include <ctrainer/distributed/process_info.h>
#include <ctrainer/distributed/sharding_options.h>
#include <ctrainer/distributed/strategy.h>
#include <ctrainer/models/model.h>
#include <ctrainer/trainer/args/training_args.h>

namespace ctrainer {

/// A strategy and the process group it communicates over (null for a single process). The
/// strategy must be destroyed before the group.
struct TrainingStrategy {
  std::unique_ptr<ProcessGroup> group;
  std::unique_ptr<Strategy> strategy;
};

/// For `process.world_size` > 1: joins the process group (backend from --ddp_backend or the
/// device, --ddp_timeout), checks that every rank was started with the same arguments and built
/// the same model (names, shapes and dtypes of parameters and buffers; ArgumentError naming the
/// first difference otherwise), and returns a DDPStrategy with --ddp_bucket_cap_mb and
/// --ddp_find_unused_parameters. Otherwise a SingleDeviceStrategy. Strategy::setup is left to
/// the caller. `sharding` is what --fsdp / --deepspeed resolved to (resolve_sharding): a stage
/// above kNone throws NotSupportedYet("sharded strategy") until the sharded strategy lands.
TrainingStrategy create_training_strategy(const TrainingArguments& args, const ProcessInfo& process,
                                          const c10::Device& device, const Model& model,
                                          const ShardingOptions& sharding = {});

/// Throws ArgumentError when a rank's `lines` differ from rank 0's: "<what> differs between
/// ranks: rank 0 has <line> but rank R has <line>; <fix>". Collective (every rank must call it
/// with the same `what`); with one process it does nothing.
void require_same_on_every_rank(Strategy& strategy, const std::string& what,
                                const std::vector<std::string>& lines, const std::string& fix);

}  // namespace ctrainer
