// ProcessInfo from the launch environment: torchrun > SLURM > OpenMPI > single process,
// torchrun's agent store and restart count, --local_rank, SLURM host lists and task counts, and
// errors naming the variable.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include <ctrainer/core/errors.h>
#include <ctrainer/distributed/launcher_error_file.h>
#include <ctrainer/distributed/process_group.h>
#include <ctrainer/distributed/process_info.h>
#include <ctrainer/distributed/slurm_hostlist.h>

namespace ctrainer {
namespace process_info_test {

using Vars = std::map<std::string, std::string>;

/// `fn` must throw an `Error` whose message contains `part`.
template <typename Error, typename Fn>
void expect_error(Fn&& fn, const std::string& part) {
  try {
    fn();
    ADD_FAILURE() << "no exception; expected one mentioning " << part;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

ProcessInfo from(const Vars& vars, int64_t local_rank_flag = -1) {
  return ProcessInfo::from_variables(
      [&](const std::string& name) -> std::optional<std::string> {
        const auto it = vars.find(name);
        if (it == vars.end() || it->second.empty()) return std::nullopt;
        return it->second;
      },
      local_rank_flag);
}

std::string error_of(const Vars& vars, int64_t local_rank_flag = -1) {
  try {
    from(vars, local_rank_flag);
  } catch (const ArgumentError& error) {
    return error.what();
  }
  return "<no error>";
}

const Vars kSlurm = {{"SLURM_PROCID", "5"},
                     {"SLURM_NTASKS", "8"},
                     {"SLURM_LOCALID", "1"},
                     {"SLURM_NODEID", "2"},
                     {"SLURM_NODELIST", "gpu[07-10]"},
                     {"SLURM_STEP_TASKS_PER_NODE", "2(x4)"},
                     {"SLURM_JOB_ID", "4321987"}};
const Vars kOpenMpi = {{"OMPI_COMM_WORLD_RANK", "3"},
                       {"OMPI_COMM_WORLD_SIZE", "4"},
                       {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                       {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}};

TEST(ProcessInfo, NoLauncherIsOneProcess) {
  const ProcessInfo info = from({});
  EXPECT_EQ(info.launched_by, LaunchEnvironment::kSingleProcess);
  EXPECT_EQ(info.rank, 0);
  EXPECT_EQ(info.world_size, 1);
  EXPECT_EQ(info.local_rank, 0);
  EXPECT_EQ(info.local_world_size, 1);
  EXPECT_FALSE(info.is_distributed());
  EXPECT_FALSE(info.master_addr.has_value());
  EXPECT_EQ(info.master_port, 29500);
  EXPECT_EQ(info.rendezvous_address(), "127.0.0.1");
}

TEST(ProcessInfo, TorchrunVariables) {
  const ProcessInfo info = from({{"RANK", "5"},
                                 {"WORLD_SIZE", "8"},
                                 {"LOCAL_RANK", "1"},
                                 {"LOCAL_WORLD_SIZE", "4"},
                                 {"GROUP_RANK", "1"},
                                 {"MASTER_ADDR", "node3"},
                                 {"MASTER_PORT", "1234"},
                                 {"TORCHELASTIC_RESTART_COUNT", "2"}});
  EXPECT_EQ(info.launched_by, LaunchEnvironment::kTorchrun);
  EXPECT_EQ(info.rank, 5);
  EXPECT_EQ(info.world_size, 8);
  EXPECT_EQ(info.local_rank, 1);
  EXPECT_EQ(info.local_world_size, 4);
  EXPECT_EQ(info.node_rank, 1);
  EXPECT_EQ(info.rendezvous_address(), "node3");
  EXPECT_EQ(info.master_port, 1234);
  EXPECT_EQ(info.restart_count, 2);
  EXPECT_TRUE(info.is_distributed());
}

TEST(ProcessInfo, TheEnvironmentTheRealTorchrunGives) {
  // What torch 2.15's torchrun --standalone --nproc_per_node 2 gave rank 1 after one restart
  // (recorded from a real run; torchrun's own variables besides the ones ctrainer reads
  // included, to show they are accepted).
  const ProcessInfo info = from({{"RANK", "1"},
                                 {"LOCAL_RANK", "1"},
                                 {"WORLD_SIZE", "2"},
                                 {"LOCAL_WORLD_SIZE", "2"},
                                 {"GROUP_RANK", "0"},
                                 {"GROUP_WORLD_SIZE", "1"},
                                 {"ROLE_RANK", "1"},
                                 {"ROLE_NAME", "default"},
                                 {"ROLE_WORLD_SIZE", "2"},
                                 {"MASTER_ADDR", "localhost"},
                                 {"MASTER_PORT", "35175"},
                                 {"TORCHELASTIC_RESTART_COUNT", "1"},
                                 {"TORCHELASTIC_MAX_RESTARTS", "1"},
                                 {"TORCHELASTIC_RUN_ID", "4abbffe4-b819-4fc4-a819-5c264fdba6e7"},
                                 {"TORCHELASTIC_USE_AGENT_STORE", "True"},
                                 {"TORCHELASTIC_ERROR_FILE", "/tmp/x/attempt_1/1/error.json"},
                                 {"TORCH_NCCL_ASYNC_ERROR_HANDLING", "1"},
                                 {"OMP_NUM_THREADS", "1"}});
  EXPECT_EQ(info.launched_by, LaunchEnvironment::kTorchrun);
  EXPECT_EQ(info.rank, 1);
  EXPECT_EQ(info.world_size, 2);
  EXPECT_EQ(info.local_rank, 1);
  EXPECT_EQ(info.local_world_size, 2);
  EXPECT_EQ(info.node_rank, 0);
  EXPECT_EQ(info.rendezvous_address(), "localhost");
  EXPECT_EQ(info.master_port, 35175);
  EXPECT_EQ(info.restart_count, 1);
  EXPECT_TRUE(info.use_agent_store);  // every rank, rank 0 too, is a client of the agent's store
  EXPECT_EQ(info.store_prefix(), "/worker/attempt_1");
}

TEST(ProcessInfo, AgentStoreIsReadAsTorchrunWritesIt) {
  const Vars base = {
      {"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", "29400"}};
  EXPECT_FALSE(from(base).use_agent_store);  // unset: rank 0 hosts the store
  // ...new in every attempt: the prefix does not depend on the restart count, which torchrun
  // keeps per node (a node that joins an elastic job later counts from 0).
  Vars restarted = base;
  restarted["TORCHELASTIC_RESTART_COUNT"] = "3";
  EXPECT_EQ(from(base).store_prefix(), "/worker");
  EXPECT_EQ(from(restarted).store_prefix(), "/worker");
  Vars vars = base;
  vars["TORCHELASTIC_USE_AGENT_STORE"] = "False";  // ctrainer-run
  EXPECT_FALSE(from(vars).use_agent_store);
  vars["TORCHELASTIC_USE_AGENT_STORE"] = "True";  // torchrun
  EXPECT_TRUE(from(vars).use_agent_store);
  EXPECT_EQ(from(vars).store_prefix(), "/worker/attempt_0");
  // Other spellings are refused rather than read as False (torch's reading) or True.
  for (const char* bad : {"true", "1", "yes"}) {
    vars["TORCHELASTIC_USE_AGENT_STORE"] = bad;
    EXPECT_NE(
        error_of(vars).find(std::string("environment variable TORCHELASTIC_USE_AGENT_STORE='") +
                            bad + "' must be True or False"),
        std::string::npos)
        << bad;
  }
  // The agent's store is at MASTER_ADDR:MASTER_PORT; without them nobody can find it.
  for (const char* missing : {"MASTER_ADDR", "MASTER_PORT"}) {
    Vars without = base;
    without.erase(missing);
    without["TORCHELASTIC_USE_AGENT_STORE"] = "True";
    EXPECT_NE(error_of(without).find(std::string("TORCHELASTIC_USE_AGENT_STORE=True but ") +
                                     missing + " is not set"),
              std::string::npos)
        << missing;
  }
  // Only torchrun's environment carries it: a leftover variable does not turn a SLURM job's
  // rank 0 into a client of a store nobody serves.
  Vars slurm = kSlurm;
  slurm["TORCHELASTIC_USE_AGENT_STORE"] = "True";
  EXPECT_FALSE(from(slurm).use_agent_store);
}

TEST(ProcessInfo, TorchrunWinsOverSlurmAndOpenMpi) {
  Vars vars = kSlurm;
  vars.insert(kOpenMpi.begin(), kOpenMpi.end());
  vars.insert({{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "1"}, {"LOCAL_WORLD_SIZE", "2"}});
  const ProcessInfo info = from(vars);
  EXPECT_EQ(info.launched_by, LaunchEnvironment::kTorchrun);
  EXPECT_EQ(info.rank, 1);
  EXPECT_EQ(info.world_size, 2);
  // MASTER_ADDR is not guessed from SLURM when torchrun describes the job.
  EXPECT_EQ(info.rendezvous_address(), "127.0.0.1");
}

TEST(ProcessInfo, SlurmVariables) {
  const ProcessInfo info = from(kSlurm);
  EXPECT_EQ(info.launched_by, LaunchEnvironment::kSlurm);
  EXPECT_EQ(info.rank, 5);
  EXPECT_EQ(info.world_size, 8);
  EXPECT_EQ(info.local_rank, 1);
  EXPECT_EQ(info.local_world_size, 2);
  EXPECT_EQ(info.node_rank, 2);
  EXPECT_EQ(info.rendezvous_address(), "gpu07");  // first host of the node list
  EXPECT_EQ(info.master_port, 15000 + 1987);      // derived from the job id
}

TEST(ProcessInfo, SlurmKeepsExplicitMasterAddrAndPort) {
  Vars vars = kSlurm;
  vars["MASTER_ADDR"] = "10.0.0.9";
  vars["MASTER_PORT"] = "30000";
  const ProcessInfo info = from(vars);
  EXPECT_EQ(info.rendezvous_address(), "10.0.0.9");
  EXPECT_EQ(info.master_port, 30000);
}

TEST(ProcessInfo, SlurmWinsOverOpenMpi) {
  Vars vars = kSlurm;
  vars.insert(kOpenMpi.begin(), kOpenMpi.end());
  EXPECT_EQ(from(vars).launched_by, LaunchEnvironment::kSlurm);
}

TEST(ProcessInfo, OpenMpiVariables) {
  const ProcessInfo info = from(kOpenMpi);
  EXPECT_EQ(info.launched_by, LaunchEnvironment::kOpenMpi);
  EXPECT_EQ(info.rank, 3);
  EXPECT_EQ(info.world_size, 4);
  EXPECT_EQ(info.local_rank, 1);
  EXPECT_EQ(info.local_world_size, 2);
  EXPECT_EQ(info.node_rank, 1);
  // Two nodes and no MASTER_ADDR: nobody can know rank 0's host.
  expect_error<ArgumentError>([&] { (void)info.rendezvous_address(); },
                              "MASTER_ADDR is not set but the job spans several nodes");
}

TEST(ProcessInfo, LocalRankFlagIsUsedOnlyWithoutLocalRankVariable) {
  // torch.distributed.launch without --use-env: RANK/WORLD_SIZE in the environment,
  // the local rank as --local_rank.
  EXPECT_EQ(from({{"RANK", "3"}, {"WORLD_SIZE", "4"}, {"LOCAL_WORLD_SIZE", "2"}}, 1).local_rank, 1);
  EXPECT_EQ(
      from({{"RANK", "3"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "1"}, {"LOCAL_WORLD_SIZE", "2"}}, 0)
          .local_rank,
      1);
  EXPECT_EQ(from({}, 0).local_rank, 0);
  EXPECT_NE(error_of({}, 1).find("--local_rank 1 without a launcher"), std::string::npos);
}

TEST(ProcessInfo, BadValuesNameTheVariable) {
  EXPECT_NE(error_of({{"RANK", "x"}, {"WORLD_SIZE", "2"}}).find("environment variable RANK='x'"),
            std::string::npos);
  EXPECT_NE(error_of({{"RANK", "2"}, {"WORLD_SIZE", "2"}})
                .find("RANK=2 / WORLD_SIZE=2 (from torchrun) is inconsistent"),
            std::string::npos);
  EXPECT_NE(error_of({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "0"}})
                .find("SLURM_PROCID=0 / SLURM_NTASKS=0 (from SLURM) is inconsistent"),
            std::string::npos);
  EXPECT_NE(error_of({{"MASTER_PORT", "70000"}}).find("MASTER_PORT=70000"), std::string::npos);
  EXPECT_NE(error_of({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"TORCHELASTIC_RESTART_COUNT", "-1"}})
                .find("TORCHELASTIC_RESTART_COUNT=-1 must be >= 0"),
            std::string::npos);
  EXPECT_NE(error_of({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_WORLD_SIZE", "3"}})
                .find("a node cannot hold more processes than the job"),
            std::string::npos);
  Vars bad_list = kSlurm;
  bad_list["SLURM_NODELIST"] = "gpu[07-10";
  EXPECT_NE(error_of(bad_list).find("cannot parse SLURM node list 'gpu[07-10'"), std::string::npos);
}

TEST(LauncherErrorFile, WritesTheLayoutTorchrunReads) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("ctrainer_error_file_" + std::to_string(::getpid()) + ".json");
  std::filesystem::remove(path);
  ::unsetenv("TORCHELASTIC_ERROR_FILE");
  record_error_for_launcher("not written");  // no launcher asked for it
  EXPECT_FALSE(std::filesystem::exists(path));

  ::setenv("TORCHELASTIC_ERROR_FILE", path.c_str(), 1);
  record_error_for_launcher("--learning_rate 'x' is not a number");
  ::unsetenv("TORCHELASTIC_ERROR_FILE");
  std::ifstream in(path);
  const auto data = nlohmann::json::parse(in);
  // torchrun's ProcessFailure reads message.message, message.extraInfo.py_callstack (printed
  // in its summary) and int(message.extraInfo.timestamp).
  const auto& message = data.at("message");
  EXPECT_EQ(message.at("message"), "--learning_rate 'x' is not a number");
  EXPECT_EQ(message.at("extraInfo").at("py_callstack"), "--learning_rate 'x' is not a number");
  const std::string timestamp = message.at("extraInfo").at("timestamp");
  EXPECT_GT(std::stoll(timestamp), 1700000000);  // seconds since 1970, written as a string
  std::filesystem::remove(path);
}

TEST(SlurmHostlist, FirstHost) {
  EXPECT_EQ(first_slurm_host("node[01-04,07]"), "node01");
  EXPECT_EQ(first_slurm_host("node[7,1-3]"), "node7");
  EXPECT_EQ(first_slurm_host("alpha,beta"), "alpha");
  EXPECT_EQ(first_slurm_host("single"), "single");
  EXPECT_EQ(first_slurm_host("rack[2-3]-gpu[005,9]"), "rack2-gpu005");
  EXPECT_EQ(first_slurm_host("a[1-2],b[3-4]"), "a1");
  for (const char* bad : {"", "node[", "node]1", "[]", ",a"})
    expect_error<ArgumentError>([&] { first_slurm_host(bad); }, "cannot parse SLURM node list");
}

TEST(SlurmHostlist, TasksPerNode) {
  EXPECT_EQ(expand_slurm_tasks_per_node("2(x3),1"), (std::vector<int64_t>{2, 2, 2, 1}));
  EXPECT_EQ(expand_slurm_tasks_per_node("4"), (std::vector<int64_t>{4}));
  EXPECT_EQ(expand_slurm_tasks_per_node("1,3(x2)"), (std::vector<int64_t>{1, 3, 3}));
  for (const char* bad : {"", "2(3)", "x", "2(x)", "2(x3"})
    expect_error<ArgumentError>([&] { expand_slurm_tasks_per_node(bad); },
                                "cannot parse SLURM tasks per node");
}

TEST(ProcessGroupBackend, FollowsTheDeviceUnlessRequested) {
  EXPECT_EQ(resolve_backend(std::nullopt, c10::Device(c10::kCPU)), "gloo");
  EXPECT_EQ(resolve_backend(std::string("gloo"), c10::Device(c10::kCPU)), "gloo");
  expect_error<ArgumentError>([] { resolve_backend(std::string("mpi"), c10::Device(c10::kCPU)); },
                              "--ddp_backend mpi is not available");
#ifndef CTRAINER_WITH_CUDA
  expect_error<ArgumentError>([] { resolve_backend(std::string("nccl"), c10::Device(c10::kCPU)); },
                              "--ddp_backend nccl needs a CUDA build");
#endif
}

TEST(ProcessGroup, SingleRankGroupWorksWithoutPeers) {
  // World size 1 on a free port: rendezvous, collectives (identity) and teardown.
  ProcessInfo info;
  info.master_addr = "127.0.0.1";
  info.master_port = 0;  // 0: the store server picks a free port
  ProcessGroupOptions options;
  options.timeout = std::chrono::seconds(30);
  ProcessGroup group(info, options);
  at::Tensor t = at::tensor({1.5, -2.0}, at::kDouble);
  group.all_reduce(t);
  group.broadcast(t, 0);
  group.barrier();
  EXPECT_EQ(t[0].item<double>(), 1.5);
  EXPECT_EQ(t[1].item<double>(), -2.0);
  expect_error<ArgumentError>([&] { group.broadcast(t, 1); }, "broadcast root 1");
  group.shutdown();
  expect_error<DistributedError>([&] { group.barrier(); }, "shut down");
}

}  // namespace process_info_test
}  // namespace ctrainer
