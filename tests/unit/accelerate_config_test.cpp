// ctrainer-run --config_file: accelerate's config file (the keys `accelerate config` writes),
// its process layout mapped to torchrun's flags as accelerate's prepare_multi_gpu_env maps it,
// flags given on the command line winning, and every value ctrainer-run cannot carry out
// refused by key. (tests/parity/accelerate_config_vs_accelerate.py checks the same mapping
// against the real accelerate package.)
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <ctrainer/distributed/launcher/accelerate_config.h>
#include <ctrainer/distributed/launcher/launch_options.h>

#include "support/expect_error.h"

namespace ctrainer::launcher {
namespace accelerate_config_test {

namespace fs = std::filesystem;
using ctrainer::testing::expect_error;

AccelerateConfig parse(const std::string& text) {
  return parse_accelerate_config(text, "cfg.yaml");
}

/// Writes `text` to a file of this test and parses `ctrainer-run --config_file FILE [flags] prog`.
LaunchOptions launch(const std::string& text, std::vector<std::string> flags = {}) {
  const fs::path path = fs::temp_directory_path() /
                        ("ctrainer_accelerate_config_" + std::to_string(::getpid()) + ".yaml");
  std::ofstream(path) << text;
  std::vector<std::string> arguments = {"--config_file", path.string()};
  arguments.insert(arguments.end(), flags.begin(), flags.end());
  arguments.push_back("prog");
  const auto parsed = parse_launch_command_line(
      arguments, [](const std::string&) -> std::optional<std::string> { return std::nullopt; });
  fs::remove(path);
  EXPECT_TRUE(parsed.options.has_value());
  return parsed.options.value_or(LaunchOptions{});
}

// What `accelerate config` writes for two CPU machines with two processes each (this machine is
// the second), with the quoting PyYAML's safe_dump uses.
const std::string kTwoCpuMachines = R"(compute_environment: LOCAL_MACHINE
debug: false
distributed_type: MULTI_CPU
downcast_bf16: 'no'
enable_cpu_affinity: false
machine_rank: 1
main_process_ip: 10.0.0.1
main_process_port: 29555
main_training_function: main
mixed_precision: 'no'
mpirun_config: {}
num_machines: 2
num_processes: 4
rdzv_backend: static
same_network: true
tpu_env: []
tpu_use_cluster: false
tpu_use_sudo: false
use_cpu: false
)";

TEST(AccelerateConfig, TwoCpuMachinesGiveTorchrunsLayout) {
  const LaunchOptions options = launch(kTwoCpuMachines);
  EXPECT_EQ(options.nnodes, 2);
  EXPECT_EQ(options.node_rank, 1);
  EXPECT_EQ(options.nproc_per_node, 2);  // num_processes counts all machines
  EXPECT_EQ(options.master_addr, "10.0.0.1");
  EXPECT_EQ(options.master_port, 29555);
  EXPECT_FALSE(options.standalone);
  // MULTI_CPU: the workers get accelerate's variables, and train on the CPU.
  EXPECT_EQ(options.extra_environment,
            (std::map<std::string, std::string>{{"ACCELERATE_MIXED_PRECISION", "no"},
                                                {"ACCELERATE_USE_CPU", "True"}}));
}

TEST(AccelerateConfig, FlagsGivenWinOverTheFile) {
  const LaunchOptions options =
      launch(kTwoCpuMachines, {"--node_rank", "0", "--master-addr", "10.9.9.9", "--master_port",
                               "4000", "--nproc-per-node", "3"});
  EXPECT_EQ(options.nnodes, 2);
  EXPECT_EQ(options.node_rank, 0);
  EXPECT_EQ(options.master_addr, "10.9.9.9");
  EXPECT_EQ(options.master_port, 4000);
  EXPECT_EQ(options.nproc_per_node, 3);
  // --nnodes given: num_processes is shared over its machines.
  EXPECT_EQ(launch(kTwoCpuMachines, {"--nnodes", "4", "--node-rank", "3"}).nproc_per_node, 1);
  const LaunchOptions endpoint = launch(kTwoCpuMachines, {"--rdzv-endpoint", "node7:4242"});
  EXPECT_EQ(endpoint.master_addr, "node7");
  EXPECT_EQ(endpoint.master_port, 4242);
}

TEST(AccelerateConfig, GpuIdsPortZeroAndJson) {
  const LaunchOptions gpus =
      launch("distributed_type: MULTI_GPU\nnum_processes: 2\ngpu_ids: 0,3\nmain_process_port: 0\n");
  EXPECT_EQ(gpus.nproc_per_node, 2);
  EXPECT_TRUE(gpus.standalone);  // port 0: a free port on this machine
  EXPECT_EQ(gpus.master_addr, "127.0.0.1");
  EXPECT_EQ(gpus.extra_environment.at("CUDA_VISIBLE_DEVICES"), "0,3");
  EXPECT_EQ(gpus.extra_environment.count("ACCELERATE_USE_CPU"), 0u);
  EXPECT_EQ(parse("distributed_type: MULTI_GPU\ngpu_ids: [1, 2]\n").gpu_ids, "1,2");
  EXPECT_FALSE(parse("distributed_type: MULTI_GPU\ngpu_ids: all\n").gpu_ids.has_value());
  // use_cpu on a MULTI_GPU file: the programs read ACCELERATE_USE_CPU as --use_cpu.
  EXPECT_EQ(parse("distributed_type: MULTI_GPU\nuse_cpu: true\n")
                .worker_environment()
                .at("ACCELERATE_USE_CPU"),
            "True");
  // mixed_precision reaches the programs, which read it as HF's TrainingArguments does; the old
  // fp16 key counts only without mixed_precision.
  EXPECT_EQ(parse("distributed_type: MULTI_CPU\nmixed_precision: bf16\n")
                .worker_environment()
                .at("ACCELERATE_MIXED_PRECISION"),
            "bf16");
  EXPECT_EQ(parse("distributed_type: MULTI_CPU\nfp16: true\n").mixed_precision, "fp16");
  EXPECT_EQ(
      parse("distributed_type: MULTI_CPU\nfp16: true\nmixed_precision: 'no'\n").mixed_precision,
      "no");
  // accelerate's write_basic_config writes JSON; NO runs one process.
  const LaunchOptions json = launch(R"({"compute_environment": "LOCAL_MACHINE", "debug": false,
    "distributed_type": "NO", "mixed_precision": "no", "num_machines": 1, "num_processes": 1,
    "use_cpu": false, "rdzv_backend": "static", "same_network": false})");
  EXPECT_EQ(json.nproc_per_node, 1);
  EXPECT_EQ(json.nnodes, 1);
  EXPECT_EQ(launch("distributed_type: NO\n").nproc_per_node, 1);
  // PyYAML reads a bare no as false; accelerate's own files quote it.
  EXPECT_EQ(
      parse("distributed_type: MULTI_CPU\nmixed_precision: no\nnum_processes: 2\n").num_processes,
      2);
}

// HF's FSDP example: the variables accelerate launch exports for it (prepare_multi_gpu_env, with
// launch's defaults for the keys not given), which the programs read as accelerate's plugin.
TEST(AccelerateConfig, FsdpConfigBecomesAcceleratesVariables) {
  const auto env = parse(R"(distributed_type: FSDP
num_processes: 2
fsdp_config:
  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP
  fsdp_backward_prefetch_policy: BACKWARD_PRE
  fsdp_forward_prefetch: true
  fsdp_offload_params: false
  fsdp_sharding_strategy: 1
  fsdp_state_dict_type: FULL_STATE_DICT
  fsdp_sync_module_states: true
  transformer_layer_cls_to_wrap: BertLayer
  fsdp_use_orig_params: yes
)")
                       .worker_environment();
  EXPECT_EQ(env, (std::map<std::string, std::string>{
                     {"ACCELERATE_MIXED_PRECISION", "no"},
                     {"ACCELERATE_USE_FSDP", "true"},
                     {"FSDP_VERSION", "1"},
                     {"FSDP_SHARDING_STRATEGY", "1"},
                     {"FSDP_RESHARD_AFTER_FORWARD", "true"},
                     {"FSDP_OFFLOAD_PARAMS", "false"},
                     {"FSDP_MIN_NUM_PARAMS", "100000000"},
                     {"FSDP_AUTO_WRAP_POLICY", "TRANSFORMER_BASED_WRAP"},
                     {"FSDP_TRANSFORMER_CLS_TO_WRAP", "BertLayer"},
                     {"FSDP_STATE_DICT_TYPE", "FULL_STATE_DICT"},
                     {"FSDP_FORWARD_PREFETCH", "true"},
                     {"FSDP_USE_ORIG_PARAMS", "true"},
                     {"FSDP_CPU_RAM_EFFICIENT_LOADING", "true"},
                     {"FSDP_SYNC_MODULE_STATES", "true"},
                     {"FSDP_ACTIVATION_CHECKPOINTING", "false"},
                     {"FSDP_ACTIVATION_CHECKPOINTING_OFFLOAD", "false"}}));
}

TEST(AccelerateConfig, DeepSpeedConfigBecomesAcceleratesVariables) {
  // HF's ZeRO-3 example, keys in the file's order; values as Python's str() writes what PyYAML
  // read (parity.accelerate_config_vs_accelerate checks more against accelerate itself).
  const AccelerateConfig config = parse(
      "distributed_type: DEEPSPEED\nnum_processes: 2\nmixed_precision: bf16\n"
      "deepspeed_config:\n  zero_stage: 3\n  gradient_accumulation_steps: 2\n"
      "  gradient_clipping: 1\n  offload_optimizer_device: CPU\n  zero3_init_flag: yes\n"
      "  zero3_save_16bit_model: 'True'\n  offload_param_nvme_path: /nvme\n"
      "  deepspeed_config_file: null\n");
  const std::map<std::string, std::string> expected = {
      {"ACCELERATE_MIXED_PRECISION", "bf16"},
      {"ACCELERATE_USE_DEEPSPEED", "true"},
      {"ACCELERATE_CONFIG_DS_FIELDS",
       "zero_stage,gradient_accumulation_steps,gradient_clipping,offload_optimizer_device,"
       "zero3_init_flag,zero3_save_16bit_model,offload_param_nvme_path,deepspeed_config_file,"
       "mixed_precision"},
      {"ACCELERATE_DEEPSPEED_ZERO_STAGE", "3"},
      {"ACCELERATE_GRADIENT_ACCUMULATION_STEPS", "2"},
      {"ACCELERATE_GRADIENT_CLIPPING", "1"},
      {"ACCELERATE_DEEPSPEED_OFFLOAD_OPTIMIZER_DEVICE", "cpu"},
      {"ACCELERATE_DEEPSPEED_ZERO3_INIT", "true"},
      {"ACCELERATE_DEEPSPEED_ZERO3_SAVE_16BIT_MODEL", "true"}};
  EXPECT_EQ(config.worker_environment(), expected);
  // Python's repr() of YAML floats.
  const auto clipping = [](const std::string& value) {
    return parse("distributed_type: DEEPSPEED\ndeepspeed_config: {gradient_clipping: " + value +
                 "}\n")
        .worker_environment()
        .at("ACCELERATE_GRADIENT_CLIPPING");
  };
  EXPECT_EQ(clipping("1.0"), "1.0");
  EXPECT_EQ(clipping("0.00001"), "1e-05");
  EXPECT_EQ(clipping("1_000.5"), "1000.5");
  EXPECT_EQ(clipping("1e3"), "1e3");  // no dot: a string to YAML 1.1
  EXPECT_EQ(clipping("12345678901234567.0"), "1.2345678901234568e+16");
}

TEST(AccelerateConfig, ValuesItCannotCarryOutAreRefusedByKey) {
  const std::string cpu = "distributed_type: MULTI_CPU\nnum_processes: 2\n";
  expect_error([&] { parse(cpu + "mixed_precision: fp8\n"); },
               {"cfg.yaml:3: mixed_precision: not supported yet", "use bf16"});
  expect_error([&] { parse(cpu + "mixed_precision: half\n"); },
               {"mixed_precision: expected no, fp16, bf16 or fp8, got 'half'"});
  expect_error([] { parse("distributed_type: FSDP\nfsdp_config: {fsdp_shard_strategy: 1}\n"); },
               {"cfg.yaml:2: fsdp_config: fsdp_shard_strategy is not a key of accelerate's FSDP"});
  expect_error(
      [] { parse("distributed_type: FSDP\nfsdp_config:\n  fsdp_sync_module_states: false\n"); },
      {"fsdp_cpu_ram_efficient_loading needs fsdp_sync_module_states: true"});
  expect_error([] { parse("distributed_type: DEEPSPEED\ndeepspeed_config: {zero_stages: 3}\n"); },
               {"deepspeed_config: zero_stages is not a key of accelerate's DeepSpeed settings"});
  expect_error(
      [] {
        parse(
            "distributed_type: DEEPSPEED\nnum_processes: 4\nnum_machines: 2\n"
            "main_process_ip: 10.0.0.1\ndeepspeed_config: {zero_stage: 2}\n");
      },
      {"deepspeed_multinode_launcher pdsh", "standard"});
  expect_error([] { parse("distributed_type: DEEPSPEED\nuse_cpu: true\n"); },
               {"DEEPSPEED with use_cpu: true"});
  expect_error([] { parse("distributed_type: XLA\n"); }, {"XLA is not available"});
  expect_error([] { parse("distributed_type: MULTI_TPU\n"); },
               {"expected NO, MULTI_CPU, MULTI_GPU, FSDP or DEEPSPEED", "'MULTI_TPU'"});
  expect_error([&] { parse(cpu + "rdzv_backend: c10d\n"); },
               {"rdzv_backend: not supported yet", "reads a static layout from this file"});
  expect_error([&] { parse(cpu + "dynamo_config: {dynamo_backend: INDUCTOR}\n"); },
               {"dynamo_config: not supported yet"});
  expect_error([&] { parse(cpu + "mpirun_config: {mpirun_hostfile: hosts}\n"); },
               {"mpirun_config: not supported yet", "mpirun directly"});
  expect_error([&] { parse(cpu + "debug: true\n"); }, {"debug: not supported yet"});
  expect_error([&] { parse(cpu + "tpu_name: t\n"); }, {"tpu_name: not supported yet", "TPU"});
  expect_error([&] { parse(cpu + "compute_environment: AMAZON_SAGEMAKER\n"); },
               {"compute_environment: not supported yet", "SM_HOSTS"});
  // A section accelerate reads only for another distributed_type is ignored, as accelerate does.
  EXPECT_EQ(parse(cpu + "fsdp_config: {fsdp_offload_params: true}\n").distributed_type,
            "MULTI_CPU");
}

TEST(AccelerateConfig, BadFilesNameTheKeyOrPosition) {
  expect_error(
      [] { parse("distributed_type: MULTI_CPU\nnum_proceses: 2\n"); },
      {"cfg.yaml:2: num_proceses: not a key of accelerate's config file", "num_processes"});
  expect_error([] { parse("num_processes: 2\n"); }, {"no distributed_type"});
  expect_error([] { parse("distributed_type: MULTI_CPU\nnum_processes: two\n"); },
               {"cfg.yaml:2: num_processes: expected a whole number", "'two'"});
  expect_error([] { parse("distributed_type: MULTI_CPU\nnum_processes: 0\n"); },
               {"num_processes: expected a positive number"});
  expect_error([] { parse("distributed_type: MULTI_CPU\nmain_process_port: 70000\n"); },
               {"main_process_port: expected a whole number in [0, 65535]"});
  expect_error([] { parse("distributed_type: MULTI_CPU\nuse_cpu: maybe\n"); },
               {"use_cpu: expected true or false"});
  expect_error([] { parse("distributed_type: MULTI_GPU\ngpu_ids: 0,x\n"); },
               {"gpu_ids: expected all or GPU indices", "'x'"});
  expect_error([] { parse("distributed_type: MULTI_CPU\ndistributed_type: NO\n"); },
               {"distributed_type: given twice"});
  expect_error([] { parse("distributed_type: [MULTI_CPU\n"); },
               {"cfg.yaml:", "not valid YAML or JSON"});
  expect_error([] { parse(""); }, {"cfg.yaml: the file is empty"});
  expect_error([] { parse("- MULTI_CPU\n"); }, {"expected keys such as distributed_type"});
  expect_error([] { parse("distributed_type: NO\nnum_processes: 2\n"); },
               {"distributed_type NO starts one process"});
  expect_error([] { parse("x: " + std::string(100, '[')); }, {"nested more than 64 levels"});
  expect_error([] { read_accelerate_config("/nonexistent/cfg.yaml"); },
               {"--config_file /nonexistent/cfg.yaml: cannot be read"});
}

TEST(AccelerateConfig, LayoutsThatCannotStartAreRefused) {
  expect_error([] { launch("distributed_type: MULTI_CPU\n"); },
               {"no num_processes", "--nproc-per-node"});
  expect_error([] { launch("distributed_type: MULTI_CPU\nnum_processes: -1\n"); },
               {"no num_processes"});
  expect_error(
      [] {
        launch(
            "distributed_type: MULTI_CPU\nnum_processes: 3\nnum_machines: 2\n"
            "main_process_ip: h\n");
      },
      {"num_processes 3 is not a multiple of the 2 machines"});
  expect_error([] { launch("distributed_type: MULTI_CPU\nnum_processes: 4\nnum_machines: 2\n"); },
               {"2 machines need main_process_ip"});
  expect_error(
      [] {
        launch(
            "distributed_type: MULTI_CPU\nnum_processes: 4\nnum_machines: 2\n"
            "main_process_ip: h\nmain_process_port: 0\n");
      },
      {"main_process_port 0 picks a free port on one machine"});
  expect_error(
      [] {
        launch(
            "distributed_type: MULTI_CPU\nnum_processes: 4\nnum_machines: 2\n"
            "main_process_ip: h\nmachine_rank: 2\n");
      },
      {"--node-rank 2 is not in 0..--nnodes-1"});
}

}  // namespace accelerate_config_test
}  // namespace ctrainer::launcher
