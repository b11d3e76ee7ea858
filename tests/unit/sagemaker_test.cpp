// SageMaker's environment, fabricated as its training toolkit writes it: the hyperparameters
// (SM_HPS, SM_HP_*) onto TrainingArguments with explicit flags winning, SM_MODEL_DIR as the
// default output_dir, the input channels as run_glue's data, the cluster layout (SM_HOSTS,
// SM_CURRENT_HOST, SM_CURRENT_INSTANCE_GROUP) as node rank and master address, and what is
// refused (model parallelism, malformed JSON, unknown hyperparameters).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include <ctrainer/distributed/process_info.h>
#include <ctrainer/distributed/sagemaker_cluster.h>
#include <ctrainer/examples/glue/glue_arguments.h>
#include <ctrainer/integrations/sagemaker/sagemaker_environment.h>
#include <ctrainer/integrations/sagemaker/sagemaker_parallelism.h>
#include <ctrainer/trainer/args/argument_parser.h>
#include <ctrainer/trainer/runtime/output_dir.h>
#include <ctrainer/trainer/runtime/sagemaker_outputs.h>

#include "support/expect_error.h"
#include "support/parse_args.h"
#include "support/test_data.h"

namespace ctrainer {
namespace sagemaker_test {

namespace fs = std::filesystem;
using testing::expect_error;
using testing::run_parse;

EnvironmentLookup lookup_in(const EnvironmentMap& environment) {
  return [environment](const std::string& name) -> std::optional<std::string> {
    const auto it = environment.find(name);
    if (it == environment.end() || it->second.empty()) return std::nullopt;
    return it->second;
  };
}

TrainingArguments parse_with(const EnvironmentMap& environment,
                             const std::vector<std::string>& tokens) {
  ArgumentParser parser("test");
  parser.set_environment(environment);
  TrainingArguments args;
  EXPECT_TRUE(run_parse(parser, tokens, args));
  return args;
}

void expect_parse_error(const EnvironmentMap& environment, const std::vector<std::string>& parts) {
  expect_error(
      [&] {
        ArgumentParser parser("test");
        parser.set_environment(environment);
        TrainingArguments args;
        run_parse(parser, {}, args);
      },
      parts);
}

// The hyperparameters of a real Hugging Face estimator job as the toolkit exported them.
const EnvironmentMap kEstimatorJob = {
    {"SM_HPS", R"({"bf16":false,"learning_rate":0.0002,"lr_scheduler_type":"constant",)"
               R"("num_train_epochs":3,"per_device_train_batch_size":4,"report_to":"none",)"
               R"("save_strategy":"epoch","gradient_checkpointing":"True","warmup_ratio":0.03})"},
    {"SM_HP_LEARNING_RATE", "0.0002"},
    {"SM_MODEL_DIR", "/opt/ml/model"},
    {"SM_OUTPUT_DATA_DIR", "/opt/ml/output/data"}};

TEST(SageMakerHyperparameters, SmHpsTypedValuesSetTheFlags) {
  const TrainingArguments args = parse_with(kEstimatorJob, {});
  EXPECT_DOUBLE_EQ(args.learning_rate, 2e-4);
  EXPECT_DOUBLE_EQ(args.num_train_epochs, 3);
  EXPECT_EQ(args.per_device_train_batch_size, 4);
  EXPECT_DOUBLE_EQ(args.warmup_ratio, 0.03);
  EXPECT_TRUE(args.gradient_checkpointing);  // SageMaker's "True" string
  EXPECT_FALSE(args.bf16);
  EXPECT_EQ(args.output_dir, "/opt/ml/model");  // SM_MODEL_DIR
}

TEST(SageMakerHyperparameters, ExplicitFlagsWinEvenOverABadEnvironmentValue) {
  EnvironmentMap job = kEstimatorJob;
  job["SM_HPS"] = R"({"learning_rate": "fast", "seed": 3})";
  const TrainingArguments args =
      parse_with(job, {"--learning_rate", "5e-5", "--output_dir", "mine"});
  EXPECT_DOUBLE_EQ(args.learning_rate, 5e-5);
  EXPECT_EQ(args.seed, 3);
  EXPECT_EQ(args.output_dir, "mine");
}

TEST(SageMakerHyperparameters, OutputDirHyperparameterWinsOverSmModelDir) {
  EnvironmentMap job = kEstimatorJob;
  job["SM_HPS"] = R"({"output_dir": "/tmp/run"})";
  EXPECT_EQ(parse_with(job, {}).output_dir, "/tmp/run");
  EXPECT_EQ(parse_with({}, {}).output_dir, TrainingArguments().output_dir);
}

TEST(SageMakerHyperparameters, SmHpVariablesWhenSmHpsIsAbsent) {
  const TrainingArguments args = parse_with(
      {{"SM_HP_LEARNING_RATE", "3e-05"},
       {"SM_HP_FP16", "False"},
       {"SM_HP_MAX_STEPS", "12"},
       {"SM_HP_REPORT_TO", R"(["none"])"},
       {"SM_HP_SAGEMAKER_PROGRAM", "train.py"},       // SageMaker's own: skipped
       {"SM_HP_MP_PARAMETERS", R"({"ddp": true})"}},  // no partitions: not model parallel
      {});
  EXPECT_DOUBLE_EQ(args.learning_rate, 3e-5);
  EXPECT_FALSE(args.fp16);
  EXPECT_EQ(args.max_steps, 12);
  // SM_HPS, when set, is the whole set: SM_HP_* are ignored.
  EXPECT_DOUBLE_EQ(
      parse_with({{"SM_HPS", R"({"seed": 9})"}, {"SM_HP_LEARNING_RATE", "1"}}, {}).learning_rate,
      TrainingArguments().learning_rate);
}

TEST(SageMakerHyperparameters, MalformedOrUnknownValuesAreErrorsNamingTheVariable) {
  expect_parse_error({{"SM_HPS", "{learning_rate: 1"}}, {"SM_HPS='{learning_rate: 1'", "JSON"});
  expect_parse_error({{"SM_HPS", "[1, 2]"}}, {"SM_HPS", "not a JSON object"});
  expect_parse_error({{"SM_HPS", R"({"learning_rat": 0.1})"}},
                     {"SM_HPS key \"learning_rat\"", "did you mean --learning_rate",
                      "estimator's hyperparameters"});
  expect_parse_error({{"SM_HPS", R"({"seed": "seven"})"}},
                     {"SM_HPS key \"seed\"", "expected an integer"});
  expect_parse_error({{"SM_HPS", R"({"deepspeed": {"zero_optimization": {}}})"}},
                     {"SM_HPS key \"deepspeed\"", "JSON object", "--deepspeed ds.json"});
  expect_parse_error({{"SM_HPS", R"({"seed": [1, 2]})"}}, {"--seed takes one value"});
  expect_parse_error({{"SM_HPS", R"({"": 1})"}}, {"SM_HPS holds an empty key"});
  expect_parse_error({{"SM_HP_NUM_TRAIN_EPOCHS", "three"}}, {"SM_HP_NUM_TRAIN_EPOCHS"});
}

TEST(SageMakerHyperparameters, ModelParallelismIsRefusedByTransformersRule) {
  // transformers' is_sagemaker_mp_enabled: "partitions" in SM_HP_MP_PARAMETERS and
  // sagemaker_mpi_enabled in SM_FRAMEWORK_PARAMS (parity.sagemaker_parallelism checks the rule
  // case by case against transformers).
  const std::string mpi = R"({"sagemaker_mpi_enabled": true})";
  expect_parse_error({{"SM_HP_MP_PARAMETERS", R"({"partitions": 2, "microbatches": 4})"},
                      {"SM_FRAMEWORK_PARAMS", mpi}},
                     {"SM_HP_MP_PARAMETERS", "SageMaker model parallelism", "\"partitions\": 2",
                      "--deepspeed or --fsdp"});
  // Either half alone, or malformed JSON, is no model parallelism (as in transformers).
  EXPECT_EQ(parse_with({{"SM_HP_MP_PARAMETERS", R"({"partitions": 2})"}}, {}).seed, 42);
  EXPECT_EQ(
      parse_with({{"SM_HP_MP_PARAMETERS", "{partitions"}, {"SM_FRAMEWORK_PARAMS", mpi}}, {}).seed,
      42);
  EXPECT_EQ(parse_with({{"SM_HPS", R"({"mp_parameters": {"partitions": 4}, "seed": 5})"}}, {}).seed,
            5);  // the hyperparameter itself is SageMaker's, skipped
  // Where transformers raises (TypeError), the variable is named.
  expect_parse_error({{"SM_HP_MP_PARAMETERS", "5"}}, {"SM_HP_MP_PARAMETERS=5", "TypeError"});
  expect_parse_error({{"SM_FRAMEWORK_PARAMS", "[1]"}}, {"SM_FRAMEWORK_PARAMS=[1]", "object"});
}

TEST(SageMakerParallelism, DataParallelismIsReadAsTransformersReadsIt) {
  const auto read = [](const EnvironmentMap& environment) {
    return read_sagemaker_parallelism(lookup_in(environment));
  };
  EXPECT_FALSE(read({}).data_parallel);
  EXPECT_TRUE(
      read({{"SM_FRAMEWORK_PARAMS", R"({"sagemaker_distributed_dataparallel_enabled": true})"}})
          .data_parallel);
  // Python truthiness: the string "false" is true, 0 and "" are false; bad JSON is false.
  EXPECT_TRUE(
      read({{"SM_FRAMEWORK_PARAMS", R"({"sagemaker_distributed_dataparallel_enabled": "false"})"}})
          .data_parallel);
  EXPECT_FALSE(
      read({{"SM_FRAMEWORK_PARAMS", R"({"sagemaker_distributed_dataparallel_enabled": 0})"}})
          .data_parallel);
  EXPECT_FALSE(read({{"SM_FRAMEWORK_PARAMS", "{sagemaker"}}).data_parallel);
  // The process: DDP on the mpirun ranks, the local rank from SMDATAPARALLEL_LOCAL_RANK.
  const ProcessInfo info = ProcessInfo::from_variables(lookup_in(
      {{"OMPI_COMM_WORLD_RANK", "1"},
       {"OMPI_COMM_WORLD_SIZE", "2"},
       {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
       {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
       {"SMDATAPARALLEL_LOCAL_RANK", "1"},
       {"SM_FRAMEWORK_PARAMS",
        R"({"sagemaker_distributed_dataparallel_enabled": true, "sagemaker_instance_type": "ml.p4d.24xlarge"})"}}));
  EXPECT_TRUE(info.sagemaker_data_parallel);
  EXPECT_TRUE(info.is_distributed());
  EXPECT_EQ(info.local_rank, 1);
  EXPECT_FALSE(ProcessInfo::from_variables(lookup_in({})).sagemaker_data_parallel);
}

TEST(SageMakerCheckpoints, TheCheckpointFolderIsTheDefaultOutputDir) {
  const fs::path root = testing::fresh_output_dir("sagemaker_checkpoint_config");
  fs::create_directories(root / "config");
  std::ofstream(root / "config" / "checkpointconfig.json")
      << R"({"LocalPath": ")" << (root / "checkpoints").string()
      << R"(", "S3Uri": "s3://bucket/job/checkpoints"})";
  EnvironmentMap job = kEstimatorJob;
  job["SM_INPUT_CONFIG_DIR"] = (root / "config").string();
  EXPECT_EQ(sagemaker_checkpoint_dir(job), (root / "checkpoints").string());
  EXPECT_EQ(parse_with(job, {}).output_dir, (root / "checkpoints").string());
  // A hyperparameter or a flag still wins.
  job["SM_HPS"] = R"({"output_dir": "/tmp/run"})";
  EXPECT_EQ(parse_with(job, {}).output_dir, "/tmp/run");
  EXPECT_EQ(parse_with(job, {"--output_dir", "mine"}).output_dir, "mine");
  // No checkpointconfig.json (no checkpoint_s3_uri): SM_MODEL_DIR, as before.
  EXPECT_EQ(
      parse_with({{"SM_INPUT_CONFIG_DIR", root.string()}, {"SM_MODEL_DIR", "/opt/ml/model"}}, {})
          .output_dir,
      "/opt/ml/model");
  // No LocalPath: the API's default folder. SM_CHECKPOINT_CONFIG_FILE names the file.
  std::ofstream(root / "bare.json") << R"({"S3Uri": "s3://bucket/job/checkpoints"})";
  EXPECT_EQ(
      sagemaker_checkpoint_dir({{"SM_CHECKPOINT_CONFIG_FILE", (root / "bare.json").string()}}),
      "/opt/ml/checkpoints");
  // Malformed files and a missing named file are errors naming them.
  std::ofstream(root / "bad.json") << R"({"LocalPath": 7})";
  std::ofstream(root / "broken.json") << R"({"LocalPath": )";
  expect_error(
      [&] {
        sagemaker_checkpoint_dir({{"SM_CHECKPOINT_CONFIG_FILE", (root / "bad.json").string()}});
      },
      {"bad.json", "\"LocalPath\" is 7"});
  expect_parse_error({{"SM_CHECKPOINT_CONFIG_FILE", (root / "broken.json").string()}},
                     {"broken.json", "is not a JSON object"});
  expect_parse_error({{"SM_CHECKPOINT_CONFIG_FILE", (root / "none.json").string()}},
                     {"SM_CHECKPOINT_CONFIG_FILE=", "is not a file"});
  fs::remove_all(root);
}

TEST(SageMakerCheckpoints, ARestartResumesFromTheFolderAndNeverRefusesIt) {
  const fs::path root = testing::fresh_output_dir("sagemaker_checkpoint_restart");
  const fs::path checkpoints = root / "checkpoints";
  fs::create_directories(checkpoints / "runs");  // a killed first start left its logs
  std::ofstream(checkpoints / "trainer_log.jsonl") << "{}\n";
  std::ofstream(root / "checkpointconfig.json")
      << R"({"LocalPath": ")" << checkpoints.string() << R"("})";
  const EnvironmentMap job = {
      {"SM_CHECKPOINT_CONFIG_FILE", (root / "checkpointconfig.json").string()}};
  TrainingArguments args;
  args.do_train = true;
  args.output_dir = checkpoints.string();
  // Not empty, no checkpoint: a fresh start there (elsewhere: HF's "already exists" refusal).
  EXPECT_EQ(check_output_dir(args, job), std::nullopt);
  expect_error([&] { check_output_dir(args, {}); }, {"already exists and is not empty"});
  // With a complete checkpoint: resume from it.
  fs::create_directories(checkpoints / "checkpoint-4");
  std::ofstream(checkpoints / "checkpoint-4" / "manifest.json") << R"({"files": {}})";
  const auto found = check_output_dir(args, job);
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(fs::path(*found).filename(), "checkpoint-4");
  fs::remove_all(root);
}

TEST(SageMakerCheckpoints, TheFinalModelIsPublishedToSmModelDir) {
  const fs::path root = testing::fresh_output_dir("sagemaker_publish");
  const fs::path out = root / "checkpoints";
  fs::create_directories(out / "checkpoint-6");
  for (const char* file : {"model.safetensors", "config.json", "eval_results.json",
                           "trainer_state.json", "generated_predictions.txt"})
    std::ofstream(out / file) << file;
  std::ofstream(out / "checkpoint-6" / "model.safetensors") << "old";
  TrainingArguments args;
  args.output_dir = out.string();
  publish_sagemaker_outputs(args, {{"SM_MODEL_DIR", (root / "model").string()},
                                   {"SM_OUTPUT_DATA_DIR", (root / "data").string()}});
  for (const char* file : {"model.safetensors", "config.json", "eval_results.json"})
    EXPECT_TRUE(fs::exists(root / "model" / file)) << file;
  EXPECT_FALSE(fs::exists(root / "model" / "checkpoint-6"));
  for (const char* file : {"eval_results.json", "trainer_state.json", "generated_predictions.txt"})
    EXPECT_TRUE(fs::exists(root / "data" / file)) << file;
  EXPECT_FALSE(fs::exists(root / "data" / "model.safetensors"));
  // Trained in SM_MODEL_DIR itself: nothing to copy there. Outside SageMaker: nothing at all.
  args.output_dir = (root / "model").string();
  publish_sagemaker_outputs(args, {{"SM_MODEL_DIR", (root / "model").string()}});
  publish_sagemaker_outputs(args, {});
  EXPECT_EQ(std::distance(fs::directory_iterator(root), fs::directory_iterator()), 3);
  fs::remove_all(root);
}

TEST(SageMakerCluster, OutsideSageMakerThereIsNone) {
  EXPECT_FALSE(read_sagemaker_cluster(lookup_in({})).has_value());
}

TEST(SageMakerCluster, MultiHostLayoutGivesNodeRankAndMaster) {
  const auto cluster =
      read_sagemaker_cluster(lookup_in({{"SM_HOSTS", R"(["algo-1","algo-2","algo-3"])"},
                                        {"SM_CURRENT_HOST", "algo-3"},
                                        {"SM_NUM_GPUS", "8"}}));
  ASSERT_TRUE(cluster.has_value());
  EXPECT_EQ(cluster->node_rank, 2);
  EXPECT_EQ(cluster->master_addr(), "algo-1");
  EXPECT_EQ(cluster->num_gpus, 8);
}

TEST(SageMakerCluster, HeterogeneousClusterUsesTheCurrentInstanceGroup) {
  const EnvironmentMap hetero = {
      {"SM_HOSTS", R"(["algo-1","algo-2","algo-3","algo-4"])"},
      {"SM_CURRENT_HOST", "algo-4"},
      {"SM_CURRENT_INSTANCE_GROUP", "gpus"},
      {"SM_INSTANCE_GROUPS_DICT",
       R"({"cpus":{"hosts":["algo-1","algo-2"]},"gpus":{"hosts":["algo-3","algo-4"]}})"}};
  auto cluster = read_sagemaker_cluster(lookup_in(hetero));
  ASSERT_TRUE(cluster.has_value());
  EXPECT_EQ(cluster->node_rank, 1);
  EXPECT_EQ(cluster->master_addr(), "algo-3");
  EXPECT_EQ(cluster->instance_group, "gpus");
  EnvironmentMap listed = hetero;  // SM_CURRENT_INSTANCE_GROUP_HOSTS, when set, is the list
  listed["SM_CURRENT_INSTANCE_GROUP_HOSTS"] = R"(["algo-4","algo-3"])";
  cluster = read_sagemaker_cluster(lookup_in(listed));
  EXPECT_EQ(cluster->node_rank, 0);
  EXPECT_EQ(cluster->master_addr(), "algo-4");
}

TEST(SageMakerCluster, MalformedLayoutsAreErrorsNamingTheVariable) {
  auto error = [](const EnvironmentMap& environment, const std::vector<std::string>& parts) {
    expect_error([&] { read_sagemaker_cluster(lookup_in(environment)); }, parts);
  };
  error({{"SM_HOSTS", "algo-1,algo-2"}, {"SM_CURRENT_HOST", "algo-1"}}, {"SM_HOSTS", "JSON"});
  error({{"SM_HOSTS", R"(["algo-1", 2])"}, {"SM_CURRENT_HOST", "algo-1"}},
        {"SM_HOSTS", "list of host names"});
  error({{"SM_HOSTS", R"(["algo-1","algo-1"])"}, {"SM_CURRENT_HOST", "algo-1"}}, {"twice"});
  error({{"SM_HOSTS", R"(["algo-1"])"}, {"SM_CURRENT_HOST", "algo-9"}},
        {"SM_CURRENT_HOST=algo-9", "not among SM_HOSTS"});
  error({{"SM_HOSTS", R"(["algo-1"])"}}, {"SM_CURRENT_HOST is not"});
  error({{"SM_HOSTS", R"(["algo-1"])"}, {"SM_CURRENT_HOST", "algo-1"}, {"SM_NUM_GPUS", "-1"}},
        {"SM_NUM_GPUS='-1'"});
  error({{"SM_HOSTS", R"(["algo-1"])"},
         {"SM_CURRENT_HOST", "algo-1"},
         {"SM_CURRENT_INSTANCE_GROUP", "gpus"}},
        {"SM_CURRENT_INSTANCE_GROUP=gpus", "hosts"});
}

TEST(SageMakerProcessInfo, DataParallelLaunchTakesNodeRankMasterAndLocalRank) {
  // smdistributed data parallel: mpirun ranks, SMDATAPARALLEL_LOCAL_RANK, the cluster layout.
  const EnvironmentMap job = {
      {"OMPI_COMM_WORLD_RANK", "3"},       {"OMPI_COMM_WORLD_SIZE", "4"},
      {"OMPI_COMM_WORLD_LOCAL_RANK", "0"}, {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
      {"SMDATAPARALLEL_LOCAL_RANK", "1"},  {"SM_HOSTS", R"(["algo-1","algo-2"])"},
      {"SM_CURRENT_HOST", "algo-2"}};
  const ProcessInfo info = ProcessInfo::from_variables(lookup_in(job));
  EXPECT_EQ(info.launched_by, LaunchEnvironment::kOpenMpi);
  EXPECT_EQ(info.rank, 3);
  EXPECT_EQ(info.local_rank, 1);
  EXPECT_EQ(info.node_rank, 1);
  EXPECT_EQ(info.rendezvous_address(), "algo-1");
  // torchrun's variables (SageMaker's torch_distributed) are left as torchrun set them.
  EnvironmentMap torchrun = {{"RANK", "2"},
                             {"WORLD_SIZE", "4"},
                             {"LOCAL_RANK", "0"},
                             {"LOCAL_WORLD_SIZE", "2"},
                             {"GROUP_RANK", "1"},
                             {"MASTER_ADDR", "10.0.0.5"},
                             {"SM_HOSTS", R"(["algo-1","algo-2"])"},
                             {"SM_CURRENT_HOST", "algo-2"}};
  const ProcessInfo launched = ProcessInfo::from_variables(lookup_in(torchrun));
  EXPECT_EQ(launched.rendezvous_address(), "10.0.0.5");
  EXPECT_EQ(launched.node_rank, 1);
}

TEST(SageMakerChannels, RunGlueReadsTheChannelsUnlessGivenADataDir) {
  const fs::path root = testing::fresh_output_dir("channels");
  for (const char* channel : {"train", "eval", "test", "crowded"})
    fs::create_directories(root / channel);
  std::ofstream(root / "train" / "mrpc_train_part.tsv") << "x\n";
  std::ofstream(root / "eval" / "dev.tsv") << "x\n";
  std::ofstream(root / "eval" / "notes.txt") << "x\n";
  std::ofstream(root / "test" / "test.tsv") << "x\n";
  const EnvironmentMap job = {{"SM_CHANNEL_TRAIN", (root / "train").string()},
                              {"SM_CHANNEL_EVAL", (root / "eval").string()},
                              {"SM_CHANNEL_TEST", (root / "test").string()}};
  run_glue::GlueArguments glue;
  glue.data.test_file = "mine.tsv";  // given: kept
  glue.apply_sagemaker_channels(job);
  EXPECT_EQ(glue.data.train_file, (root / "train" / "mrpc_train_part.tsv").string());  // only file
  EXPECT_EQ(glue.data.validation_file, (root / "eval" / "dev.tsv").string());  // GLUE's name
  EXPECT_EQ(glue.data.test_file, "mine.tsv");

  run_glue::GlueArguments with_folder;
  with_folder.data.data_dir = "glue/MRPC";
  with_folder.apply_sagemaker_channels(job);
  EXPECT_TRUE(with_folder.data.train_file.empty());

  std::ofstream(root / "crowded" / "a.tsv") << "x\n";
  std::ofstream(root / "crowded" / "b.tsv") << "x\n";
  run_glue::GlueArguments crowded;
  expect_error(
      [&] {
        crowded.apply_sagemaker_channels({{"SM_CHANNEL_TRAIN", (root / "crowded").string()}});
      },
      {"SM_CHANNEL_TRAIN=", "a.tsv, b.tsv", "train.tsv"});
  expect_error(
      [&] {
        crowded.apply_sagemaker_channels({{"SM_CHANNEL_TRAIN", (root / "none").string()}});
      },
      {"SM_CHANNEL_TRAIN=", "is not a folder"});
  fs::remove_all(root);
}

}  // namespace sagemaker_test
}  // namespace ctrainer
