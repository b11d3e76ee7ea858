#include <ctrainer/trainer/args/sharding_files.h>

#include <nlohmann/json.hpp>

#include <ctrainer/core/errors.h>
#include <ctrainer/trainer/args/training_args.h>

namespace ctrainer {

bool ShardingFiles::read_for(const TrainingArguments& args) const {
  return fsdp == args.fsdp && fsdp_config == args.fsdp_config && deepspeed == args.deepspeed;
}

std::shared_ptr<const ShardingFiles> read_sharding_files(const TrainingArguments& args) {
  const bool fsdp = fsdp_enabled(args.fsdp);
  if (fsdp && args.deepspeed)
    throw ArgumentError("--fsdp " + args.fsdp + " together with --deepspeed " + *args.deepspeed +
                        ": Using --fsdp xxx together with --deepspeed is not possible, "
                        "deactivate one of those flags.");
  if (args.fsdp_config && !fsdp)
    throw ArgumentError("--fsdp_config " + *args.fsdp_config +
                        " is only read with --fsdp; add --fsdp (e.g. --fsdp true or --fsdp "
                        "full_shard) or remove --fsdp_config");
  if (args.sharding_files && args.sharding_files->read_for(args)) return args.sharding_files;

  auto files = std::make_shared<ShardingFiles>();
  files->fsdp = args.fsdp;
  files->fsdp_config = args.fsdp_config;
  files->deepspeed = args.deepspeed;
  if (fsdp) {
    files->fsdp_setup = parse_fsdp(
        args.fsdp,
        args.fsdp_config ? read_fsdp_config(*args.fsdp_config) : nlohmann::json::object(),
        args.fsdp_config ? "--fsdp_config " + *args.fsdp_config : "--fsdp_config");
  }
  if (args.deepspeed)
    files->deepspeed_config = DeepSpeedConfig::from_flag(*args.deepspeed, args.deepspeed_origin);
  return files;
}

}  // namespace ctrainer
