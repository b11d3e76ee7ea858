// run_glue as a SageMaker job starts it: no --output_dir or data flags, the hyperparameters in
// SM_HPS, the data in the train and eval channels. The model lands in SM_MODEL_DIR, the results
// also in SM_OUTPUT_DATA_DIR, the hyperparameters take effect, a command-line flag wins over its
// hyperparameter, and --plot draws the curves next to the model. A malformed SM_HPS stops the
// run before anything is written. A managed spot job (checkpoint_s3_uri: SageMaker's
// checkpointconfig.json), in a local-mode container's environment, stopped as spot capacity is
// taken back (SIGTERM) and started again with the same environment, resumes from its checkpoint
// folder on its own and ends with the model of an uninterrupted job. A data-parallel job
// (SM_FRAMEWORK_PARAMS with sagemaker_distributed_dataparallel_enabled, two ranks as SageMaker's
// mpirun starts them) trains what the same two ranks train under torchrun's variables.
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/glue_files.h"
#include "support/process.h"

namespace {

namespace fs = std::filesystem;
using ctrainer::testing::read_json;

class RunGlueSageMaker : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ("ctrainer_run_glue_sagemaker_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    for (const char* folder : {"input/train", "input/eval", "model", "output"})
      fs::create_directories(dir_ / folder);
    std::ofstream train(dir_ / "input/train/sst2_part_0.tsv"), dev(dir_ / "input/eval/dev.tsv");
    train << "sentence\tlabel\n";
    dev << "sentence\tlabel\n";
    for (int i = 0; i < 48; ++i)
      train << (i % 2 ? "a fine film " : "a dull film ") << i << '\t' << i % 2 << '\n';
    for (int i = 0; i < 12; ++i) dev << (i % 2 ? "fine " : "dull ") << i << '\t' << i % 2 << '\n';
    std::ofstream(dir_ / "config.json") << R"({"model_type": "bert", "vocab_size": 30522,
      "hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2,
      "intermediate_size": 32, "max_position_embeddings": 64})";
  }
  void TearDown() override { fs::remove_all(dir_); }

  /// run_glue with SageMaker's variables (SM_HPS = `hyperparameters`) and `flags`.
  ctrainer::testing::CommandResult run(const std::string& hyperparameters,
                                       const std::string& flags) const {
    const std::string environment =
        "SM_MODEL_DIR=" + (dir_ / "model").string() +
        " SM_OUTPUT_DATA_DIR=" + (dir_ / "output").string() +
        " SM_CHANNEL_TRAIN=" + (dir_ / "input/train").string() +
        " SM_CHANNEL_EVAL=" + (dir_ / "input/eval").string() + " SM_HPS='" + hyperparameters +
        "' SM_HOSTS='[\"algo-1\"]' SM_CURRENT_HOST=algo-1 SM_NUM_GPUS=0 ";
    return ctrainer::testing::run_shell(
        environment + CTRAINER_RUN_GLUE_BINARY + " --task_name sst2 --cache_dir " +
        (dir_ / "cache").string() + " --config_name " + (dir_ / "config.json").string() +
        " --tokenizer_name " + CTRAINER_EXAMPLES_DATA_DIR +
        "/vocab/bert-base-uncased-vocab.txt --max_seq_length 32 --disable_tqdm " + flags);
  }

  fs::path dir_;
};

TEST_F(RunGlueSageMaker, ChannelsHyperparametersAndFoldersAsAJobGivesThem) {
  const std::string hyperparameters =
      R"({"do_train": "True", "do_eval": true, "learning_rate": 0.002, "num_train_epochs": 1,)"
      R"( "per_device_train_batch_size": 8, "logging_steps": 2, "eval_strategy": "steps",)"
      R"( "eval_steps": 3, "lr_scheduler_type": "constant", "report_to": ["none"], "seed": 11,)"
      R"( "sagemaker_program": "train.sh"})";
  const auto result = run(hyperparameters, "--per_device_train_batch_size 16 --plot");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  const fs::path model = dir_ / "model";
  for (const char* file : {"model.safetensors", "config.json", "trainer_state.json",
                           "eval_results.json", "training_curves.svg"})
    EXPECT_TRUE(fs::exists(model / file)) << file;
  // The train channel's only file, the eval channel's dev.tsv.
  EXPECT_EQ(read_json(model / "train_results.json").at("train_samples"), 48);
  EXPECT_EQ(read_json(model / "eval_results.json").at("eval_samples"), 12);
  // The hyperparameters: a constant 0.002, evaluation every 3 steps; the command line's batch 16
  // over SM_HPS's 8: 48 / 16 = 3 steps.
  const auto state = read_json(model / "trainer_state.json");
  EXPECT_EQ(state.at("global_step"), 3);
  EXPECT_EQ(state.at("train_batch_size"), 16);
  int evaluations = 0;
  for (const auto& entry : state.at("log_history")) {
    if (entry.contains("learning_rate"))
      EXPECT_DOUBLE_EQ(entry.at("learning_rate").get<double>(), 0.002);
    if (entry.contains("eval_accuracy")) ++evaluations;
  }
  EXPECT_GE(evaluations, 1);
  // SM_OUTPUT_DATA_DIR has copies of the results.
  for (const char* file :
       {"eval_results.json", "train_results.json", "all_results.json", "trainer_state.json"})
    EXPECT_TRUE(fs::exists(dir_ / "output" / file)) << file;
  std::ifstream svg(model / "training_curves.svg");
  const std::string text((std::istreambuf_iterator<char>(svg)), std::istreambuf_iterator<char>());
  for (const char* panel : {"Training loss", "Learning rate", "Evaluation: accuracy"})
    EXPECT_NE(text.find(panel), std::string::npos) << panel;
}

/// The environment SageMaker's local mode gives a container (docker-compose host names, every
/// SM_* variable the training toolkit exports; SM_USER_ARGS restates SM_HPS as arguments) for a
/// spot job whose estimator set checkpoint_s3_uri: SageMaker wrote checkpointconfig.json into
/// SM_INPUT_CONFIG_DIR, and syncs its LocalPath with S3 across restarts.
std::map<std::string, std::string> spot_job_environment(const fs::path& job, const fs::path& data,
                                                        const std::string& hyperparameters) {
  fs::create_directories(job / "input/config");
  std::ofstream(job / "input/config/checkpointconfig.json")
      << R"({"LocalPath": ")" << (job / "checkpoints").string()
      << R"(", "S3Uri": "s3://bucket/spot-job/checkpoints"})";
  return {{"SM_HOSTS", R"(["algo-1-qz8z7"])"},
          {"SM_CURRENT_HOST", "algo-1-qz8z7"},
          {"SM_NETWORK_INTERFACE_NAME", "eth0"},
          {"SM_FRAMEWORK_PARAMS", "{}"},
          {"SM_RESOURCE_CONFIG", R"({"current_host":"algo-1-qz8z7","hosts":["algo-1-qz8z7"]})"},
          {"SM_CHANNELS", R"(["eval","train"])"},
          {"SM_CHANNEL_TRAIN", (data / "input/train").string()},
          {"SM_CHANNEL_EVAL", (data / "input/eval").string()},
          {"SM_HPS", hyperparameters},
          {"SM_USER_ARGS", "[]"},
          {"SM_INPUT_DIR", (job / "input").string()},
          {"SM_INPUT_CONFIG_DIR", (job / "input/config").string()},
          {"SM_MODEL_DIR", (job / "model").string()},
          {"SM_OUTPUT_DIR", (job / "output").string()},
          {"SM_OUTPUT_DATA_DIR", (job / "output/data").string()},
          {"SM_NUM_CPUS", "2"},
          {"SM_NUM_GPUS", "0"},
          {"SM_LOG_LEVEL", "20"},
          {"SM_MODULE_NAME", "train"},
          {"SM_FRAMEWORK_MODULE", "sagemaker_pytorch_container.training:main"}};
}

/// The step of the last line of trainer_log.jsonl in `folder` (0 if none yet).
int64_t last_logged_step(const fs::path& folder) {
  std::ifstream in(folder / "trainer_log.jsonl");
  std::string line, last;
  while (std::getline(in, line))
    if (!line.empty() && line.back() == '}') last = line;
  const auto parsed = nlohmann::json::parse(last, nullptr, /*allow_exceptions=*/false);
  return parsed.is_object() ? parsed.value("step", int64_t{0}) : 0;
}

std::string file_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

TEST_F(RunGlueSageMaker, SpotRestartResumesFromTheCheckpointFolderAsAnUninterruptedJob) {
  constexpr int kMaxSteps = 150;
  const std::string hyperparameters =
      R"({"do_train": true, "do_eval": true, "max_steps": )" + std::to_string(kMaxSteps) +
      R"(, "per_device_train_batch_size": 16, "learning_rate": 0.001, "logging_steps": 1,)"
      R"( "save_steps": 20, "save_total_limit": 2, "report_to": "none", "seed": 5,)"
      R"( "sagemaker_program": "train.sh", "sagemaker_submit_directory": "/opt/ml/code"})";
  std::ofstream(dir_ / "config.json") << R"({"model_type": "bert", "vocab_size": 30522,
      "hidden_size": 128, "num_hidden_layers": 2, "num_attention_heads": 2,
      "intermediate_size": 256, "max_position_embeddings": 64})";
  const std::vector<std::string> command = {
      CTRAINER_RUN_GLUE_BINARY,
      "--task_name",
      "sst2",
      "--cache_dir",
      (dir_ / "cache").string(),
      "--config_name",
      (dir_ / "config.json").string(),
      "--tokenizer_name",
      std::string(CTRAINER_EXAMPLES_DATA_DIR) + "/vocab/bert-base-uncased-vocab.txt",
      "--max_seq_length",
      "32",
      "--disable_tqdm"};
  using ctrainer::testing::spawn_process;
  using ctrainer::testing::wait_for;
  const fs::path reference = dir_ / "reference", spot = dir_ / "spot";
  const auto reference_env = spot_job_environment(reference, dir_, hyperparameters);
  ASSERT_EQ(wait_for(spawn_process(command, dir_ / "reference.log", dir_ / "reference.log",
                                   reference_env)),
            0)
      << file_bytes(dir_ / "reference.log");

  // The spot job: capacity is taken back (SIGTERM) after a checkpoint or two.
  const auto spot_env = spot_job_environment(spot, dir_, hyperparameters);
  const pid_t first = spawn_process(command, dir_ / "first.log", dir_ / "first.log", spot_env);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (last_logged_step(spot / "checkpoints") < 25 &&
         std::chrono::steady_clock::now() < deadline) {
    const auto ended = wait_for(first, std::chrono::milliseconds(2));
    ASSERT_FALSE(ended.has_value()) << "the job ended (" << *ended << ") before it was stopped:\n"
                                    << file_bytes(dir_ / "first.log");
  }
  ::kill(first, SIGTERM);
  ASSERT_EQ(wait_for(first), 143) << file_bytes(dir_ / "first.log");
  const int64_t stopped_at = last_logged_step(spot / "checkpoints");
  ASSERT_LT(stopped_at, kMaxSteps);
  std::printf("the spot job was stopped at step %lld\n", static_cast<long long>(stopped_at));
  EXPECT_FALSE(fs::exists(spot / "model/model.safetensors"));

  // Started again with the same environment: it finds its checkpoint folder and resumes.
  ASSERT_EQ(wait_for(spawn_process(command, dir_ / "second.log", dir_ / "second.log", spot_env)), 0)
      << file_bytes(dir_ / "second.log");
  const std::string second = file_bytes(dir_ / "second.log");
  EXPECT_NE(second.find("Checkpoint detected, resuming training at " +
                        (spot / "checkpoints").string() + "/checkpoint-"),
            std::string::npos)
      << second;
  // The model SageMaker uploads equals the uninterrupted job's, byte for byte; the checkpoints
  // stay in the checkpoint folder, the results go to SM_OUTPUT_DATA_DIR too.
  for (const fs::path& job : {reference, spot}) {
    EXPECT_TRUE(fs::exists(job / "checkpoints" / ("checkpoint-" + std::to_string(kMaxSteps)) /
                           "manifest.json"));
    for (const auto& entry : fs::directory_iterator(job / "model"))
      EXPECT_FALSE(entry.is_directory()) << entry.path();
    EXPECT_TRUE(fs::exists(job / "output/data/eval_results.json"));
  }
  EXPECT_EQ(file_bytes(spot / "model/model.safetensors"),
            file_bytes(reference / "model/model.safetensors"));
  EXPECT_EQ(read_json(spot / "model/eval_results.json").at("eval_loss"),
            read_json(reference / "model/eval_results.json").at("eval_loss"));
  EXPECT_EQ(read_json(spot / "model/trainer_state.json").at("global_step"), kMaxSteps);
}

TEST_F(RunGlueSageMaker, DataParallelJobTrainsAsDdpOverTheMpirunRanks) {
  using ctrainer::testing::spawn_process;
  using ctrainer::testing::wait_for;
  const auto command = [&](const std::string& out) -> std::vector<std::string> {
    return {CTRAINER_RUN_GLUE_BINARY,
            "--task_name",
            "sst2",
            "--cache_dir",
            (dir_ / ("cache_" + out)).string(),
            "--config_name",
            (dir_ / "config.json").string(),
            "--tokenizer_name",
            std::string(CTRAINER_EXAMPLES_DATA_DIR) + "/vocab/bert-base-uncased-vocab.txt",
            "--max_seq_length",
            "32",
            "--disable_tqdm",
            "--do_train",
            "--train_file",
            (dir_ / "input/train/sst2_part_0.tsv").string(),
            "--max_steps",
            "4",
            "--per_device_train_batch_size",
            "4",
            "--learning_rate",
            "0.001",
            "--report_to",
            "none",
            "--save_strategy",
            "no",
            "--output_dir",
            (dir_ / out).string()};
  };
  // Two ranks on one host, with the variables each launcher gives them.
  const auto train = [&](const std::string& out, bool sagemaker) {
    const int port = ctrainer::testing::free_port();
    std::vector<pid_t> ranks;
    for (int rank = 0; rank < 2; ++rank) {
      std::map<std::string, std::string> env = {{"MASTER_ADDR", "127.0.0.1"},
                                                {"MASTER_PORT", std::to_string(port)}};
      if (sagemaker) {
        env.insert(
            {{"OMPI_COMM_WORLD_RANK", std::to_string(rank)},
             {"OMPI_COMM_WORLD_SIZE", "2"},
             {"OMPI_COMM_WORLD_LOCAL_RANK", std::to_string(rank)},
             {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
             {"SMDATAPARALLEL_LOCAL_RANK", std::to_string(rank)},
             {"SM_FRAMEWORK_PARAMS", R"({"sagemaker_distributed_dataparallel_enabled": true,)"
                                     R"( "sagemaker_instance_type": "ml.p4d.24xlarge"})"},
             {"SM_HOSTS", R"(["algo-1"])"},
             {"SM_CURRENT_HOST", "algo-1"}});
      } else {
        env.insert({{"RANK", std::to_string(rank)},
                    {"WORLD_SIZE", "2"},
                    {"LOCAL_RANK", std::to_string(rank)},
                    {"LOCAL_WORLD_SIZE", "2"}});
      }
      const fs::path log = dir_ / (out + "_" + std::to_string(rank) + ".log");
      ranks.push_back(spawn_process(command(out), log, log, env));
    }
    for (int rank = 0; rank < 2; ++rank)
      EXPECT_EQ(wait_for(ranks[rank]), 0)
          << file_bytes(dir_ / (out + "_" + std::to_string(rank) + ".log"));
  };
  train("sagemaker", true);
  train("torchrun", false);
  const std::string log = file_bytes(dir_ / "sagemaker_0.log");
  EXPECT_NE(log.find("rank 0 of 2 (OpenMPI)"), std::string::npos) << log;
  EXPECT_NE(log.find("SageMaker data parallelism (SM_FRAMEWORK_PARAMS): DDP over these ranks"),
            std::string::npos)
      << log;
  ASSERT_TRUE(fs::exists(dir_ / "sagemaker/model.safetensors"));
  EXPECT_EQ(file_bytes(dir_ / "sagemaker/model.safetensors"),
            file_bytes(dir_ / "torchrun/model.safetensors"));
}

TEST_F(RunGlueSageMaker, MalformedHyperparametersStopTheRunBeforeAnythingIsWritten) {
  const auto result = run(R"({"do_train": true, "learning_rate": })", "");
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_NE(result.output.find("SM_HPS="), std::string::npos) << result.output;
  EXPECT_TRUE(fs::is_empty(dir_ / "model"));
  const auto unknown = run(R"({"do_train": true, "epochs": 3})", "");
  EXPECT_EQ(unknown.exit_code, 2) << unknown.output;
  EXPECT_NE(unknown.output.find("SM_HPS key \"epochs\""), std::string::npos) << unknown.output;
  EXPECT_TRUE(fs::is_empty(dir_ / "model"));
}

}  // namespace
