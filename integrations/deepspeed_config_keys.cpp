#include <ctrainer/integrations/deepspeed_config_keys.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>

#include <ctrainer/core/errors.h>
#include <ctrainer/core/logging.h>
#include <ctrainer/core/strings.h>

namespace ctrainer::deepspeed_keys {
namespace {
using json = nlohmann::json;

/// Keys of one section: read by ctrainer, ignored because they change no result (with why), or
/// accepted only at DeepSpeed's default value because anything else changes results in a way
/// ctrainer does not implement.
struct Section {
  std::vector<std::string> read;
  std::map<std::string, std::string> ignored;
  std::map<std::string, json> default_only;
};

class Checker {
 public:
  explicit Checker(std::string source) : source_(std::move(source)) {}

  [[noreturn]] void fail(const std::string& key, const std::string& message) const {
    throw ArgumentError("--deepspeed " + source_ + ": " + key + " " + message);
  }

  void require_object(const json& value, const std::string& key) const {
    if (!value.is_object()) fail(key, "must be a JSON object ({...}), got " + value.dump());
  }

  /// Checks the names of `node`'s keys against `section`; returns nothing, records ignored keys.
  void check_names(const json& node, const std::string& path, const Section& section) {
    require_object(node, path.empty() ? "the config" : path);
    for (const auto& [name, value] : node.items()) {
      const std::string key = path.empty() ? name : path + "." + name;
      if (std::find(section.read.begin(), section.read.end(), name) != section.read.end()) continue;
      if (auto it = section.ignored.find(name); it != section.ignored.end()) {
        ignored_.push_back(key + " (" + it->second + ")");
        continue;
      }
      if (auto it = section.default_only.find(name); it != section.default_only.end()) {
        if (value == it->second || (value.is_number() && it->second.is_number() &&
                                    value.get<double>() == it->second.get<double>())) {
          ignored_.push_back(key + " (DeepSpeed's default)");
          continue;
        }
        fail(key, "=" + value.dump() + " is not supported by ctrainer; remove it or set it to " +
                      it->second.dump() + " (DeepSpeed's default)");
      }
      std::vector<std::string> known = section.read;
      for (const auto& [k, _] : section.ignored) known.push_back(k);
      for (const auto& [k, _] : section.default_only) known.push_back(k);
      std::sort(known.begin(), known.end());
      fail(key,
           "is not a DeepSpeed config key ctrainer knows (a typo? DeepSpeed would silently "
           "ignore it); known keys" +
               std::string(path.empty() ? "" : " of " + path) + ": " + join(known));
    }
  }

  static bool is_auto(const json& value) { return value.is_string() && value == "auto"; }

  /// "auto" is only allowed where transformers fills it.
  void check_auto(const json& value, const std::string& key) const {
    if (!is_auto(value)) return;
    const auto& keys = auto_keys();
    if (std::find(keys.begin(), keys.end(), key) == keys.end())
      fail(key, "is \"auto\", but transformers' Trainer fills \"auto\" only for " + join(keys) +
                    "; give a value");
  }

  void boolean(const json& node, const std::string& path, const std::string& name) const {
    if (!node.contains(name)) return;
    const json& value = node[name];
    check_auto(value, path + "." + name);
    if (!is_auto(value) && !value.is_boolean())
      fail(path + "." + name, "must be true or false, got " + value.dump());
  }

  /// An integer (DeepSpeed's pydantic accepts integral floats such as 5e8) >= minimum.
  void integer(const json& node, const std::string& path, const std::string& name,
               double minimum) const {
    const std::string key = path.empty() ? name : path + "." + name;
    if (!node.contains(name)) return;
    const json& value = node[name];
    check_auto(value, key);
    if (is_auto(value)) return;
    if (!value.is_number() || value.is_boolean() ||
        value.get<double>() != std::floor(value.get<double>()))
      fail(key, "must be an integer, got " + value.dump());
    if (value.get<double>() < minimum)
      fail(key,
           "must be >= " + json(static_cast<int64_t>(minimum)).dump() + ", got " + value.dump());
  }

  void number(const json& node, const std::string& path, const std::string& name, double minimum,
              bool strictly_greater = false) const {
    const std::string key = path.empty() ? name : path + "." + name;
    if (!node.contains(name)) return;
    const json& value = node[name];
    check_auto(value, key);
    if (is_auto(value)) return;
    if (!value.is_number() || value.is_boolean())
      fail(key, "must be a number, got " + value.dump());
    const double v = value.get<double>();
    if (strictly_greater ? !(v > minimum) : !(v >= minimum))
      fail(key, std::string("must be ") + (strictly_greater ? "> " : ">= ") + json(minimum).dump() +
                    ", got " + value.dump());
  }

  /// Every value under `node` (recursively) that is "auto" must be at an auto key.
  void check_all_auto(const json& node, const std::string& path) const {
    if (node.is_object()) {
      for (const auto& [name, value] : node.items())
        check_all_auto(value, path.empty() ? name : path + "." + name);
    } else {
      check_auto(node, path);
    }
  }

  void log_ignored() const {
    if (ignored_.empty()) return;
    logging::logger()->info("--deepspeed {}: accepted, but they change nothing in ctrainer: {}",
                            source_, join(ignored_));
  }

 private:
  std::string source_;
  std::vector<std::string> ignored_;
};

const Section kTopLevel{
    {"train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps",
     "gradient_clipping", "fp16", "bf16", "optimizer", "scheduler", "zero_optimization"},
    {{"steps_per_print", "ctrainer logs every --logging_steps"},
     {"wall_clock_breakdown", "timing only"},
     {"memory_breakdown", "diagnostics only"},
     {"dump_state", "diagnostics only"},
     {"zero_allow_untested_optimizer", "ctrainer's sharding works with any optimizer"},
     {"zero_force_ds_cpu_optimizer", "ctrainer has no DeepSpeed CPU-Adam kernel to force"},
     {"checkpoint", "ctrainer writes its own checkpoints (docs/checkpoint-format.md)"},
     {"dataloader_drop_last", "the Trainer's --dataloader_drop_last decides"}},
    {{"prescale_gradients", false},
     {"gradient_predivide_factor", 1.0},
     {"sparse_gradients", false},
     {"communication_data_type", nullptr},
     {"amp", json{{"enabled", false}}},
     {"flops_profiler", json{{"enabled", false}}},
     {"tensorboard", json{{"enabled", false}}},
     {"wandb", json{{"enabled", false}}},
     {"csv_monitor", json{{"enabled", false}}},
     {"comet", json{{"enabled", false}}}}};

const Section kFp16{{"enabled", "loss_scale", "initial_scale_power", "loss_scale_window",
                     "hysteresis", "consecutive_hysteresis", "min_loss_scale"},
                    {},
                    {{"auto_cast", false}, {"fp16_master_weights_and_grads", false}}};

const Section kBf16{{"enabled"},
                    {{"immediate_grad_update", "ctrainer updates after each accumulation window"}},
                    {}};

const Section kZero{
    {"stage", "offload_optimizer", "offload_param", "overlap_comm", "reduce_bucket_size",
     "stage3_param_persistence_threshold", "param_persistence_threshold",
     "stage3_gather_16bit_weights_on_model_save", "gather_16bit_weights_on_model_save",
     "stage3_gather_fp16_weights_on_model_save", "cpu_offload", "cpu_offload_param"},
    {{"contiguous_gradients", "memory layout only"},
     {"reduce_scatter", "reduce-scatter or all-reduce give the same averages"},
     {"allgather_partitions", "communication pattern only"},
     {"allgather_bucket_size", "communication granularity only"},
     {"sub_group_size", "optimizer-step tiling only"},
     {"stage3_prefetch_bucket_size", "prefetch granularity only"},
     {"prefetch_bucket_size", "prefetch granularity only"},
     {"stage3_max_live_parameters", "memory limit of DeepSpeed's parameter cache"},
     {"max_live_parameters", "memory limit of DeepSpeed's parameter cache"},
     {"stage3_max_reuse_distance", "memory limit of DeepSpeed's parameter cache"},
     {"max_reuse_distance", "memory limit of DeepSpeed's parameter cache"},
     {"stage3_model_persistence_threshold", "memory limit only"},
     {"round_robin_gradients", "copy scheduling only"},
     {"use_multi_rank_bucket_allreduce", "communication pattern only"},
     {"ignore_unused_parameters", "unused parameters simply get no gradient"},
     {"load_from_fp32_weights", "ctrainer's checkpoints always hold fp32 master weights"},
     {"cpu_offload_use_pin_memory", "transfer speed only"},
     {"memory_efficient_linear", "memory only"},
     {"stage3_module_granularity_threshold", "fetch granularity only"},
     {"log_trace_cache_warnings", "diagnostics only"},
     {"enable_sanity_checks", "diagnostics only"},
     {"override_module_apply", "DeepSpeed-internal"}},
    {{"elastic_checkpoint", false},
     {"zero_hpz_partition_size", 1},
     {"zero_quantized_weights", false},
     {"zero_quantized_nontrainable_weights", false},
     {"zero_quantized_gradients", false},
     {"mics_shard_size", -1},
     {"legacy_stage1", false}}};

const Section kOffload{{"device"},
                       {{"pin_memory", "transfer speed only"},
                        {"buffer_count", "NVMe staging only"},
                        {"buffer_size", "NVMe staging only"},
                        {"max_in_cpu", "NVMe staging only"},
                        {"fast_init", "NVMe staging only"},
                        {"pipeline_read", "NVMe staging only"},
                        {"pipeline_write", "NVMe staging only"},
                        {"nvme_path", "read only with device \"nvme\""}},
                       {{"ratio", 1.0}}};

const std::vector<std::string> kOptimizers = {"Adam", "AdamW", "SGD"};
/// DeepSpeed's own optimizers that ctrainer does not implement (deepspeed/runtime/config.py).
const std::vector<std::string> kOptimizersLater = {"Lamb",        "OneBitAdam", "OneBitLamb",
                                                   "ZeroOneAdam", "Adagrad",    "Muon",
                                                   "MuAdam",      "MuAdamW",    "MuSGD"};
const std::vector<std::string> kSchedulers = {"WarmupLR", "WarmupDecayLR", "WarmupCosineLR",
                                              "OneCycle"};

void check_type_and_params(Checker& c, const json& node, const std::string& path,
                           const std::vector<std::string>& supported,
                           const std::vector<std::string>& later) {
  if (!node.contains("type")) c.fail(path + ".type", "is missing; one of " + join(supported));
  const json& type = node["type"];
  if (!type.is_string()) c.fail(path + ".type", "must be a string, got " + type.dump());
  const std::string name = type.get<std::string>();
  // DeepSpeed compares optimizer names case-insensitively; scheduler names exactly.
  const bool case_insensitive = path == "optimizer";
  auto same = [&](const std::string& known) {
    return case_insensitive ? lower(known) == lower(name) : known == name;
  };
  if (std::any_of(supported.begin(), supported.end(), same)) {
    if (node.contains("params")) {
      c.require_object(node["params"], path + ".params");
      c.check_all_auto(node["params"], path + ".params");
    }
    return;
  }
  if (std::any_of(later.begin(), later.end(), same))
    c.fail(path + ".type", "\"" + name + "\" is a DeepSpeed " + path +
                               " ctrainer does not implement; use one of " + join(supported) +
                               (path == "optimizer" ? ", or remove the section to use --optim"
                                                    : ", or remove the section to use "
                                                      "--lr_scheduler_type"));
  c.fail(path + ".type", "\"" + name + "\" is not supported; use one of " + join(supported));
}

void check_offload(Checker& c, const json& zero, const std::string& name) {
  if (!zero.contains(name)) return;
  const std::string path = "zero_optimization." + name;
  const json& node = zero[name];
  if (node.is_null()) return;
  c.check_names(node, path, kOffload);
  if (!node.contains("device")) return;
  const json& device = node["device"];
  if (device == "nvme")
    c.fail(path + ".device",
           "\"nvme\" (ZeRO-Infinity NVMe offload) is not supported by "
           "ctrainer; use \"cpu\" or \"none\"");
  if (device != "cpu" && device != "none")
    c.fail(path + ".device", "must be \"cpu\" or \"none\", got " + device.dump());
}

void check_zero(Checker& c, const json& zero) {
  const std::string path = "zero_optimization";
  c.check_names(zero, path, kZero);
  if (zero.contains("stage")) {
    const json& stage = zero["stage"];
    if (!stage.is_number_integer() || stage.get<int64_t>() < 0 || stage.get<int64_t>() > 3)
      c.fail(path + ".stage", "=" + stage.dump() +
                                  " does not exist; ZeRO stages are 0 (off), 1 (optimizer "
                                  "state), 2 (+ gradients) and 3 (+ parameters)");
  }
  check_offload(c, zero, "offload_optimizer");
  check_offload(c, zero, "offload_param");
  for (const char* name :
       {"overlap_comm", "stage3_gather_16bit_weights_on_model_save",
        "gather_16bit_weights_on_model_save", "stage3_gather_fp16_weights_on_model_save",
        "cpu_offload", "cpu_offload_param"})
    c.boolean(zero, path, name);
  for (const char* name : {"reduce_bucket_size", "stage3_param_persistence_threshold",
                           "param_persistence_threshold", "stage3_prefetch_bucket_size"})
    c.integer(zero, path, name, 0);
  c.check_all_auto(zero, path);
}

}  // namespace

const std::vector<std::string>& auto_keys() {
  static const std::vector<std::string> keys = {
      "train_micro_batch_size_per_gpu",
      "gradient_accumulation_steps",
      "train_batch_size",
      "gradient_clipping",
      "optimizer.params.lr",
      "optimizer.params.betas",
      "optimizer.params.eps",
      "optimizer.params.weight_decay",
      "scheduler.params.warmup_min_lr",
      "scheduler.params.warmup_max_lr",
      "scheduler.params.warmup_num_steps",
      "scheduler.params.total_num_steps",
      "fp16.enabled",
      "bf16.enabled",
      "zero_optimization.reduce_bucket_size",
      "zero_optimization.stage3_prefetch_bucket_size",
      "zero_optimization.stage3_param_persistence_threshold",
      "zero_optimization.stage3_gather_16bit_weights_on_model_save"};
  return keys;
}

void check(const json& config, const std::string& source) {
  Checker c(source);
  c.check_names(config, "", kTopLevel);
  for (const char* name :
       {"train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps"})
    c.integer(config, "", name, 1);
  c.number(config, "", "gradient_clipping", 0);
  if (config.contains("fp16")) {
    const json& fp16 = config["fp16"];
    c.check_names(fp16, "fp16", kFp16);
    c.boolean(fp16, "fp16", "enabled");
    c.boolean(fp16, "fp16", "consecutive_hysteresis");
    c.number(fp16, "fp16", "loss_scale", 0);
    c.integer(fp16, "fp16", "initial_scale_power", 0);
    c.integer(fp16, "fp16", "loss_scale_window", 1);
    c.integer(fp16, "fp16", "hysteresis", 1);
    c.number(fp16, "fp16", "min_loss_scale", 0, /*strictly_greater=*/true);
    c.check_all_auto(fp16, "fp16");
  }
  if (config.contains("bf16")) {
    c.check_names(config["bf16"], "bf16", kBf16);
    c.boolean(config["bf16"], "bf16", "enabled");
  }
  if (config.contains("optimizer")) {
    c.check_names(config["optimizer"], "optimizer",
                  Section{{"type", "params"}, {{"legacy_fusion", "fused kernels only"}}, {}});
    check_type_and_params(c, config["optimizer"], "optimizer", kOptimizers, kOptimizersLater);
  }
  if (config.contains("scheduler")) {
    c.check_names(config["scheduler"], "scheduler", Section{{"type", "params"}, {}, {}});
    check_type_and_params(c, config["scheduler"], "scheduler", kSchedulers, {"LRRangeTest"});
  }
  if (config.contains("zero_optimization")) check_zero(c, config["zero_optimization"]);
  c.check_all_auto(config, "");
  c.log_ignored();
}

}  // namespace ctrainer::deepspeed_keys
