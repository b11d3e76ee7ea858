#include <ctrainer/distributed/sharded_segment.h>

#include <c10/core/StorageImpl.h>

#include <ATen/core/grad_mode.h>

namespace ctrainer {
namespace {

/// Whether `a` is exactly the memory of `b` (same storage, offset and size).
bool same_memory(const at::Tensor& a, const at::Tensor& b) {
  return a.defined() && b.defined() && a.is_alias_of(b) &&
         a.storage_offset() == b.storage_offset() && a.numel() == b.numel();
}

}  // namespace

ShardedSegment::ShardedSegment(FlatLayout layout, int64_t rank, const SegmentPlacement& placement,
                               ProcessGroup& group, ProcessGroup* replicas)
    : layout_(std::move(layout)),
      rank_(rank),
      placement_(placement),
      group_(group),
      replicas_(replicas) {
  at::NoGradGuard no_grad;
  slices_ = layout_.owned_slices(rank_);
  member_ready_.assign(layout_.members.size(), false);
  const at::Tensor& first = layout_.members.front().parameter;
  const int64_t shard_numel = layout_.shard_numel;

  full_ = at::zeros({layout_.padded_numel()}, first.options().requires_grad(false));
  for (auto& m : layout_.members) {
    at::Tensor slot = full_.narrow(0, m.offset, m.numel);
    slot.copy_(m.parameter.detach().reshape(-1));
    // The parameter keeps its identity (the module, autograd and the optimizer know it by its
    // TensorImpl) but now lives in the flat buffer, so one collective moves all members.
    m.parameter.set_data(slot.view(m.parameter.sizes()));
  }
  at::Tensor own = full_.narrow(0, rank_ * shard_numel, shard_numel);
  if (placement_.shards_parameters) {
    shard_ = own.to(placement_.parameter_shard_device, /*non_blocking=*/false, /*copy=*/true);
    free_full();
    state_ = State::kReleased;
  }

  // The optimizer steps an fp32 slice: the parameters' own memory when they are fp32 where the
  // optimizer runs, a copy otherwise (offload, or 16-bit parameters).
  const at::Tensor& owner = placement_.shards_parameters ? shard_ : own;
  const bool alias_master = !placement_.separate_master && owner.scalar_type() == at::kFloat &&
                            owner.device() == placement_.master_device;
  master_ = alias_master ? owner
                         : owner.to(placement_.master_device, at::kFloat, /*non_blocking=*/false,
                                    /*copy=*/true);

  if (placement_.keeps_full_gradients) {
    full_gradients_ = at::zeros({layout_.padded_numel()}, first.options().requires_grad(false));
    for (auto& m : layout_.members) {
      at::Tensor view = full_gradients_.narrow(0, m.offset, m.numel).view(m.parameter.sizes());
      if (m.parameter.grad().defined()) view.copy_(m.parameter.grad());
      // AccumulateGrad adds into a defined .grad in place, so it stays this view.
      m.parameter.mutable_grad() = view;
    }
    at::Tensor own_gradients = full_gradients_.narrow(0, rank_ * shard_numel, shard_numel);
    if (alias_master && own_gradients.scalar_type() == at::kFloat) gradient_shard_ = own_gradients;
  }
  if (!gradient_shard_.defined())
    gradient_shard_ = at::zeros(
        {shard_numel}, at::TensorOptions().dtype(at::kFloat).device(placement_.master_device));

  for (const auto& slice : slices_) {
    at::Tensor piece = master_.narrow(0, slice.shard_offset, slice.numel());
    piece.mutable_grad() = gradient_shard_.narrow(0, slice.shard_offset, slice.numel());
    pieces_.push_back(std::move(piece));
  }
}

void ShardedSegment::allocate_full() {
  c10::StorageImpl* storage = full_.storage().unsafeGetStorageImpl();
  const auto nbytes = static_cast<std::size_t>(full_.numel()) * full_.element_size();
  storage->set_data_ptr_noswap(storage->allocator()->allocate(nbytes));
  storage->set_nbytes(nbytes);
}

void ShardedSegment::free_full() {
  // Freed in place (FSDP's storage resize to 0): the parameters and every view autograd saved of
  // them share this storage, so the next gather refills what they all see.
  c10::StorageImpl* storage = full_.storage().unsafeGetStorageImpl();
  storage->set_data_ptr_noswap(at::DataPtr(nullptr, full_.device()));
  storage->set_nbytes(0);
}

void ShardedSegment::gather_async() {
  if (!placement_.shards_parameters || state_ != State::kReleased) return;
  allocate_full();
  gather_input_ = shard_.device() == full_.device() ? shard_ : shard_.to(full_.device());
  gather_work_ = group_.all_gather_into_async(full_, gather_input_);
  state_ = State::kGathering;
}

void ShardedSegment::wait_gathered() {
  if (state_ == State::kReleased) gather_async();
  if (state_ == State::kGathering) {
    gather_work_.wait();
    gather_input_.reset();
    state_ = State::kGathered;
  }
}

void ShardedSegment::release() {
  if (!placement_.shards_parameters || state_ == State::kReleased) return;
  if (state_ == State::kGathering) wait_gathered();  // never free memory a collective writes
  free_full();
  state_ = State::kReleased;
}

void ShardedSegment::take_full_values() {
  wait_gathered();
  at::NoGradGuard no_grad;
  const int64_t shard_numel = layout_.shard_numel;
  const at::Tensor own = full_.narrow(0, rank_ * shard_numel, shard_numel);
  if (shard_.defined()) shard_.copy_(own);
  if (!same_memory(master_, own) && !same_memory(master_, shard_)) master_.copy_(own);
}

bool ShardedSegment::mark_ready(std::size_t member) {
  if (member_ready_[member]) return false;
  member_ready_[member] = true;
  ++ready_count_;
  return ready();
}

void ShardedSegment::launch_reduce() {
  at::NoGradGuard no_grad;
  const int64_t shard_numel = layout_.shard_numel;
  if (placement_.keeps_full_gradients) {
    reduce_input_ = full_gradients_;
    // In place where the gradient shard is the rank's own chunk (NCCL and Gloo allow it).
    reduce_output_ =
        same_memory(gradient_shard_, full_gradients_.narrow(0, rank_ * shard_numel, shard_numel))
            ? gradient_shard_
            : at::empty({shard_numel}, full_gradients_.options());
  } else {
    const at::Tensor& first = layout_.members.front().parameter;
    reduce_input_ = at::empty({layout_.padded_numel()}, first.options().requires_grad(false));
    reduce_input_.narrow(0, layout_.numel, layout_.padded_numel() - layout_.numel).zero_();
    for (auto& m : layout_.members) {
      at::Tensor slot = reduce_input_.narrow(0, m.offset, m.numel);
      if (m.parameter.grad().defined())
        slot.copy_(m.parameter.grad().reshape(-1));
      else
        slot.zero_();  // unused in this backward: contributes nothing
      m.parameter.mutable_grad().reset();
    }
    reduce_output_ = at::empty({shard_numel}, reduce_input_.options());
  }
  reduce_work_ = group_.reduce_scatter_async(reduce_output_, reduce_input_, Reduction::kSum);
  reduce_pending_ = true;
}

void ShardedSegment::finish_reduce() {
  if (!reduce_pending_) return;
  reduce_work_.wait();
  reduce_pending_ = false;
  at::NoGradGuard no_grad;
  int64_t contributors = layout_.world_size;
  if (replicas_ != nullptr) {
    // HYBRID_SHARD: this chunk's sums from the other nodes (FSDP all-reduces the reduced shard
    // over the replicate group the same way).
    replicas_->all_reduce(reduce_output_, Reduction::kSum);
    contributors *= replicas_->world_size();
  }
  // Sum, then divide by the number of ranks: how DDP's average (c10d AVG) rounds.
  const auto world = static_cast<double>(contributors);
  if (placement_.keeps_full_gradients) {
    // The window's gradients were accumulated locally: the average replaces the shard.
    // Divided in fp32 (16-bit parameters reduce 16-bit gradients into an fp32 shard).
    if (!same_memory(reduce_output_, gradient_shard_)) gradient_shard_.copy_(reduce_output_);
    gradient_shard_.div_(world);
  } else {
    // One reduce-scatter per backward: the shard accumulates over the window.
    gradient_shard_.add_(reduce_output_.to(gradient_shard_.device(), at::kFloat).div_(world));
  }
  reduce_input_.reset();
  reduce_output_.reset();
  std::fill(member_ready_.begin(), member_ready_.end(), false);
  ready_count_ = 0;
}

void ShardedSegment::zero_grad() {
  at::NoGradGuard no_grad;
  gradient_shard_.zero_();
  if (full_gradients_.defined()) full_gradients_.zero_();
}

void ShardedSegment::launch_parameter_update() {
  at::NoGradGuard no_grad;
  if (placement_.shards_parameters) {
    if (!same_memory(master_, shard_)) shard_.copy_(master_);
    return;
  }
  const int64_t shard_numel = layout_.shard_numel;
  at::Tensor own = full_.narrow(0, rank_ * shard_numel, shard_numel);
  // The input must not alias the output: the master may be the rank's own chunk of it.
  update_input_ = same_memory(master_, own)
                      ? own.clone()
                      : master_.to(full_.device(), full_.scalar_type(), /*non_blocking=*/false,
                                   /*copy=*/true);
  update_work_ = group_.all_gather_into_async(full_, update_input_);
}

void ShardedSegment::finish_parameter_update() {
  update_work_.wait();
  update_input_.reset();
}

at::Tensor ShardedSegment::gradient_square_sum() const {
  return at::dot(gradient_shard_, gradient_shard_);
}

void ShardedSegment::scale_gradients(const at::Tensor& factor) {
  at::NoGradGuard no_grad;
  gradient_shard_.mul_(factor.to(gradient_shard_.device()));
}

SegmentTensors ShardedSegment::tensors() const {
  SegmentTensors out;
  out.parameters = {full_};
  if (shard_.defined()) out.parameters.push_back(shard_);
  if (full_gradients_.defined()) out.gradients.push_back(full_gradients_);
  out.gradients.push_back(gradient_shard_);
  for (const auto& m : layout_.members)
    if (m.parameter.grad().defined()) out.gradients.push_back(m.parameter.grad());
  out.master = {master_};
  return out;
}

}  // namespace ctrainer
