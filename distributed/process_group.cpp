#include <ctrainer/distributed/process_group.h>

#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <sstream>
#include <thread>

#include <spdlog/spdlog.h>

#include <ctrainer/core/errors.h>
#include <ctrainer/distributed/c10d_compat.h>
#include <ctrainer/distributed/cuda_support.h>
#include <ctrainer/distributed/store_listener.h>

namespace ctrainer {
namespace {

using std::chrono::milliseconds;

/// The store key every rank increments once it reached the store.
constexpr const char* kJoinedKey = "ctrainer/rendezvous/joined";

/// c10::Error's what() carries a C++ backtrace; users need the first line only.
std::string describe(const std::exception& error) {
  std::string text = error.what();
  if (const auto* c10_error = dynamic_cast<const c10::Error*>(&error))
    text = c10_error->what_without_backtrace();
  text = text.substr(0, text.find('\n'));
  while (!text.empty() && (text.back() == '.' || text.back() == ' ')) text.pop_back();
  return text;
}

std::string seconds(milliseconds duration) {
  std::ostringstream out;
  out << static_cast<double>(duration.count()) / 1000.0 << " s";
  return out.str();
}

std::string endpoint(const std::string& address, int port) {
  return address + ":" + std::to_string(port);
}

/// Who serves the store, for messages (starts a sentence).
std::string store_host(const ProcessInfo& info) {
  return info.use_agent_store ? "The launcher's agent (TORCHELASTIC_USE_AGENT_STORE=True)"
                              : "Rank 0";
}

/// Connects to the rendezvous store (retrying until the timeout). Rank 0 serves it unless
/// torchrun's agent already does (TORCHELASTIC_USE_AGENT_STORE=True): then every rank is a
/// client, as torch's `_create_c10d_store` makes them.
c10::intrusive_ptr<c10d::TCPStore> open_store(const ProcessInfo& info, const std::string& address,
                                              milliseconds timeout) {
  const bool serve = info.rank == 0 && !info.use_agent_store;
  c10d::TCPStoreOptions options;
  options.port = static_cast<std::uint16_t>(info.master_port);
  options.isServer = serve;
  options.numWorkers = static_cast<std::size_t>(info.world_size);
  options.waitWorkers = false;  // we count the joined ranks ourselves to report how many came
  options.timeout = timeout;
  if (serve) {
    // Bound to MASTER_ADDR only (c10d would bind every interface); the store takes the socket.
    std::string why_all;
    options.masterListenFd = listen_for_store(address, info.master_port,
                                              info.world_size > info.local_world_size, &why_all);
    if (!why_all.empty()) spdlog::warn("{}", why_all);
    // Port 0 (a single-process group): the port the system chose, which the store checks.
    if (info.master_port == 0)
      options.port = static_cast<std::uint16_t>(bound_port(*options.masterListenFd));
  }
  try {
    return c10::make_intrusive<c10d::TCPStore>(address, options);
  } catch (const std::exception& error) {
    if (serve)
      throw DistributedError("rank 0 could not open the rendezvous store on port " +
                             std::to_string(info.master_port) + " (MASTER_ADDR:MASTER_PORT=" +
                             endpoint(address, info.master_port) + "): " + describe(error) +
                             ". Is the port used by another job or a previous attempt? Choose "
                             "another MASTER_PORT (ctrainer-run --master-port, or --standalone)");
    throw DistributedError(
        "rank " + std::to_string(info.rank) + " could not reach the rendezvous store at " +
        "MASTER_ADDR:MASTER_PORT=" + endpoint(address, info.master_port) + " within " +
        seconds(timeout) + " (world size " + std::to_string(info.world_size) +
        "): " + describe(error) + ". " + store_host(info) +
        " hosts the store: check that it started and that every rank has the same "
        "MASTER_ADDR and MASTER_PORT");
  }
}

/// Every rank announces itself, then waits until all `world_size` ranks did, so a missing peer
/// is reported with the count instead of an opaque timeout later in the backend.
void wait_for_all_ranks(c10d::Store& store, const ProcessInfo& info, const std::string& address,
                        milliseconds timeout) {
  const auto start = std::chrono::steady_clock::now();
  int64_t joined = 0;
  try {
    store.add(kJoinedKey, 1);
    auto pause = milliseconds(1);
    while ((joined = store.add(kJoinedKey, 0)) < info.world_size) {
      if (std::chrono::steady_clock::now() - start > timeout) break;
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, milliseconds(100));
    }
  } catch (const std::exception& error) {
    throw DistributedError("rank " + std::to_string(info.rank) +
                           " lost the rendezvous store at MASTER_ADDR:MASTER_PORT=" +
                           endpoint(address, info.master_port) + " during the rendezvous (world " +
                           "size " + std::to_string(info.world_size) + "): " + describe(error) +
                           ". " + store_host(info) + " hosts the store; did it exit?");
  }
  if (joined < info.world_size)
    throw DistributedError(
        "rendezvous at MASTER_ADDR:MASTER_PORT=" + endpoint(address, info.master_port) +
        " timed out after " + seconds(timeout) + ": " + std::to_string(joined) + " of " +
        std::to_string(info.world_size) + " ranks joined (world size " +
        std::to_string(info.world_size) +
        "). The missing ranks crashed before joining or were never started; "
        "check their logs, or raise --ddp_timeout if they start slowly");
}

c10::intrusive_ptr<compat::CollectiveBackend> create_gloo(
    const c10::intrusive_ptr<c10d::Store>& store, const ProcessInfo& info, milliseconds timeout) {
  auto options = c10d::ProcessGroupGloo::Options::create(timeout);
  // As torch.distributed does: GLOO_SOCKET_IFNAME names the interfaces (comma separated);
  // otherwise the address this host's name resolves to, or loopback.
  if (const char* names = std::getenv("GLOO_SOCKET_IFNAME"); names != nullptr && *names != '\0') {
    std::stringstream list(names);
    for (std::string name; std::getline(list, name, ',');)
      if (!name.empty())
        options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(name));
  } else {
    options->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
  }
  options->threads = static_cast<int>(options->devices.size() * 2);
  return c10::make_intrusive<c10d::ProcessGroupGloo>(store, static_cast<int>(info.rank),
                                                     static_cast<int>(info.world_size), options);
}

c10::intrusive_ptr<compat::CollectiveBackend> create_nccl(
    const c10::intrusive_ptr<c10d::Store>& store, const ProcessInfo& info, milliseconds timeout) {
  // ProcessGroupNCCL lives in libtorch_cuda, which only the CUDA module links (cuda_support.h).
  return require_cuda_support("--ddp_backend nccl")
      .create_nccl_backend(store, info.rank, info.world_size, info.local_rank, timeout);
}

}  // namespace

std::string resolve_backend(const std::optional<std::string>& requested,
                            const c10::Device& device) {
  const std::string backend = requested.value_or(device.is_cuda() ? "nccl" : "gloo");
  if (backend != "gloo" && backend != "nccl")
    throw ArgumentError("--ddp_backend " + backend + " is not available; use gloo or nccl");
#ifndef CTRAINER_WITH_CUDA
  if (backend == "nccl")
    throw ArgumentError("--ddp_backend nccl needs a CUDA build of ctrainer; use gloo on CPU");
#endif
  return backend;
}

namespace {
/// Time every thread of this process spent blocked in State::wait (all groups and subgroups).
std::atomic<int64_t> collective_wait_nanoseconds{0};
}  // namespace

double collective_wait_seconds() {
  return static_cast<double>(collective_wait_nanoseconds.load(std::memory_order_relaxed)) * 1e-9;
}

struct ProcessGroup::State {
  ProcessInfo info;
  ProcessGroupOptions options;
  std::string address;
  /// The TCP store seen through this attempt's key prefix (ProcessInfo::store_prefix()).
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<compat::CollectiveBackend> backend;
  /// A collective failed: peers are gone or out of step, so no further collective (including
  /// the final barrier) can succeed. Atomic: set from the thread that waits.
  std::atomic<bool> broken{false};
  /// Sequence number of all_gather_strings calls, so each call uses fresh store keys.
  int64_t string_gathers = 0;
  /// For a subgroup, " (subgroup of ranks 0,2)"; empty for the launch's group. For messages.
  std::string scope;
  /// The subgroups made of this group, by their members ("0,2"), in creation order (which is
  /// the same on every rank, so their final barriers match).
  std::vector<std::pair<std::string, std::unique_ptr<ProcessGroup>>> subgroups;

  /// Waits for `work`, turning a timeout or a lost peer into a DistributedError naming `what`.
  void wait(const char* what, const c10::intrusive_ptr<c10d::Work>& work) {
    const auto start = std::chrono::steady_clock::now();
    struct CountWait {
      std::chrono::steady_clock::time_point start;
      ~CountWait() {
        collective_wait_nanoseconds.fetch_add(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                                  std::chrono::steady_clock::now() - start)
                                                  .count(),
                                              std::memory_order_relaxed);
      }
    } count_wait{start};
    try {
      work->wait(options.timeout);
    } catch (const std::exception& error) {
      broken = true;
      throw DistributedError(std::string(what) + " failed on rank " + std::to_string(info.rank) +
                             " of " + std::to_string(info.world_size) + scope + " (" +
                             options.backend + ", timeout " + seconds(options.timeout) +
                             "): " + describe(error) +
                             ". A peer crashed or hung past --ddp_timeout; the process group "
                             "cannot be used any more");
    }
  }
};

void ignore_broken_pipes() {
  struct sigaction current {};
  if (::sigaction(SIGPIPE, nullptr, &current) != 0 || current.sa_handler != SIG_DFL) return;
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  ::sigemptyset(&ignore.sa_mask);
  ::sigaction(SIGPIPE, &ignore, nullptr);
}

ProcessGroup::ProcessGroup(const ProcessInfo& info, const ProcessGroupOptions& options)
    : state_(std::make_unique<State>()) {
  ignore_broken_pipes();
  if (options.backend != "gloo" && options.backend != "nccl")
    throw ArgumentError("process group backend '" + options.backend + "': use gloo or nccl");
  if (options.timeout <= milliseconds(0))
    throw ArgumentError("--ddp_timeout must be positive (it is in seconds)");
  state_->info = info;
  state_->options = options;
  state_->address = info.rendezvous_address();
  // Every key, ours and the backend's, lives under this attempt's prefix: torchrun's store
  // survives a restart, and Gloo would otherwise read the dead workers' addresses.
  state_->store = c10::make_intrusive<c10d::PrefixStore>(
      info.store_prefix(), open_store(info, state_->address, options.timeout));
  spdlog::debug("rendezvous store at {}, served by {}, keys under {}",
                endpoint(state_->address, info.master_port),
                info.use_agent_store ? "the launcher's agent" : "rank 0", info.store_prefix());
  wait_for_all_ranks(*state_->store, info, state_->address, options.timeout);
  try {
    state_->backend = options.backend == "nccl" ? create_nccl(state_->store, info, options.timeout)
                                                : create_gloo(state_->store, info, options.timeout);
  } catch (const ArgumentError&) {
    throw;
  } catch (const std::exception& error) {
    throw DistributedError("creating the " + options.backend + " process group (rank " +
                           std::to_string(info.rank) + " of " + std::to_string(info.world_size) +
                           ", store at " + endpoint(state_->address, info.master_port) +
                           ") failed: " + describe(error));
  }
}

ProcessGroup::ProcessGroup(std::unique_ptr<State> state) : state_(std::move(state)) {}

ProcessGroup& ProcessGroup::subgroup(const std::vector<int64_t>& members) {
  if (!state_->backend) throw DistributedError("subgroup of a process group that was shut down");
  std::string key;
  int64_t own_index = -1;
  for (std::size_t i = 0; i < members.size(); ++i) {
    const int64_t member = members[i];
    if (member < 0 || member >= state_->info.world_size || (i > 0 && member <= members[i - 1]))
      throw ArgumentError("process subgroup: members must be ascending ranks of 0.." +
                          std::to_string(state_->info.world_size - 1) + ", got " +
                          std::to_string(member) + " at position " + std::to_string(i));
    if (member == state_->info.rank) own_index = static_cast<int64_t>(i);
    key += (i > 0 ? "," : "") + std::to_string(member);
  }
  if (own_index < 0)
    throw ArgumentError("process subgroup of ranks " + key + ": rank " +
                        std::to_string(state_->info.rank) + " is not a member");
  for (auto& [members_key, group] : state_->subgroups)
    if (members_key == key) return *group;

  auto sub = std::make_unique<State>();
  sub->info = state_->info;  // keeps local_rank: NCCL's device
  sub->info.rank = own_index;
  sub->info.world_size = static_cast<int64_t>(members.size());
  sub->options = state_->options;
  sub->address = state_->address;
  sub->scope = " (subgroup of ranks " + key + state_->scope + ")";
  // The backend's own rendezvous runs among the members, under keys no other group uses.
  sub->store = c10::make_intrusive<c10d::PrefixStore>("ctrainer/subgroup/" + key, state_->store);
  try {
    sub->backend = state_->options.backend == "nccl"
                       ? create_nccl(sub->store, sub->info, state_->options.timeout)
                       : create_gloo(sub->store, sub->info, state_->options.timeout);
  } catch (const std::exception& error) {
    throw DistributedError("creating the " + state_->options.backend + " subgroup of ranks " + key +
                           " failed on rank " + std::to_string(state_->info.rank) + ": " +
                           describe(error) + ". Every member must create it, within --ddp_timeout");
  }
  state_->subgroups.emplace_back(key,
                                 std::unique_ptr<ProcessGroup>(new ProcessGroup(std::move(sub))));
  return *state_->subgroups.back().second;
}

ProcessGroup::~ProcessGroup() {
  try {
    shutdown();
  } catch (const std::exception& error) {
    spdlog::warn("process group teardown: {}", error.what());
  }
}

int64_t ProcessGroup::rank() const {
  return state_->info.rank;
}
int64_t ProcessGroup::world_size() const {
  return state_->info.world_size;
}
const std::string& ProcessGroup::backend() const {
  return state_->options.backend;
}
const ProcessInfo& ProcessGroup::process_info() const {
  return state_->info;
}

void ProcessGroup::barrier() {
  if (!state_->backend) throw DistributedError("barrier on a process group that was shut down");
  state_->wait("barrier", state_->backend->barrier());
}

namespace {

c10d::AllreduceOptions all_reduce_options(Reduction reduction) {
  c10d::AllreduceOptions options;
  switch (reduction) {
    case Reduction::kSum:
      options.reduceOp = c10d::ReduceOp::SUM;
      break;
    case Reduction::kAverage:
      options.reduceOp = c10d::ReduceOp::AVG;
      break;
    case Reduction::kMax:
      options.reduceOp = c10d::ReduceOp::MAX;
      break;
  }
  return options;
}

}  // namespace

void ProcessGroup::all_reduce(at::Tensor& tensor, Reduction reduction) {
  all_reduce_async(tensor, reduction).wait();
}

PendingCollective ProcessGroup::all_reduce_async(at::Tensor& tensor, Reduction reduction) {
  if (!state_->backend) throw DistributedError("all-reduce on a process group that was shut down");
  std::vector<at::Tensor> tensors{tensor};
  auto work = state_->backend->allreduce(tensors, all_reduce_options(reduction));
  State* state = state_.get();
  return PendingCollective([state, work = std::move(work)] { state->wait("all-reduce", work); });
}

namespace {

/// Throws ArgumentError unless `big` holds exactly `world_size` x `small`, both contiguous and
/// of one dtype and device (what c10d's *_tensor collectives require).
void require_chunked(const char* what, const at::Tensor& big, const at::Tensor& small,
                     int64_t world_size) {
  if (!big.is_contiguous() || !small.is_contiguous() || big.numel() != small.numel() * world_size ||
      big.scalar_type() != small.scalar_type() || big.device() != small.device())
    throw ArgumentError(std::string(what) + ": needs contiguous tensors of one dtype and device, " +
                        "the large one world_size (" + std::to_string(world_size) +
                        ") times the small one; got " + std::to_string(big.numel()) + " and " +
                        std::to_string(small.numel()) + " elements");
}

}  // namespace

PendingCollective ProcessGroup::reduce_scatter_async(at::Tensor& output, at::Tensor& input,
                                                     Reduction reduction) {
  if (!state_->backend)
    throw DistributedError("reduce-scatter on a process group that was shut down");
  require_chunked("reduce-scatter", input, output, state_->info.world_size);
  c10d::ReduceScatterOptions options;
  options.reduceOp = all_reduce_options(reduction).reduceOp;
  auto work = state_->backend->_reduce_scatter_base(output, input, options);
  State* state = state_.get();
  // The tensors ride along so that they outlive the collective even if the caller drops them.
  return PendingCollective(
      [state, work = std::move(work), output, input] { state->wait("reduce-scatter", work); });
}

PendingCollective ProcessGroup::all_gather_into_async(at::Tensor& output, at::Tensor& input) {
  if (!state_->backend) throw DistributedError("all-gather on a process group that was shut down");
  require_chunked("all-gather", output, input, state_->info.world_size);
  auto work = state_->backend->_allgather_base(output, input, c10d::AllgatherOptions());
  State* state = state_.get();
  return PendingCollective(
      [state, work = std::move(work), output, input] { state->wait("all-gather", work); });
}

void ProcessGroup::broadcast(at::Tensor& tensor, int64_t root) {
  if (!state_->backend) throw DistributedError("broadcast on a process group that was shut down");
  if (root < 0 || root >= state_->info.world_size)
    throw ArgumentError("broadcast root " + std::to_string(root) + " is not a rank of 0.." +
                        std::to_string(state_->info.world_size - 1));
  std::vector<at::Tensor> tensors{tensor};
  c10d::BroadcastOptions options;
  options.rootRank = root;
  state_->wait("broadcast", state_->backend->broadcast(tensors, options));
}

std::vector<at::Tensor> ProcessGroup::all_gather(const at::Tensor& tensor) {
  if (!state_->backend) throw DistributedError("all-gather on a process group that was shut down");
  // NCCL gathers device tensors only; Gloo works on host tensors.
  const at::Device wire_device =
      state_->options.backend == "nccl"
          ? at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(state_->info.local_rank))
          : at::Device(at::kCPU);
  std::vector<at::Tensor> input{tensor.to(wire_device).contiguous()};
  std::vector<std::vector<at::Tensor>> output(1);
  for (int64_t r = 0; r < state_->info.world_size; ++r)
    output[0].push_back(at::empty_like(input[0]));
  state_->wait("all-gather", state_->backend->allgather(output, input));
  for (auto& t : output[0]) t = t.to(tensor.device());
  return std::move(output[0]);
}

std::vector<std::string> ProcessGroup::all_gather_strings(const std::string& value) {
  if (!state_->store) throw DistributedError("all-gather on a process group that was shut down");
  const std::string prefix =
      "ctrainer/gather_strings/" + std::to_string(state_->string_gathers++) + "/";
  std::vector<std::string> values;
  try {
    state_->store->set(prefix + std::to_string(state_->info.rank),
                       std::vector<uint8_t>(value.begin(), value.end()));
    for (int64_t r = 0; r < state_->info.world_size; ++r) {
      const std::vector<uint8_t> bytes = state_->store->get(prefix + std::to_string(r));
      values.emplace_back(bytes.begin(), bytes.end());
    }
  } catch (const std::exception& error) {
    state_->broken = true;
    throw DistributedError("exchanging setup information through the store at " +
                           endpoint(state_->address, state_->info.master_port) +
                           " failed on rank " + std::to_string(state_->info.rank) + " of " +
                           std::to_string(state_->info.world_size) + ": " + describe(error) +
                           ". A peer exited or did not reach the same point within --ddp_timeout");
  }
  return values;
}

void ProcessGroup::abort() {
  if (!state_) return;
  for (auto& subgroup : state_->subgroups) subgroup.second->abort();
  state_->backend.reset();
  state_->store.reset();
}

void ProcessGroup::shutdown() {
  if (!state_ || !state_->backend) return;
  // Subgroups first, in creation order (the same on every rank), while the store still exists.
  for (auto& subgroup : state_->subgroups) {
    if (subgroup.second->state_->broken) state_->broken = true;
    if (state_->broken) break;
    try {
      subgroup.second->shutdown();
    } catch (const DistributedError&) {
      state_->broken = true;
    }
  }
  if (state_->broken) {
    abort();
    return;
  }
  // Release everything even when the final barrier fails (a peer is gone).
  struct Release {
    State& state;
    ~Release() {
      state.backend.reset();
      state.store.reset();
    }
  } release{*state_};
  state_->wait("final barrier", state_->backend->barrier());
}

}  // namespace ctrainer
