// run_glue with sharded training, as HF users configure it: HF's DeepSpeed ZeRO-3 guide config
// verbatim (offload, "auto" everywhere, DeepSpeed's AdamW and WarmupLR) against the same config
// at stage 0 (DDP); --fsdp full_shard with BertLayer units against plain DDP; and a sharded
// checkpoint resumed by 3 processes, then by 1, against an uninterrupted 2-process run; and the
// restarts of an elastic job that loses a node and gains it back (2 -> 1 -> 2 processes, so the
// global batch changes), by hand, each sharded strategy against DDP. The 41
// dev pairs in batches of 4 give rank 0 six batches and rank 1 five: ZeRO-3's evaluation
// forwards gather parameters, so rank 1 must join the collectives of rank 0's sixth.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "support/glue_files.h"
#include "support/parameter_text.h"
#include "support/process.h"
#include "support/safetensors_compare.h"

namespace {

namespace fs = std::filesystem;
using ctrainer::testing::read_json;
using ctrainer::testing::write_slice;

class RunGlueSharded : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("ctrainer_glue_sharded_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "data");
    const fs::path source = fs::path(CTRAINER_EXAMPLES_DATA_DIR) / "glue" / "MRPC";
    write_slice(source / "train.tsv", dir_ / "data" / "train.tsv", 96, true);
    write_slice(source / "dev.tsv", dir_ / "data" / "dev.tsv", 41, true);
    // Dropout off: runs on different process counts compute the same function.
    std::ofstream(dir_ / "config.json") << R"({"model_type": "bert", "vocab_size": 30522,
        "hidden_size": 16, "num_hidden_layers": 2, "num_attention_heads": 2,
        "intermediate_size": 32, "max_position_embeddings": 64, "hidden_dropout_prob": 0.0,
        "attention_probs_dropout_prob": 0.0})";
  }
  void TearDown() override { fs::remove_all(dir_); }

  /// run_glue under ctrainer-run with `nproc` processes, writing into dir_/`out`.
  ctrainer::testing::CommandResult run(int nproc, const std::string& out,
                                       const std::string& flags) const {
    return launch("--standalone --nproc-per-node " + std::to_string(nproc), out, flags);
  }

  /// run_glue under `ctrainer-run <launcher_flags>`, writing into dir_/`out`.
  ctrainer::testing::CommandResult launch(const std::string& launcher_flags, const std::string& out,
                                          const std::string& flags) const {
    const std::string args =
        "--task_name mrpc --data_dir " + (dir_ / "data").string() + " --output_dir " +
        (dir_ / out).string() + " --cache_dir " + (dir_ / "cache").string() + " --config_name " +
        (dir_ / "config.json").string() + " --tokenizer_name " + CTRAINER_EXAMPLES_DATA_DIR +
        "/vocab/bert-base-uncased-vocab.txt --max_seq_length 64 --per_device_eval_batch_size 4 "
        "--learning_rate 1e-3 --logging_steps 1 --report_to none --disable_tqdm --do_train "
        "--do_eval " +
        flags;
    return ctrainer::testing::run_shell(std::string(CTRAINER_RUN_BINARY) + " " + launcher_flags +
                                        " " + CTRAINER_RUN_GLUE_BINARY + " " + args);
  }

  /// The eval loss and the logged training losses of both runs agree within 1e-5.
  void expect_same_training(const std::string& a, const std::string& b) const {
    const auto eval_a = read_json(dir_ / a / "eval_results.json");
    const auto eval_b = read_json(dir_ / b / "eval_results.json");
    EXPECT_NEAR(eval_a.at("eval_loss").get<double>(), eval_b.at("eval_loss").get<double>(), 1e-5);
    EXPECT_EQ(eval_a.at("eval_accuracy"), eval_b.at("eval_accuracy"));
    const auto log_a = read_json(dir_ / a / "trainer_state.json").at("log_history");
    const auto log_b = read_json(dir_ / b / "trainer_state.json").at("log_history");
    ASSERT_EQ(log_a.size(), log_b.size());
    int losses = 0;
    for (std::size_t i = 0; i < log_a.size(); ++i)
      if (log_a[i].contains("loss")) {
        ++losses;
        EXPECT_NEAR(log_a[i].at("loss").get<double>(), log_b[i].at("loss").get<double>(), 1e-5)
            << "log entry " << i;
        EXPECT_NEAR(log_a[i].at("learning_rate").get<double>(),
                    log_b[i].at("learning_rate").get<double>(), 1e-12);
      }
    EXPECT_GE(losses, 4);
  }

  /// What an elastic job does when it loses a node and gains it back, resumed by hand with
  /// `strategy`'s flags, into dir_/<name>_{2,1,2again}: 2 processes from scratch (8 batches of
  /// 2 x 6 an epoch, 2 epochs = 16 steps); their checkpoint-6 resumed by 1 process (16 batches of
  /// 6 an epoch, 32 steps; transformers' rule puts global step 6 at epoch 0, batch 6); its
  /// checkpoint-12 resumed by 2 processes again (epoch 1, batch 4; to step 16). Each resume
  /// logs where it goes on, and trainer_state.json the run's own max_steps.
  void shrink_then_grow(const std::string& name, const std::string& strategy) const {
    const std::string flags = strategy +
                              " --per_device_train_batch_size 6 --num_train_epochs 2 "
                              "--save_strategy steps --save_steps 6";
    const auto whole = run(2, name + "_2", flags);
    ASSERT_EQ(whole.exit_code, 0) << whole.output;
    const auto shrunk = run(
        1, name + "_1",
        flags + " --resume_from_checkpoint " + (dir_ / (name + "_2") / "checkpoint-6").string());
    ASSERT_EQ(shrunk.exit_code, 0) << shrunk.output;
    EXPECT_NE(shrunk.output.find("the global batch changes from 12 to 6 examples per optimizer "
                                 "step. As transformers does, the run goes on from global step 6 "
                                 "at epoch 0, batch 6 of this run's 16 batches per epoch"),
              std::string::npos)
        << shrunk.output;
    const auto grown = run(
        2, name + "_2again",
        flags + " --resume_from_checkpoint " + (dir_ / (name + "_1") / "checkpoint-12").string());
    ASSERT_EQ(grown.exit_code, 0) << grown.output;
    EXPECT_NE(grown.output.find("from global step 12 at epoch 1, batch 4 of this run's 8 batches"),
              std::string::npos)
        << grown.output;
    EXPECT_EQ(read_json(dir_ / (name + "_1") / "trainer_state.json").at("max_steps"), 32);
    const auto state = read_json(dir_ / (name + "_2again") / "trainer_state.json");
    EXPECT_EQ(state.at("max_steps"), 16);
    EXPECT_EQ(state.at("global_step"), 16);
  }

  /// `strategy` shrunk and grown (shrink_then_grow) trains what DDP does on the same path: the
  /// sharded state each restart re-cut for the new world size is the state DDP keeps whole.
  void expect_resharded_as_ddp(const std::string& name, const std::string& strategy) const {
    shrink_then_grow("ddp", "");
    if (::testing::Test::HasFatalFailure()) return;
    shrink_then_grow(name, strategy);
    if (::testing::Test::HasFatalFailure()) return;
    expect_same_training("ddp_2again", name + "_2again");
    ctrainer::testing::expect_tensors_near(dir_ / "ddp_2again" / "model.safetensors",
                                           dir_ / (name + "_2again") / "model.safetensors", 1e-5);
  }

  fs::path dir_;
};

TEST_F(RunGlueSharded, HfGuideZero3ConfigTrainsWhatStage0Trains) {
  const fs::path guide = fs::path(CTRAINER_TEST_DATA_DIR) / "deepspeed" / "ds_config_zero3.json";
  nlohmann::json stage0 = read_json(guide);
  stage0["zero_optimization"] = {{"stage", 0}};
  std::ofstream(dir_ / "stage0.json") << stage0.dump(2);
  // DeepSpeed's WarmupLR needs warmup_num_steps >= 1 ("auto" takes --warmup_steps).
  const std::string flags = " --per_device_train_batch_size 8 --max_steps 6 --warmup_steps 3";
  const auto zero3 = run(2, "zero3", "--deepspeed " + guide.string() + flags);
  ASSERT_EQ(zero3.exit_code, 0) << zero3.output;
  EXPECT_NE(zero3.output.find("ZeRO-3"), std::string::npos) << zero3.output;
  const auto ddp = run(2, "stage0", "--deepspeed " + (dir_ / "stage0.json").string() + flags);
  ASSERT_EQ(ddp.exit_code, 0) << ddp.output;
  expect_same_training("zero3", "stage0");
  // stage3_gather_16bit_weights_on_model_save: the final model is one HF folder.
  EXPECT_TRUE(fs::exists(dir_ / "zero3" / "model.safetensors"));
}

// accelerate's multi-CPU DDP config (as `accelerate config` writes it; port 0: a free one)
// through ctrainer-run --config_file trains bitwise what the same layout given by flags trains.
TEST_F(RunGlueSharded, AccelerateConfigFileTrainsWhatFlagsTrain) {
  std::ofstream(dir_ / "accelerate.yaml") << R"(compute_environment: LOCAL_MACHINE
debug: false
distributed_type: MULTI_CPU
downcast_bf16: 'no'
machine_rank: 0
main_process_port: 0
main_training_function: main
mixed_precision: 'no'
num_machines: 1
num_processes: 2
rdzv_backend: static
same_network: true
tpu_env: []
tpu_use_cluster: false
tpu_use_sudo: false
use_cpu: true
)";
  const std::string flags = " --per_device_train_batch_size 8 --max_steps 4";
  const auto from_file =
      launch("--config_file " + (dir_ / "accelerate.yaml").string(), "file", flags);
  ASSERT_EQ(from_file.exit_code, 0) << from_file.output;
  // Two processes of 8: the layout came from the file.
  EXPECT_NE(from_file.output.find("distributed & accumulation) = 16"), std::string::npos)
      << from_file.output;
  const auto from_flags = run(2, "flags", flags);
  ASSERT_EQ(from_flags.exit_code, 0) << from_flags.output;
  expect_same_training("file", "flags");
  std::ifstream a(dir_ / "file" / "model.safetensors", std::ios::binary);
  std::ifstream b(dir_ / "flags" / "model.safetensors", std::ios::binary);
  const std::string bytes_a((std::istreambuf_iterator<char>(a)), {});
  const std::string bytes_b((std::istreambuf_iterator<char>(b)), {});
  EXPECT_FALSE(bytes_a.empty());
  EXPECT_TRUE(bytes_a == bytes_b) << "the two models differ";
}

TEST_F(RunGlueSharded, FsdpFullShardOfBertLayersTrainsWhatDdpTrains) {
  std::ofstream(dir_ / "fsdp.json") << R"({"transformer_layer_cls_to_wrap": ["BertLayer"]})";
  const std::string flags = " --per_device_train_batch_size 8 --max_steps 5";
  const auto fsdp =
      run(2, "fsdp",
          "--fsdp \"full_shard auto_wrap\" --fsdp_config " + (dir_ / "fsdp.json").string() + flags);
  ASSERT_EQ(fsdp.exit_code, 0) << fsdp.output;
  const auto ddp = run(2, "ddp", flags);
  ASSERT_EQ(ddp.exit_code, 0) << ddp.output;
  expect_same_training("fsdp", "ddp");
}

// Mixed precision: --bf16 autocasts the forward on the fp32 parameters (and shards) under
// every strategy, so full_shard and shard_grad_op compute what DDP computes in bf16.
TEST_F(RunGlueSharded, Bf16AutocastShardedTrainsWhatDdpTrainsInBf16) {
  std::ofstream(dir_ / "fsdp.json") << R"({"transformer_layer_cls_to_wrap": ["BertLayer"]})";
  const std::string flags = " --per_device_train_batch_size 8 --max_steps 5 --bf16";
  const auto ddp = run(2, "ddp", flags);
  ASSERT_EQ(ddp.exit_code, 0) << ddp.output;
  for (const std::string mode : {"full_shard", "shard_grad_op"}) {
    SCOPED_TRACE(mode);
    const auto fsdp = run(
        2, mode,
        "--fsdp \"" + mode + " auto_wrap\" --fsdp_config " + (dir_ / "fsdp.json").string() + flags);
    ASSERT_EQ(fsdp.exit_code, 0) << fsdp.output;
    EXPECT_NE(fsdp.output.find("Precision = bf16 autocast on cpu"), std::string::npos)
        << fsdp.output;
    expect_same_training(mode, "ddp");
  }
}

/// The dtypes a safetensors file stores (from its JSON header).
std::set<std::string> stored_dtypes(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  uint64_t length = 0;
  in.read(reinterpret_cast<char*>(&length), sizeof length);  // little-endian, as on x86
  std::string header(length, '\0');
  in.read(header.data(), static_cast<std::streamsize>(length));
  std::set<std::string> dtypes;
  const nlohmann::json tensors = nlohmann::json::parse(header);  // outlives the loop
  for (const auto& [name, entry] : tensors.items())
    if (name != "__metadata__") dtypes.insert(entry.at("dtype").get<std::string>());
  return dtypes;
}

// DeepSpeed's bf16 mode under ZeRO: the model is stored and runs in bf16 while the optimizer
// steps fp32 master shards. ZeRO-2 and ZeRO-3 train alike, the final model is bf16 (what
// DeepSpeed's 16-bit save writes), the zero/ shards fp32, and a resume from a checkpoint ends
// byte for byte where the uninterrupted run ended.
TEST_F(RunGlueSharded, DeepSpeedBf16TrainsA16BitModelWithFp32Masters) {
  for (int stage : {2, 3})
    std::ofstream(dir_ / ("ds" + std::to_string(stage) + ".json"))
        << R"({"zero_optimization": {"stage": )" << stage << R"(}, "bf16": {"enabled": "auto"},
        "train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto",
        "train_batch_size": "auto", "gradient_clipping": "auto"})";
  const std::string flags =
      " --per_device_train_batch_size 8 --max_steps 5 --bf16 --save_strategy steps --save_steps 3";
  const auto zero2 = run(2, "zero2", "--deepspeed " + (dir_ / "ds2.json").string() + flags);
  ASSERT_EQ(zero2.exit_code, 0) << zero2.output;
  EXPECT_NE(zero2.output.find("Precision = bf16 parameters with fp32 master weights"),
            std::string::npos)
      << zero2.output;
  const auto zero3 = run(2, "zero3", "--deepspeed " + (dir_ / "ds3.json").string() + flags);
  ASSERT_EQ(zero3.exit_code, 0) << zero3.output;
  expect_same_training("zero3", "zero2");
  EXPECT_EQ(stored_dtypes(dir_ / "zero3" / "model.safetensors"), std::set<std::string>{"BF16"});
  EXPECT_EQ(stored_dtypes(dir_ / "zero2" / "checkpoint-3" / "zero" / "rank_1.safetensors"),
            std::set<std::string>{"F32"});

  fs::create_directories(dir_ / "resumed");
  fs::copy(dir_ / "zero2" / "checkpoint-3", dir_ / "resumed" / "checkpoint-3",
           fs::copy_options::recursive);
  const auto resumed =
      run(2, "resumed",
          "--deepspeed " + (dir_ / "ds2.json").string() + flags + " --resume_from_checkpoint " +
              (dir_ / "resumed" / "checkpoint-3").string());
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_TRUE(ctrainer::testing::read_text_file(dir_ / "resumed" / "model.safetensors") ==
              ctrainer::testing::read_text_file(dir_ / "zero2" / "model.safetensors"));
}

// The global batch stays 12 (2 x 6, 3 x 4, 1 x 12), so every step sees the same examples.
TEST_F(RunGlueSharded, ShardedCheckpointResumesOnThreeThenOneProcesses) {
  std::ofstream(dir_ / "zero2.json") << R"({"zero_optimization": {"stage": 2},
      "train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto",
      "train_batch_size": "auto", "gradient_clipping": "auto"})";
  const std::string ds = "--deepspeed " + (dir_ / "zero2.json").string() +
                         " --lr_scheduler_type constant --save_strategy steps --save_steps 2";
  const auto whole = run(2, "whole", ds + " --per_device_train_batch_size 6 --max_steps 6");
  ASSERT_EQ(whole.exit_code, 0) << whole.output;
  const auto first = run(2, "split", ds + " --per_device_train_batch_size 6 --max_steps 2");
  ASSERT_EQ(first.exit_code, 0) << first.output;
  const fs::path checkpoint2 = dir_ / "split" / "checkpoint-2";
  ASSERT_TRUE(fs::exists(checkpoint2 / "zero" / "rank_1.safetensors"));
  // ctrainer-consolidate rebuilds, from the ranks' zero/ files alone, the very model.safetensors
  // the run gathered into the checkpoint (the model has no buffers), byte for byte.
  const auto consolidated =
      ctrainer::testing::run_shell(std::string(CTRAINER_CONSOLIDATE_BINARY) + " " +
                                   checkpoint2.string() + " " + (dir_ / "consolidated").string());
  ASSERT_EQ(consolidated.exit_code, 0) << consolidated.output;
  EXPECT_EQ(ctrainer::testing::read_text_file(dir_ / "consolidated" / "model.safetensors"),
            ctrainer::testing::read_text_file(checkpoint2 / "model.safetensors"));
  EXPECT_TRUE(fs::exists(dir_ / "consolidated" / "config.json"));
  // Past --max_shard_size, shards and an index naming every tensor of the single file.
  const auto sharded = ctrainer::testing::run_shell(
      std::string(CTRAINER_CONSOLIDATE_BINARY) + " --max_shard_size 20KB " + checkpoint2.string() +
      " " + (dir_ / "consolidated_shards").string());
  ASSERT_EQ(sharded.exit_code, 0) << sharded.output;
  const nlohmann::json index =
      read_json(dir_ / "consolidated_shards" / "model.safetensors.index.json");
  std::set<std::string> files, indexed;
  for (const auto& [name, file] : index.at("weight_map").items()) {
    indexed.insert(name);
    files.insert(file.get<std::string>());
  }
  EXPECT_GT(files.size(), 1u);
  for (const std::string& file : files)
    EXPECT_TRUE(fs::exists(dir_ / "consolidated_shards" / file)) << file;
  EXPECT_FALSE(fs::exists(dir_ / "consolidated_shards" / "model.safetensors"));
  const std::string single = ctrainer::testing::read_text_file(checkpoint2 / "model.safetensors");
  uint64_t header_size = 0;
  std::memcpy(&header_size, single.data(), sizeof header_size);
  std::set<std::string> expected;
  const nlohmann::json header = nlohmann::json::parse(single.substr(8, header_size));
  for (const auto& [name, entry] : header.items())
    if (name != "__metadata__") expected.insert(name);
  EXPECT_EQ(indexed, expected);
  const auto not_sharded =
      ctrainer::testing::run_shell(std::string(CTRAINER_CONSOLIDATE_BINARY) + " " +
                                   (dir_ / "data").string() + " " + (dir_ / "nowhere").string());
  EXPECT_EQ(not_sharded.exit_code, 2) << not_sharded.output;
  EXPECT_NE(not_sharded.output.find("holds no sharded state"), std::string::npos);
  const auto second = run(3, "split",
                          ds +
                              " --per_device_train_batch_size 4 --max_steps 4 "
                              "--resume_from_checkpoint " +
                              (dir_ / "split" / "checkpoint-2").string());
  ASSERT_EQ(second.exit_code, 0) << second.output;
  const auto third = run(1, "split",
                         ds +
                             " --per_device_train_batch_size 12 --max_steps 6 "
                             "--resume_from_checkpoint " +
                             (dir_ / "split" / "checkpoint-4").string());
  ASSERT_EQ(third.exit_code, 0) << third.output;
  const auto eval_whole = read_json(dir_ / "whole" / "eval_results.json");
  const auto eval_split = read_json(dir_ / "split" / "eval_results.json");
  EXPECT_NEAR(eval_split.at("eval_loss").get<double>(), eval_whole.at("eval_loss").get<double>(),
              1e-5);
  const auto log_whole = read_json(dir_ / "whole" / "trainer_state.json").at("log_history");
  const auto log_split = read_json(dir_ / "split" / "trainer_state.json").at("log_history");
  // Step 6's logged loss (the last training log) continues the same curve.
  auto last_loss = [](const nlohmann::json& log) {
    for (auto it = log.rbegin(); it != log.rend(); ++it)
      if (it->contains("loss")) return it->at("loss").get<double>();
    return -1.0;
  };
  EXPECT_NEAR(last_loss(log_split), last_loss(log_whole), 1e-5);
}

// ---- an elastic job's world sizes, resumed by hand ---------------------------------------------

TEST_F(RunGlueSharded, Zero2ShrunkAndGrownTrainsWhatDdpTrains) {
  std::ofstream(dir_ / "zero2.json") << R"({"zero_optimization": {"stage": 2},
      "train_micro_batch_size_per_gpu": "auto", "train_batch_size": "auto"})";
  expect_resharded_as_ddp("zero2", "--deepspeed " + (dir_ / "zero2.json").string());
}

TEST_F(RunGlueSharded, Zero3ShrunkAndGrownTrainsWhatDdpTrains) {
  std::ofstream(dir_ / "zero3.json") << R"({"zero_optimization": {"stage": 3},
      "train_micro_batch_size_per_gpu": "auto", "train_batch_size": "auto"})";
  expect_resharded_as_ddp("zero3", "--deepspeed " + (dir_ / "zero3.json").string());
}

TEST_F(RunGlueSharded, FsdpFullShardShrunkAndGrownTrainsWhatDdpTrains) {
  std::ofstream(dir_ / "fsdp.json") << R"({"transformer_layer_cls_to_wrap": ["BertLayer"]})";
  expect_resharded_as_ddp(
      "fsdp", "--fsdp \"full_shard auto_wrap\" --fsdp_config " + (dir_ / "fsdp.json").string());
}

}  // namespace
