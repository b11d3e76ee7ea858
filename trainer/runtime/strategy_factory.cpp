#include <ctrainer/trainer/runtime/strategy_factory.h>

#include <optional>
#include <sstream>
#include <string>

#include <ctrainer/core/errors.h>
#include <ctrainer/distributed/ddp_strategy.h>
#include <ctrainer/distributed/sharded_strategy.h>
#include <ctrainer/trainer/runtime/logging.h>

namespace ctrainer {
namespace {

/// "--flag value" for every argument that must agree between ranks. --local_rank is the one
/// argument launchers legitimately set per process.
std::vector<std::string> argument_lines(const TrainingArguments& args) {
  std::vector<std::string> lines;
  const nlohmann::json all = to_json(args);  // items() refers to it: keep it alive
  for (const auto& [key, value] : all.items())
    if (key != "local_rank") lines.push_back("--" + key + " " + value.dump());
  return lines;
}

/// "name [sizes] dtype" for every parameter and buffer, in registration order.
std::vector<std::string> model_lines(const Model& model) {
  std::vector<std::string> lines;
  auto describe = [&](const std::string& kind, const std::string& name, const at::Tensor& t) {
    std::ostringstream line;
    line << kind << ' ' << name << ' ' << t.sizes() << ' ' << t.scalar_type()
         << (t.requires_grad() ? " trainable" : "");
    lines.push_back(line.str());
  };
  for (const auto& item : model.named_parameters(/*recurse=*/true))
    describe("parameter", item.key(), item.value());
  for (const auto& item : model.named_buffers(/*recurse=*/true))
    describe("buffer", item.key(), item.value());
  return lines;
}

std::string join_lines(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& line : lines) out += line + '\n';
  return out;
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

/// Stage 3 without transformer_layer_cls_to_wrap or min_num_params: one unit per module of the
/// model's no_split_modules(), as accelerate wraps a transformers model by its _no_split_modules.
ShardingOptions with_model_layer_units(ShardingOptions options, const Model& model) {
  if (options.stage != ShardingStage::kParameters || !options.wrap_model_layers ||
      !options.wrap_layer_classes.empty() || options.wrap_min_num_params > 0)
    return options;
  options.wrap_layer_classes = model.no_split_modules();
  if (options.wrap_layer_classes.empty()) {
    logging::logger()->info(
        "stage-3 sharding: the model declares no layer classes to wrap (no_split_modules), so "
        "the whole model is one unit; name its layer class in the FSDP config's "
        "transformer_layer_cls_to_wrap (e.g. \"BertLayer\") for one unit per layer");
  } else {
    std::string classes;
    for (const std::string& name : options.wrap_layer_classes)
      classes += (classes.empty() ? "" : ", ") + name;
    logging::logger()->info(
        "stage-3 sharding: one unit per {} (the model's no_split_modules, as accelerate wraps "
        "transformers models)",
        classes);
  }
  return options;
}

}  // namespace

void require_same_on_every_rank(Strategy& strategy, const std::string& what,
                                const std::vector<std::string>& lines, const std::string& fix) {
  if (strategy.world_size() == 1) return;
  const std::vector<std::string> all = strategy.all_gather_strings(join_lines(lines));
  const std::vector<std::string> reference = split_lines(all.front());
  for (size_t rank = 1; rank < all.size(); ++rank) {
    if (all[rank] == all.front()) continue;
    const std::vector<std::string> theirs = split_lines(all[rank]);
    size_t i = 0;
    while (i < reference.size() && i < theirs.size() && reference[i] == theirs[i]) ++i;
    const std::string ours = i < reference.size() ? reference[i] : "nothing more";
    const std::string other = i < theirs.size() ? theirs[i] : "nothing more";
    throw ArgumentError(what + " differs between ranks: rank 0 has " + ours + " but rank " +
                        std::to_string(rank) + " has " + other + "; " + fix);
  }
}

TrainingStrategy create_training_strategy(const TrainingArguments& args, const ProcessInfo& process,
                                          const c10::Device& device, const Model& model,
                                          const ShardingOptions& configured) {
  TrainingStrategy out;
  const ShardingOptions sharding = with_model_layer_units(configured, model);
  const bool sharded = sharding.stage != ShardingStage::kNone;
  if (!process.is_distributed() && !sharded) {
    out.strategy = std::make_unique<SingleDeviceStrategy>();
    return out;
  }
  ProcessGroupOptions group_options;
  // The distributed layer knows backends by c10d's names, which are HF's.
  const std::optional<std::string> requested =
      args.ddp_backend ? std::optional<std::string>(to_string(*args.ddp_backend)) : std::nullopt;
  group_options.backend = resolve_backend(requested, device);
  group_options.timeout = std::chrono::seconds(args.ddp_timeout);
  logging::logger()->info("rank {} of {} ({}): joining the {} process group at {}:{}", process.rank,
                          process.world_size, to_string(process.launched_by), group_options.backend,
                          process.rendezvous_address(), process.master_port);
  if (process.sagemaker_data_parallel)
    logging::logger()->info(
        "SageMaker data parallelism (SM_FRAMEWORK_PARAMS): DDP over these ranks on {}, where "
        "HF's Trainer uses SageMaker's smddp backend (one replica per rank, gradients averaged)",
        group_options.backend);
  if (process.is_distributed()) {
    out.group = std::make_unique<ProcessGroup>(process, group_options);
  } else {
    // DeepSpeed on one process (offload, or a first test of a config) still shards over a
    // process group, of one rank; its store listens on a port the system picks.
    ProcessInfo alone = process;
    if (!alone.master_addr) alone.master_addr = "127.0.0.1";
    alone.master_port = 0;
    out.group = std::make_unique<ProcessGroup>(alone, group_options);
  }

  if (sharded) {
    logging::logger()->info("sharded training: {}{}{}{}", describe(sharding.stage),
                            sharding.hybrid ? ", sharded inside each node and replicated across "
                                              "nodes (HYBRID_SHARD)"
                                            : "",
                            sharding.offload_optimizer ? ", optimizer offloaded to the CPU" : "",
                            sharding.offload_params ? ", parameters offloaded to the CPU" : "");
    out.strategy = std::make_unique<ShardedStrategy>(*out.group, sharding);
    require_same_on_every_rank(*out.strategy, "the command line", argument_lines(args),
                               "start every rank with the same arguments");
    require_same_on_every_rank(*out.strategy, "the model", model_lines(model),
                               "every rank must build the same model before creating the Trainer");
    return out;
  }

  DDPOptions ddp;
  if (args.ddp_bucket_cap_mb) ddp.bucket_cap_mb = static_cast<double>(*args.ddp_bucket_cap_mb);
  // HF's default for a PreTrainedModel: look for unused parameters unless gradient
  // checkpointing is on. Here it only decides whether unused parameters are warned about.
  ddp.find_unused_parameters =
      args.ddp_find_unused_parameters.value_or(!args.gradient_checkpointing);
  out.strategy = std::make_unique<DDPStrategy>(*out.group, ddp);

  // Before DDPStrategy::setup broadcasts rank 0's weights, which needs identical shapes: a rank
  // started differently would otherwise fail later with an opaque collective error or, worse,
  // train something else.
  require_same_on_every_rank(*out.strategy, "the command line", argument_lines(args),
                             "start every rank with the same arguments");
  require_same_on_every_rank(*out.strategy, "the model", model_lines(model),
                             "every rank must build the same model before creating the Trainer");
  return out;
}

}  // namespace ctrainer
