#include <ctrainer/distributed/sharded_strategy.h>

#include <algorithm>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>
#include <torch/nn/module.h>
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/optimizer.h>
#include <torch/optim/sgd.h>

#include <ATen/core/grad_mode.h>

#include <ctrainer/core/errors.h>
#include <ctrainer/core/forward_hooks.h>
#include <ctrainer/core/optimizer_kind.h>
#include <ctrainer/core/torch_compat.h>
#include <ctrainer/distributed/wrap_policy.h>

namespace ctrainer {

/// What the autograd and forward hooks reach the strategy through. The hooks stay registered on
/// the parameters' gradient accumulators after the strategy is gone: they hold a weak_ptr and
/// `strategy` is cleared by the destructor.
struct ShardedStrategy::Hooks {
  std::mutex mutex;  // CUDA backward runs hooks on the device's autograd thread
  ShardedStrategy* strategy = nullptr;
  /// Parameters reference their accumulators weakly; holding them keeps our hooks installed.
  std::vector<compat::AutogradNodeHandle> accumulators;

  void member_ready(std::size_t segment, std::size_t member) {
    std::lock_guard<std::mutex> lock(mutex);
    if (!strategy || !strategy->in_backward_) return;
    if (strategy->options_.stage == ShardingStage::kOptimizerState && !strategy->sync_) return;
    if (strategy->segments_[segment]->mark_ready(member)) strategy->launch_ready_in_order();
  }
  void before_forward(std::size_t unit) {
    std::lock_guard<std::mutex> lock(mutex);
    if (strategy) strategy->unit_before_forward(unit);
  }
  at::Tensor after_forward(std::size_t unit, at::Tensor output) {
    std::lock_guard<std::mutex> lock(mutex);
    return strategy ? strategy->unit_after_forward(unit, std::move(output)) : output;
  }
  void before_backward(std::size_t unit) {
    std::lock_guard<std::mutex> lock(mutex);
    if (strategy) strategy->unit_before_backward(unit);
  }
};

namespace {

/// Runs after a parameter's AccumulateGrad node has produced this backward's gradient.
class MemberReadyHook : public torch::autograd::FunctionPostHook {
 public:
  MemberReadyHook(std::weak_ptr<ShardedStrategy::Hooks> hooks, std::size_t segment,
                  std::size_t member)
      : hooks_(std::move(hooks)), segment_(segment), member_(member) {}
  torch::autograd::variable_list operator()(const torch::autograd::variable_list& outputs,
                                            const torch::autograd::variable_list&) override {
    if (auto hooks = hooks_.lock()) hooks->member_ready(segment_, member_);
    return outputs;
  }

 private:
  std::weak_ptr<ShardedStrategy::Hooks> hooks_;
  std::size_t segment_;
  std::size_t member_;
};

/// ZeRO-3 unit: gather before forward, free after it, gather again before backward.
class UnitForwardHooks : public ModuleForwardHooks {
 public:
  UnitForwardHooks(std::weak_ptr<ShardedStrategy::Hooks> hooks, std::size_t unit)
      : hooks_(std::move(hooks)), unit_(unit) {}
  void before_forward() override {
    if (auto hooks = hooks_.lock()) hooks->before_forward(unit_);
  }
  at::Tensor after_forward(at::Tensor output) override {
    auto hooks = hooks_.lock();
    return hooks ? hooks->after_forward(unit_, std::move(output)) : output;
  }

 private:
  std::weak_ptr<ShardedStrategy::Hooks> hooks_;
  std::size_t unit_;
};

struct NamedParameter {
  std::string name;
  at::Tensor tensor;
};

std::vector<FlatMember> members_of(const std::vector<NamedParameter>& parameters,
                                   const std::vector<std::size_t>& indices) {
  std::vector<FlatMember> members;
  for (auto k : indices) members.push_back({parameters[k].name, parameters[k].tensor, 0, 0});
  return members;
}

/// Clears `in_backward` however backward ends.
struct BackwardScope {
  bool& flag;
  explicit BackwardScope(bool& f) : flag(f) { flag = true; }
  ~BackwardScope() { flag = false; }
};

}  // namespace

ShardedStrategy::ShardedStrategy(ProcessGroup& group, ShardingOptions options)
    : CollectiveStrategy(group),
      options_(std::move(options)),
      shard_group_(&group),
      hooks_(std::make_shared<Hooks>()) {
  if (options_.stage == ShardingStage::kNone)
    throw std::invalid_argument("ShardedStrategy: stage 0 is DDPStrategy");
  if (options_.reduce_bucket_elements <= 0)
    throw ArgumentError("zero_optimization.reduce_bucket_size must be positive");
  if (options_.offload_params && options_.stage != ShardingStage::kParameters)
    throw ArgumentError(
        "zero_optimization.offload_param: parameters are only offloaded with stage 3");
  if (options_.parameter_dtype != at::kFloat && options_.parameter_dtype != at::kBFloat16 &&
      options_.parameter_dtype != at::kHalf)
    throw ArgumentError(std::string("sharded training stores parameters in float32, bfloat16 or "
                                    "float16, not ") +
                        c10::toString(options_.parameter_dtype));
  if (options_.hybrid) create_hybrid_groups();
  hooks_->strategy = this;
}

void ShardedStrategy::create_hybrid_groups() {
  const ProcessInfo& process = group_.process_info();
  const int64_t per_node = process.local_world_size;
  const int64_t world = group_.world_size();
  // Every rank must agree on the node layout, or the subgroups would not match: each tells the
  // others its node and how many processes its node runs.
  const std::string mine =
      std::to_string(process.node_rank) + "/" + std::to_string(process.local_world_size);
  const std::vector<std::string> layouts = group_.all_gather_strings(mine);
  for (int64_t r = 0; r < world; ++r) {
    const std::string expected =
        std::to_string(r / std::max<int64_t>(per_node, 1)) + "/" + std::to_string(per_node);
    if (per_node < 1 || world % per_node != 0 || layouts[static_cast<std::size_t>(r)] != expected)
      throw ArgumentError(
          "hybrid_shard needs the same number of processes on every node, with ranks numbered "
          "node by node (rank = GROUP_RANK x LOCAL_WORLD_SIZE + LOCAL_RANK, as torchrun, "
          "ctrainer-run and srun number them); rank " +
          std::to_string(r) + " reports node/LOCAL_WORLD_SIZE " +
          layouts[static_cast<std::size_t>(r)] + " in a world of " + std::to_string(world) +
          " while rank " + std::to_string(process.rank) + " has " + mine +
          ". Launch the same --nproc-per-node on every node, or use full_shard");
  }
  const int64_t node = process.rank / per_node, local = process.rank % per_node;
  std::vector<int64_t> node_ranks, replicas;
  for (int64_t k = 0; k < per_node; ++k) node_ranks.push_back(node * per_node + k);
  for (int64_t n = 0; n < world / per_node; ++n) replicas.push_back(n * per_node + local);
  // One node: HYBRID_SHARD is FULL_SHARD (or SHARD_GRAD_OP), as in FSDP.
  if (replicas.size() == 1) return;
  // Every rank creates its node's group, then its replica group: subgroups that share a member
  // are created in the same order on every member.
  shard_group_ = &group_.subgroup(node_ranks);
  replica_group_ = &group_.subgroup(replicas);
}

ShardedStrategy::~ShardedStrategy() {
  {
    std::lock_guard<std::mutex> lock(hooks_->mutex);
    hooks_->strategy = nullptr;
  }
  for (const auto* module : unit_modules_) {
    try {
      set_forward_hooks(*module, nullptr);
    } catch (const std::logic_error&) {
      // The model was destroyed first: its hook points are gone already.
    }
  }
}

void ShardedStrategy::setup(torch::nn::Module& model, const c10::Device& device) {
  if (!segments_.empty()) throw std::logic_error("ShardedStrategy::setup called twice");
  model.to(device);
  if (options_.parameter_dtype != at::kFloat) {
    // DeepSpeed's bf16/fp16 modes run the whole module in 16 bits (engine: module.bfloat16() /
    // .half()); integer buffers stay as they are. The fp32 masters are made from these values.
    at::NoGradGuard no_grad;
    for (auto& tensor : model.parameters())
      if (tensor.is_floating_point()) tensor.set_data(tensor.data().to(options_.parameter_dtype));
    for (auto& tensor : model.buffers())
      if (tensor.is_floating_point()) tensor.set_data(tensor.data().to(options_.parameter_dtype));
  }
  broadcast_module_state(model);

  std::vector<NamedParameter> parameters;
  std::unordered_map<std::string, std::size_t> index_of;
  for (const auto& item : model.named_parameters(/*recurse=*/true)) {
    if (!item.value().requires_grad()) continue;
    index_of[item.key()] = parameters.size();
    parameters.push_back({item.key(), item.value()});
  }
  if (parameters.empty())
    throw ArgumentError("sharded training: the model has no trainable parameter");

  SegmentPlacement replicated;
  replicated.compute_device = device;
  replicated.parameter_shard_device = options_.offload_params ? c10::Device(at::kCPU) : device;
  replicated.master_device = options_.offload_optimizer ? c10::Device(at::kCPU) : device;
  replicated.separate_master = options_.offload_optimizer;
  replicated.keeps_full_gradients = options_.stage == ShardingStage::kOptimizerState;
  SegmentPlacement sharded = replicated;
  sharded.shards_parameters = true;
  sharded.keeps_full_gradients = false;

  const int64_t world = shard_group_->world_size();
  auto add_segment = [&](const std::vector<std::size_t>& indices, const SegmentPlacement& where) {
    segments_.push_back(std::make_unique<ShardedSegment>(
        FlatLayout::build(members_of(parameters, indices), world), shard_group_->rank(), where,
        *shard_group_, replica_group_));
    return segments_.size() - 1;
  };
  auto add_buckets = [&](const std::vector<std::size_t>& indices) {
    std::vector<at::Tensor> tensors;
    for (auto k : indices) tensors.push_back(parameters[k].tensor);
    std::vector<std::size_t> added;
    for (const auto& bucket : bucket_by_size(tensors, options_.reduce_bucket_elements)) {
      std::vector<std::size_t> members;
      for (auto b : bucket) members.push_back(indices[b]);
      added.push_back(add_segment(members, replicated));
    }
    return added;
  };

  if (options_.stage != ShardingStage::kParameters) {
    std::vector<std::size_t> all(parameters.size());
    for (std::size_t k = 0; k < all.size(); ++k) all[k] = k;
    reduce_order_ = add_buckets(all);
  } else {
    // Small parameters stay whole on every rank (stage3_param_persistence_threshold): gathering
    // them would cost a collective each for little memory.
    std::vector<bool> placed(parameters.size(), false);
    std::vector<std::size_t> persistent;
    for (std::size_t k = 0; k < parameters.size(); ++k) {
      if (parameters[k].tensor.numel() < options_.param_persistence_threshold) {
        persistent.push_back(k);
        placed[k] = true;
      }
    }
    for (const WrapUnit& unit : find_wrap_units(model, options_)) {
      std::vector<std::size_t> members;
      for (const auto& name : unit.parameter_names) {
        const std::size_t k = index_of.at(name);
        if (placed[k]) continue;
        placed[k] = true;
        members.push_back(k);
      }
      if (members.empty()) continue;
      unit_segments_.push_back(add_segment(members, sharded));
      unit_modules_.push_back(unit.module);
    }
    std::vector<std::size_t> root;
    for (std::size_t k = 0; k < parameters.size(); ++k)
      if (!placed[k]) root.push_back(k);
    if (!root.empty()) root_segments_.push_back(add_segment(root, sharded));
    // Backward finishes the units in reverse forward order; small persistent parameters and the
    // root (embeddings and head) are complete only at its end.
    reduce_order_.assign(unit_segments_.rbegin(), unit_segments_.rend());
    for (auto s : add_buckets(persistent)) reduce_order_.push_back(s);
    for (auto s : root_segments_) reduce_order_.push_back(s);
    for (std::size_t u = 0; u < unit_modules_.size(); ++u)
      set_forward_hooks(*unit_modules_[u], std::make_shared<UnitForwardHooks>(hooks_, u));
  }

  for (std::size_t s = 0; s < segments_.size(); ++s) {
    const auto& members = segments_[s]->layout().members;
    for (std::size_t m = 0; m < members.size(); ++m) {
      auto accumulator = torch::autograd::impl::grad_accumulator(members[m].parameter);
      accumulator->add_post_hook(std::make_unique<MemberReadyHook>(hooks_, s, m));
      hooks_->accumulators.push_back(std::move(accumulator));
    }
  }
}

void ShardedStrategy::setup_optimizer(torch::optim::Optimizer& optimizer) {
  if (!optimizer.state().empty())
    throw std::logic_error(
        "ShardedStrategy::setup_optimizer: the optimizer already holds state; shard it before "
        "its first step");
  std::unordered_map<const void*, std::vector<at::Tensor>> pieces_of;
  for (const auto& segment : segments_) {
    const auto& members = segment->layout().members;
    auto& pieces = segment->optimizer_pieces();
    const auto& slices = segment->owned_slices();
    for (const auto& m : members) pieces_of[m.parameter.unsafeGetTensorImpl()];
    for (std::size_t i = 0; i < slices.size(); ++i)
      pieces_of[members[slices[i].member].parameter.unsafeGetTensorImpl()].push_back(pieces[i]);
  }
  for (auto& group : optimizer.param_groups()) {
    std::vector<at::Tensor> replaced;
    for (const auto& p : group.params()) {
      auto it = pieces_of.find(p.unsafeGetTensorImpl());
      if (it == pieces_of.end())
        throw ArgumentError(
            "sharded training: the optimizer holds a tensor that is not a trainable parameter "
            "of the model (of shape " +
            std::string(c10::str(p.sizes())) +
            "); build the optimizer over the model's trainable parameters");
      for (const auto& piece : it->second) replaced.push_back(piece);
    }
    group.params() = std::move(replaced);
  }
}

std::vector<at::Tensor> ShardedStrategy::optimizer_parameters(torch::nn::Module& /*model*/) {
  std::vector<at::Tensor> all;
  for (const auto& segment : segments_)
    for (const auto& piece : segment->optimizer_pieces()) all.push_back(piece);
  return all;
}

void ShardedStrategy::before_forward(torch::nn::Module& /*model*/) {
  for (auto s : root_segments_) segments_[s]->gather_async();
  for (auto s : root_segments_) segments_[s]->wait_gathered();
}

void ShardedStrategy::forward_without_data(torch::nn::Module& model) {
  // The same calls, in the same order, as a no-grad forward through the units.
  at::NoGradGuard no_grad;
  before_forward(model);
  for (std::size_t unit = 0; unit < unit_segments_.size(); ++unit) {
    std::lock_guard<std::mutex> lock(hooks_->mutex);
    unit_before_forward(unit);
    unit_after_forward(unit, at::Tensor());
  }
}

void ShardedStrategy::backward(const at::Tensor& loss, bool sync) {
  if (segments_.empty()) throw std::logic_error("ShardedStrategy::backward before setup");
  {
    std::lock_guard<std::mutex> lock(hooks_->mutex);
    sync_ = sync;
    next_reduce_ = 0;
    for (auto& segment : segments_) segment->reset_ready();
  }
  {
    BackwardScope scope(in_backward_);
    loss.backward();
  }
  std::lock_guard<std::mutex> lock(hooks_->mutex);
  if (options_.stage == ShardingStage::kOptimizerState && !sync) return;  // accumulate locally
  // Segments backward did not complete hold parameters without a gradient in this step: they
  // are reduced now, with zeros for those parameters.
  while (next_reduce_ < reduce_order_.size()) {
    const std::size_t s = reduce_order_[next_reduce_++];
    segments_[s]->launch_reduce();
    segments_[s]->release();
  }
  for (auto s : reduce_order_) segments_[s]->finish_reduce();
}

void ShardedStrategy::launch_ready_in_order() {
  // Collectives are matched by launch order, so every rank launches the segments in
  // reduce_order_ even when their gradients complete in another order.
  while (next_reduce_ < reduce_order_.size() && segments_[reduce_order_[next_reduce_]]->ready()) {
    const std::size_t s = reduce_order_[next_reduce_++];
    ShardedSegment& segment = *segments_[s];
    segment.launch_reduce();
    if (!options_.overlap_comm) segment.finish_reduce();
    segment.release();  // ZeRO-3: this unit's backward is over
    if (options_.backward_prefetch == BackwardPrefetch::kBackwardPost) {
      for (std::size_t u = 1; u < unit_segments_.size(); ++u)
        if (unit_segments_[u] == s) segments_[unit_segments_[u - 1]]->gather_async();
    }
  }
}

void ShardedStrategy::unit_before_forward(std::size_t unit) {
  segments_[unit_segments_[unit]]->wait_gathered();
  if (options_.forward_prefetch && !in_backward_ && unit + 1 < unit_segments_.size())
    segments_[unit_segments_[unit + 1]]->gather_async();
}

at::Tensor ShardedStrategy::unit_after_forward(std::size_t unit, at::Tensor output) {
  // A forward run again inside backward (gradient checkpointing) is followed by its backward.
  if (in_backward_) return output;
  segments_[unit_segments_[unit]]->release();
  if (at::GradMode::is_enabled() && output.defined() && output.requires_grad()) {
    std::weak_ptr<Hooks> weak = hooks_;
    // The gradient of the unit's output is complete right before the unit's own backward runs.
    output.register_hook([weak, unit](const at::Tensor&) {
      if (auto hooks = weak.lock()) hooks->before_backward(unit);
    });
  }
  return output;
}

void ShardedStrategy::unit_before_backward(std::size_t unit) {
  segments_[unit_segments_[unit]]->wait_gathered();
  if (options_.backward_prefetch == BackwardPrefetch::kBackwardPre && unit > 0)
    segments_[unit_segments_[unit - 1]]->gather_async();
}

at::Tensor ShardedStrategy::clip_grad_norm(torch::nn::Module& /*model*/, double max_norm) {
  at::Tensor square_sum;
  for (const auto& segment : segments_) {
    at::Tensor part = segment->gradient_square_sum();
    square_sum = square_sum.defined() ? square_sum + part : part;
  }
  // One all-reduce on the communication device (NCCL needs device memory).
  const c10::Device wire_device = segments_.front()->placement().compute_device;
  at::Tensor wire = square_sum.to(wire_device).reshape({1});
  // Over the shards only: HYBRID_SHARD's replicas hold the same gradient chunks.
  shard_group_->all_reduce(wire, Reduction::kSum);
  at::Tensor norm = wire.sqrt().reshape({});
  if (max_norm > 0) {
    // torch.nn.utils.clip_grad_norm_'s coefficient.
    at::Tensor factor = at::clamp_max(max_norm / (norm + 1e-6), 1.0);
    for (auto& segment : segments_) segment->scale_gradients(factor);
  }
  return norm;
}

void ShardedStrategy::optimizer_step(torch::optim::Optimizer& optimizer) {
  optimizer.step();
  // Full parameters gathered now (the root after an evaluation) are stale: parameters_from_master
  // releases them before it updates the rest.
  parameters_from_master();
}

void ShardedStrategy::parameters_from_master() {
  for (auto& segment : segments_) segment->release();
  for (auto& segment : segments_) segment->launch_parameter_update();
  for (auto& segment : segments_)
    if (!segment->placement().shards_parameters) segment->finish_parameter_update();
}

void ShardedStrategy::zero_grad(torch::nn::Module& /*model*/) {
  for (auto& segment : segments_) segment->zero_grad();
}

void ShardedStrategy::gather_full_parameters(torch::nn::Module& /*model*/) {
  for (auto& segment : segments_) segment->gather_async();
  for (auto& segment : segments_) segment->wait_gathered();
}

void ShardedStrategy::release_full_parameters(torch::nn::Module& /*model*/, bool changed) {
  for (auto& segment : segments_) {
    if (changed) segment->take_full_values();
    segment->release();
  }
}

namespace {

/// Adds the bytes of each tensor's storage not counted yet.
int64_t count_new(const std::vector<at::Tensor>& tensors, std::unordered_set<const void*>& seen) {
  int64_t bytes = 0;
  for (const auto& t : tensors) {
    if (!t.defined() || !t.has_storage()) continue;
    const void* storage = t.storage().unsafeGetStorageImpl();
    if (!seen.insert(storage).second) continue;
    bytes += static_cast<int64_t>(t.storage().nbytes());
  }
  return bytes;
}

/// The tensors of an optimizer's per-parameter state, for the optimizers ctrainer creates.
std::vector<at::Tensor> state_tensors(const torch::optim::Optimizer& optimizer) {
  std::vector<at::Tensor> out;
  for (const auto& [key, state] : optimizer.state())
    for (const auto& [name, buffer] : param_state_buffers(*state).buffers) out.push_back(buffer);
  return out;
}

}  // namespace

ShardedMemory ShardedStrategy::memory(const torch::optim::Optimizer* optimizer) const {
  ShardedMemory memory;
  std::unordered_set<const void*> seen;
  std::vector<SegmentTensors> all;
  for (const auto& segment : segments_) all.push_back(segment->tensors());
  for (const auto& t : all) memory.parameters += count_new(t.parameters, seen);
  for (const auto& t : all) memory.gradients += count_new(t.gradients, seen);
  for (const auto& t : all) memory.master += count_new(t.master, seen);
  if (optimizer) memory.optimizer_state = count_new(state_tensors(*optimizer), seen);
  return memory;
}

}  // namespace ctrainer
