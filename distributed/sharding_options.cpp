#include <ctrainer/distributed/sharding_options.h>

namespace ctrainer {

std::string describe(ShardingStage stage) {
  switch (stage) {
    case ShardingStage::kNone:
      return "no sharding (DDP, FSDP NO_SHARD)";
    case ShardingStage::kOptimizerState:
      return "ZeRO-1 (optimizer state sharded)";
    case ShardingStage::kGradients:
      return "ZeRO-2 (FSDP SHARD_GRAD_OP)";
    case ShardingStage::kParameters:
      return "ZeRO-3 (FSDP FULL_SHARD)";
  }
  return "unknown sharding stage";
}

}  // namespace ctrainer
