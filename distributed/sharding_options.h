#pragma once
/// \file ShardingOptions: what a sharded run asked for, whichever way it was configured
/// (HF's --fsdp/--fsdp_config or a DeepSpeed JSON's zero_optimization section). The sharded
/// strategy reads only this struct; the configuration front ends only fill it.
#include <cstdint>
#include <string>
#include <vector>

#include <c10/core/ScalarType.h>

namespace ctrainer {

/// ZeRO stages (DeepSpeed zero_optimization.stage) and their FSDP names.
enum class ShardingStage : int {
  kNone = 0,            ///< DDP (FSDP NO_SHARD): everything replicated
  kOptimizerState = 1,  ///< ZeRO-1: fp32 master weights and optimizer state partitioned
  kGradients = 2,       ///< ZeRO-2 / FSDP SHARD_GRAD_OP: also gradients
  kParameters = 3,      ///< ZeRO-3 / FSDP FULL_SHARD: also parameters, per wrapped unit
};

/// When stage 3 all-gathers the next unit's parameters during backward (FSDP backward_prefetch).
enum class BackwardPrefetch {
  kNone,          ///< only when the unit's backward starts
  kBackwardPre,   ///< when the current unit's backward starts (FSDP's default)
  kBackwardPost,  ///< when the current unit's gradients were produced
};

/// What a checkpoint holds for the model and optimizer of a sharded run (FSDP state_dict_type).
enum class ShardedStateDictType {
  kSharded,  ///< each rank writes its shard (SHARDED_STATE_DICT; resumable at any world size)
  kFull,     ///< rank 0 writes consolidated weights and optimizer state (FULL_STATE_DICT)
};

/// Options of the sharded strategy. Defaults follow FSDP where FSDP and DeepSpeed differ and
/// nothing was configured.
struct ShardingOptions {
  ShardingStage stage = ShardingStage::kNone;
  /// FSDP HYBRID_SHARD / _HYBRID_SHARD_ZERO2: shard inside a node (LOCAL_WORLD_SIZE ranks),
  /// replicate across nodes (gradients all-reduced between the shards' replicas).
  bool hybrid = false;
  /// How the model's floating-point parameters (and so their gradients and the all-gathers) are
  /// stored: kFloat, or DeepSpeed's bf16 / fp16 modes (bf16.enabled / fp16.enabled with a
  /// stage >= 1), where the model runs in 16 bits and the optimizer steps an fp32 master shard
  /// (gradient shards are kept in fp32 too). setup() casts the model.
  at::ScalarType parameter_dtype = at::kFloat;
  /// fp32 master weights and optimizer state on the CPU, optimizer step on the CPU
  /// (zero_optimization.offload_optimizer.device "cpu"; --fsdp "... offload").
  bool offload_optimizer = false;
  /// Stage 3: the sharded parameters live on the CPU between uses
  /// (zero_optimization.offload_param.device "cpu"; --fsdp "... offload").
  bool offload_params = false;
  /// Stages 1/2: gradients are reduce-scattered in buckets of at most this many elements
  /// (zero_optimization.reduce_bucket_size, DeepSpeed's default 5e8).
  int64_t reduce_bucket_elements = 500'000'000;
  /// Launch a bucket's reduce-scatter during backward, as soon as it is complete
  /// (zero_optimization.overlap_comm). Results are the same either way.
  bool overlap_comm = true;
  /// Stage 3 auto-wrap: modules whose class name (without namespace and a trailing "Impl") is
  /// in this list become units (fsdp_transformer_layer_cls_to_wrap, e.g. "BertLayer").
  std::vector<std::string> wrap_layer_classes;
  /// Stage 3 auto-wrap by size: a module whose parameters not yet in a unit number at least this
  /// many becomes a unit (fsdp_min_num_params; 0 = off).
  int64_t wrap_min_num_params = 0;
  /// Stage 3 with neither of the above: the units are the modules of the classes the model
  /// declares (Model::no_split_modules, transformers' _no_split_modules, e.g. "LlamaDecoderLayer"),
  /// as accelerate's TRANSFORMER_BASED_WRAP picks them without transformer_cls_names_to_wrap.
  /// The Trainer fills wrap_layer_classes from the model (strategy_factory.cpp).
  bool wrap_model_layers = false;
  BackwardPrefetch backward_prefetch = BackwardPrefetch::kBackwardPre;
  /// Stage 3: all-gather the next unit while the current one runs forward (FSDP forward_prefetch).
  bool forward_prefetch = false;
  /// Stage 3: at most two units' all-gathers in flight (FSDP limit_all_gathers). The strategy
  /// never gathers further ahead than the next unit, so this always holds; kept for the record.
  bool limit_all_gathers = true;
  /// Stage 3: parameters with fewer elements than this stay replicated on every rank
  /// (zero_optimization.stage3_param_persistence_threshold; 0 = shard everything).
  int64_t param_persistence_threshold = 0;
  ShardedStateDictType state_dict_type = ShardedStateDictType::kSharded;
  /// Stage 3: save_model writes consolidated 16-bit weights
  /// (zero_optimization.stage3_gather_16bit_weights_on_model_save); consolidated fp32 otherwise.
  bool gather_16bit_weights_on_model_save = false;
};

/// "ZeRO-2 (FSDP SHARD_GRAD_OP)" etc., for logs and errors.
std::string describe(ShardingStage stage);

}  // namespace ctrainer
