#include <ctrainer/distributed/fsdp_config.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <sstream>
#include <vector>

#include <ctrainer/core/errors.h>
#include <ctrainer/core/json_config.h>
#include <ctrainer/core/logging.h>
#include <ctrainer/core/strings.h>

namespace ctrainer {
namespace {
using json = nlohmann::json;

const std::vector<std::string> kStrategies = {"full_shard", "shard_grad_op", "no_shard",
                                              "hybrid_shard", "hybrid_shard_zero2"};
const std::vector<std::string> kWrapPolicies = {"TRANSFORMER_BASED_WRAP", "SIZE_BASED_WRAP",
                                                "NO_WRAP"};

/// Keys ctrainer reads, keys accepted because they change no result here (with why), and the
/// XLA keys, accepted only when off.
const std::vector<std::string> kReadKeys = {"version",
                                            "reshard_after_forward",
                                            "cpu_offload",
                                            "activation_checkpointing",
                                            "state_dict_type",
                                            "auto_wrap_policy",
                                            "transformer_layer_cls_to_wrap",
                                            "min_num_params",
                                            "forward_prefetch",
                                            "backward_prefetch",
                                            "limit_all_gathers"};
const std::map<std::string, std::string> kIgnoredKeys = {
    {"use_orig_params", "ctrainer's optimizer always sees the original parameters"},
    {"sync_module_states", "every rank starts from rank 0's weights anyway"},
    {"cpu_ram_efficient_loading", "weights are loaded before sharding"}};
const std::vector<std::string> kXlaKeys = {"xla", "xla_fsdp_v2", "xla_fsdp_grad_ckpt",
                                           "xla_fsdp_settings"};

bool contains(const std::vector<std::string>& list, const std::string& value) {
  return std::find(list.begin(), list.end(), value) != list.end();
}

class FsdpParser {
 public:
  FsdpParser(const json& config, std::string source) : source_(std::move(source)) {
    if (!config.is_object())
      throw ArgumentError(source_ + " must be a JSON object, got " + config.dump());
    // transformers strips the "fsdp_" prefix of every key (accelerate's spelling).
    for (const auto& [key, value] : config.items()) {
      const std::string name = key.rfind("fsdp_", 0) == 0 ? key.substr(5) : key;
      if (config_.contains(name))
        fail(key, "is given twice (with and without the fsdp_ prefix); keep one");
      config_[name] = value;
    }
  }

  [[noreturn]] void fail(const std::string& key, const std::string& message) const {
    throw ArgumentError(source_ + ": " + key + " " + message);
  }

  /// The string value of `key`, or `fallback` when absent; another JSON type is an error.
  std::string text(const std::string& key, const char* fallback) const {
    const json value = config_.value(key, json(fallback));
    if (!value.is_string()) fail(key, "must be a string, got " + value.dump());
    return value.get<std::string>();
  }

  /// transformers' str_to_bool(str(value).lower()): true/false, 1/0, yes/no, on/off, y/n, t/f.
  bool boolean(const std::string& key, bool fallback) const {
    if (!config_.contains(key)) return fallback;
    const json& value = config_[key];
    if (value.is_boolean()) return value.get<bool>();
    const std::string text = lower(value.is_string() ? value.get<std::string>() : value.dump());
    if (contains({"y", "yes", "t", "true", "on", "1"}, text)) return true;
    if (contains({"n", "no", "f", "false", "off", "0"}, text)) return false;
    fail(key, "must be true or false, got " + value.dump());
  }

  FsdpSetup parse(const std::string& fsdp) {
    FsdpSetup out;
    check_keys();
    out.version = version();
    apply_legacy_words(fsdp, out.version);
    sharding(out);
    wrapping(out.options);
    out.options.offload_optimizer = out.options.offload_params = boolean("cpu_offload", false);
    out.activation_checkpointing = boolean("activation_checkpointing", false);
    // transformers' default is FULL_STATE_DICT (a single HF-loadable file).
    const std::string state_dict = text("state_dict_type", "FULL_STATE_DICT");
    if (state_dict == "FULL_STATE_DICT") {
      out.options.state_dict_type = ShardedStateDictType::kFull;
    } else if (state_dict == "SHARDED_STATE_DICT") {
      out.options.state_dict_type = ShardedStateDictType::kSharded;
    } else if (state_dict == "LOCAL_STATE_DICT") {
      fail("state_dict_type",
           "LOCAL_STATE_DICT (FSDP1's flat per-rank shards) is not supported; "
           "use SHARDED_STATE_DICT or FULL_STATE_DICT");
    } else {
      fail("state_dict_type",
           "must be FULL_STATE_DICT or SHARDED_STATE_DICT, got \"" + state_dict + "\"");
    }
    out.options.forward_prefetch = boolean("forward_prefetch", false);
    out.options.limit_all_gathers = boolean("limit_all_gathers", true);
    out.options.backward_prefetch = backward_prefetch();
    config_["min_num_params"] = config_.value("min_num_params", json(0));
    out.config = config_;
    if (!ignored_.empty())
      logging::logger()->info("{}: accepted, but they change nothing in ctrainer: {}", source_,
                              join(ignored_));
    return out;
  }

 private:
  void check_keys() {
    std::vector<std::string> known = kReadKeys;
    for (const auto& [key, why] : kIgnoredKeys) known.push_back(key);
    known.insert(known.end(), kXlaKeys.begin(), kXlaKeys.end());
    std::sort(known.begin(), known.end());
    for (const auto& [key, value] : config_.items()) {
      if (contains(kReadKeys, key)) continue;
      if (auto it = kIgnoredKeys.find(key); it != kIgnoredKeys.end()) {
        ignored_.push_back(key + " (" + it->second + ")");
        continue;
      }
      if (contains(kXlaKeys, key)) {
        const bool off = value.is_null() || value == false || (value.is_object() && value.empty());
        if (off) continue;
        fail(key,
             "is set, but PyTorch/XLA FSDP (TPUs) is not supported by ctrainer; remove the "
             "xla* keys");
      }
      fail(key,
           "is not an fsdp_config key transformers reads (a typo?); known keys (with or "
           "without the fsdp_ prefix): " +
               join(known));
    }
  }

  int version() const {
    if (!config_.contains("version")) return 2;
    const json& value = config_["version"];
    int64_t v = 0;  // (not int: 4294967297 must not read as 1)
    if (value.is_number_integer()) v = value.get<int64_t>();
    if (value.is_string() && (value == "1" || value == "2"))
      v = std::stoi(value.get<std::string>());
    if (v != 1 && v != 2) fail("version", "must be 1 (FSDP1) or 2 (FSDP2), got " + value.dump());
    return static_cast<int>(v);
  }

  /// transformers' _apply_legacy_fsdp_to_config: the words of --fsdp become fsdp_config
  /// entries; here an entry the config already holds with another value is a contradiction.
  void apply_legacy_words(const std::string& fsdp, int version) {
    std::istringstream words(fsdp);
    std::optional<std::string> strategy;
    for (std::string word; words >> word;) {
      if (contains({"true", "True", "1"}, word)) continue;  // transformers 5's --fsdp (bool)
      if (word == "auto_wrap") continue;  // the default auto_wrap_policy wraps already
      if (word == "offload") {
        set_from_flag("cpu_offload", true, "offload");
        continue;
      }
      if (!contains(kStrategies, word))
        throw ArgumentError("--fsdp: unknown option '" + word + "'; options are " +
                            join(kStrategies) + ", offload, auto_wrap");
      if (strategy && *strategy != word)
        throw ArgumentError("--fsdp " + *strategy + " contradicts --fsdp " + word +
                            ": give one sharding strategy");
      strategy = word;
      if (version == 2) {
        if (word != "full_shard" && word != "shard_grad_op")
          throw ArgumentError("--fsdp " + word + ": `fsdp=" + word +
                              "` is only available with FSDP1 (transformers); add \"version\": 1 "
                              "to --fsdp_config, or use full_shard / shard_grad_op");
        set_from_flag("reshard_after_forward", word == "full_shard", word);
      } else {
        set_from_flag("reshard_after_forward", word, word);
      }
    }
  }

  void set_from_flag(const std::string& key, const json& value, const std::string& word) {
    if (!config_.contains(key)) {
      config_[key] = value;
      return;
    }
    const json& given = config_[key];
    const bool same = value.is_boolean() ? boolean(key, false) == value.get<bool>()
                                         : given.is_string() && lower(given.get<std::string>()) ==
                                                                    value.get<std::string>();
    if (!same)
      throw ArgumentError("--fsdp " + word + " contradicts " + source_ + " " + key + "=" +
                          given.dump() +
                          " (transformers silently keeps the config's value); "
                          "remove one of them");
  }

  void sharding(FsdpSetup& out) const {
    ShardingOptions& o = out.options;
    if (out.version == 2) {
      // FSDP2: resharding after forward frees the parameters (ZeRO-3); keeping them until
      // backward is ZeRO-2.
      o.stage = boolean("reshard_after_forward", true) ? ShardingStage::kParameters
                                                       : ShardingStage::kGradients;
      return;
    }
    const json value = config_.value("reshard_after_forward", json("full_shard"));
    const std::string strategy = lower(value.is_string() ? value.get<std::string>() : value.dump());
    if (strategy == "full_shard")
      o.stage = ShardingStage::kParameters;
    else if (strategy == "shard_grad_op")
      o.stage = ShardingStage::kGradients;
    else if (strategy == "no_shard")
      o.stage = ShardingStage::kNone;
    else if (strategy == "hybrid_shard")
      o.stage = ShardingStage::kParameters, o.hybrid = true;
    else if (strategy == "hybrid_shard_zero2")
      o.stage = ShardingStage::kGradients, o.hybrid = true;
    else
      fail("reshard_after_forward",
           "must be one of " + join(kStrategies) + " with version 1, got " + value.dump());
  }

  void wrapping(ShardingOptions& o) const {
    const std::string policy = text("auto_wrap_policy", "TRANSFORMER_BASED_WRAP");
    if (!contains(kWrapPolicies, policy))
      fail("auto_wrap_policy",
           "must be one of " + join(kWrapPolicies) + ", got \"" + policy + "\"");
    const json classes = config_.value("transformer_layer_cls_to_wrap", json());
    const json min_params = config_.value("min_num_params", json(0));
    // An integral float (1e6) is fine: transformers only compares it with 0. (Below 2^63: an
    // int64 holds it.)
    if (!min_params.is_number() || min_params.is_boolean() || min_params.get<double>() < 0 ||
        min_params.get<double>() != std::floor(min_params.get<double>()) ||
        min_params.get<double>() >= 9223372036854775808.0)
      fail("min_num_params", "must be an integer in [0, 2^63), got " + min_params.dump());
    const auto min_num_params = static_cast<int64_t>(min_params.get<double>());
    if (!classes.is_null() && min_num_params > 0)
      fail("min_num_params",
           "and transformer_layer_cls_to_wrap are mutually exclusive; keep one "
           "(with auto_wrap_policy SIZE_BASED_WRAP or TRANSFORMER_BASED_WRAP)");
    if (policy == "SIZE_BASED_WRAP") {
      if (min_num_params == 0) fail("auto_wrap_policy", "SIZE_BASED_WRAP needs min_num_params > 0");
      o.wrap_min_num_params = min_num_params;
      return;
    }
    if (min_num_params > 0)
      fail("min_num_params",
           "is only read with auto_wrap_policy SIZE_BASED_WRAP (transformers "
           "ignores it with " +
               policy +
               "); add \"auto_wrap_policy\": "
               "\"SIZE_BASED_WRAP\" or remove min_num_params");
    if (policy == "NO_WRAP") {
      if (!classes.is_null())
        fail("transformer_layer_cls_to_wrap",
             "is not read with auto_wrap_policy NO_WRAP; remove "
             "one of them");
      return;
    }
    if (classes.is_string()) {
      o.wrap_layer_classes = {classes.get<std::string>()};
    } else if (classes.is_array() && !classes.empty()) {
      for (const json& name : classes) {
        if (!name.is_string())
          fail("transformer_layer_cls_to_wrap", "must hold class names, got " + name.dump());
        o.wrap_layer_classes.push_back(name.get<std::string>());
      }
    } else if (!classes.is_null()) {
      fail("transformer_layer_cls_to_wrap",
           "must be a class name or a list of them, got " + classes.dump());
    } else {
      // accelerate falls back on the model's _no_split_modules (the Trainer resolves them).
      o.wrap_model_layers = true;
    }
  }

  BackwardPrefetch backward_prefetch() const {
    if (!config_.contains("backward_prefetch")) return BackwardPrefetch::kBackwardPre;
    const json& value = config_["backward_prefetch"];
    const std::string name = upper(value.is_string() ? value.get<std::string>() : value.dump());
    if (name == "BACKWARD_PRE") return BackwardPrefetch::kBackwardPre;
    if (name == "BACKWARD_POST") return BackwardPrefetch::kBackwardPost;
    if (name == "NO_PREFETCH" || name == "NONE") return BackwardPrefetch::kNone;
    fail("backward_prefetch",
         "must be BACKWARD_PRE, BACKWARD_POST or NO_PREFETCH, got " + value.dump());
  }

  json config_ = json::object();
  std::string source_;
  std::vector<std::string> ignored_;
};

}  // namespace

bool fsdp_enabled(const std::string& fsdp) {
  std::istringstream words(fsdp);
  std::string first;
  if (!(words >> first)) return false;
  return !(first == "false" || first == "False" || first == "0");
}

nlohmann::json read_fsdp_config(const std::string& value) {
  return read_json_config_value(value, "fsdp_config");
}

FsdpSetup parse_fsdp(const std::string& fsdp, const nlohmann::json& config,
                     const std::string& source) {
  return FsdpParser(config, source).parse(fsdp);
}

}  // namespace ctrainer
