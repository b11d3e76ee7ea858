#pragma once
/// \file accelerate's config file (`accelerate config` writes it; `accelerate launch
/// --config_file X.yaml` reads it), read by `ctrainer-run --config_file` so that a machine
/// without Python launches from the same file.
///
/// ctrainer-run takes the process layout from it (distributed_type NO, MULTI_CPU, MULTI_GPU, FSDP
/// or DEEPSPEED; num_processes, num_machines, machine_rank, main_process_ip, main_process_port,
/// gpu_ids) and passes mixed_precision, use_cpu, fsdp_config and deepspeed_config to the workers
/// as accelerate launch does; it refuses, naming the key, every value whose meaning it cannot
/// carry out yet (fp8, dynamo, TPU, elastic rendezvous, DeepSpeed's ssh launchers, ...). A key
/// accelerate does not know is refused as accelerate refuses it.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ctrainer::launcher {

/// The launch layout of an accelerate config file. Each field is set only when the file gives
/// the key (so that a flag or a default fills the rest).
struct AccelerateConfig {
  std::string source;            ///< the file, for messages
  std::string distributed_type;  ///< NO, MULTI_CPU, MULTI_GPU, FSDP or DEEPSPEED
  /// Processes over all machines (accelerate's num_processes); unset when the file leaves it
  /// out or writes -1 ("pass --num_processes").
  std::optional<int64_t> num_processes;
  std::optional<int64_t> num_machines;
  std::optional<int64_t> machine_rank;
  std::optional<std::string> main_process_ip;
  /// 0 asks for a free port (one machine only), as accelerate's main_process_port: 0 does.
  std::optional<int> main_process_port;
  /// gpu_ids other than "all": the workers' CUDA_VISIBLE_DEVICES, as accelerate sets it.
  std::optional<std::string> gpu_ids;
  /// use_cpu: true (or distributed_type MULTI_CPU): the workers train on the CPU.
  bool use_cpu = false;
  std::string mixed_precision = "no";  ///< no, fp16 or bf16 (mixed_precision, or the old fp16)
  /// fsdp_config's values as written (read with distributed_type FSDP), and its line.
  std::map<std::string, std::string> fsdp_config;
  int64_t fsdp_config_line = 0;
  /// deepspeed_config's keys in the file's order, each with its value as Python's str() gives
  /// it for what PyYAML reads (True, 1.0, 3, text; null: unset), and its line.
  std::vector<std::pair<std::string, std::optional<std::string>>> deepspeed_config;
  int64_t deepspeed_config_line = 0;

  /// Variables accelerate launch gives each process for these keys, which ctrainer's programs
  /// read as HF's TrainingArguments reads them: ACCELERATE_MIXED_PRECISION, ACCELERATE_USE_CPU
  /// (True when use_cpu), CUDA_VISIBLE_DEVICES (gpu_ids), and for distributed_type FSDP
  /// ACCELERATE_USE_FSDP with the FSDP_* variables of fsdp_config, as prepare_multi_gpu_env writes
  /// them (launch's defaults for the keys not given), and for DEEPSPEED ACCELERATE_USE_DEEPSPEED,
  /// ACCELERATE_CONFIG_DS_FIELDS and the ACCELERATE_DEEPSPEED_* / ACCELERATE_GRADIENT_* variables
  /// of deepspeed_config, as prepare_deepspeed_cmd_env writes them. Throws ArgumentError for an
  /// fsdp_config or deepspeed_config key accelerate does not know.
  std::map<std::string, std::string> worker_environment() const;
};

/// Parses the text of an accelerate config file: YAML, or JSON (a YAML subset; accelerate reads
/// a .json file with json.load). `source` names the file in messages. Throws ArgumentError
/// naming the file, the key (or line and column for a syntax error) and the fix.
AccelerateConfig parse_accelerate_config(std::string_view text, const std::string& source);

/// Reads and parses the file at `path` (ArgumentError when it cannot be read).
AccelerateConfig read_accelerate_config(const std::string& path);

}  // namespace ctrainer::launcher
