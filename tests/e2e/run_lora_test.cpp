// LoRA end to end (issue 33, item 4): run_clm with an adapter resumed from a checkpoint trains
// and saves what the uninterrupted run does, checkpoints holding the adapter only; run_glue with
// an adapter on 2 processes (DDP, then DeepSpeed ZeRO-3) trains what 1 process trains with the
// same global batch, and --merge_lora writes the same merged folder under ZeRO-3 as without it.
// Agreement with PEFT itself: parity.lora_vs_peft.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <ctrainer/integrations/safetensors.h>

#include "support/glue_files.h"
#include "support/process.h"
#include "support/test_data.h"

namespace ctrainer {
namespace {

namespace fs = std::filesystem;
using testing::read_json;
using testing::run_shell;
using testing::write_slice;

const std::string kData = CTRAINER_EXAMPLES_DATA_DIR;

std::vector<double> step_losses(const fs::path& output_dir) {
  std::vector<double> losses;
  const nlohmann::json state = read_json(output_dir / "trainer_state.json");
  for (const auto& entry : state["log_history"])
    if (entry.contains("loss")) losses.push_back(entry["loss"].get<double>());
  return losses;
}

bool same_bytes(const fs::path& a, const fs::path& b) {
  std::ifstream x(a, std::ios::binary), y(b, std::ios::binary);
  return x && y &&
         std::equal(std::istreambuf_iterator<char>(x), {}, std::istreambuf_iterator<char>(y),
                    std::istreambuf_iterator<char>());
}

class RunLora : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::fresh_output_dir("lora");
    fs::create_directories(dir_ / "data");
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(RunLora, ClmAdapterResumesToTheUninterruptedRun) {
  {
    std::ifstream corpus(kData + "/text/kjv.txt");
    std::ofstream slice(dir_ / "train.txt");
    std::string line;
    for (int i = 0; i < 800 && std::getline(corpus, line); ++i) slice << line << '\n';
  }
  // Dropout on the adapter path: the resumed run must replay its draws too.
  const auto clm = [&](const fs::path& out) {
    return std::string(CTRAINER_RUN_CLM_BINARY) +
           " --model_type gpt2 --config_overrides n_embd=32,n_layer=2,n_head=2,vocab_size=8192,"
           "n_positions=64 --tokenizer_name " +
           kData + "/text/kjv-bpe-8k --train_file " + (dir_ / "train.txt").string() +
           " --block_size 32 --output_dir " + out.string() +
           " --per_device_train_batch_size 8 --max_steps 8 --save_steps 4 --logging_steps 1"
           " --learning_rate 5e-3 --report_to none --disable_tqdm true --do_train"
           " --lora_r 4 --lora_alpha 8 --lora_dropout 0.1 --lora_target_modules all-linear";
  };
  const auto whole = run_shell(clm(dir_ / "whole"));
  ASSERT_EQ(whole.exit_code, 0) << whole.output;
  EXPECT_NE(whole.output.find("trainable params"), std::string::npos) << whole.output;
  const std::vector<double> expected = step_losses(dir_ / "whole");
  ASSERT_EQ(expected.size(), 8u);
  EXPECT_NE(expected.front(), expected.back()) << "the adapter did not train";
  // Checkpoints and the final folder hold the adapter, as a PeftModel's do.
  for (const fs::path& folder : {dir_ / "whole" / "checkpoint-4", dir_ / "whole"}) {
    EXPECT_TRUE(fs::exists(folder / "adapter_model.safetensors")) << folder;
    EXPECT_TRUE(fs::exists(folder / "adapter_config.json")) << folder;
    EXPECT_FALSE(fs::exists(folder / "model.safetensors")) << folder;
  }
  // Only A and B of the 8 adapted projections (c_attn, c_proj, c_fc, mlp.c_proj per layer).
  const auto adapter = load_safetensors((dir_ / "whole" / "adapter_model.safetensors").string());
  EXPECT_EQ(adapter.tensors.size(), 16u);
  for (const auto& [key, tensor] : adapter.tensors) {
    EXPECT_TRUE(key.starts_with("base_model.model.transformer.h.")) << key;
    EXPECT_TRUE(key.ends_with(".lora_A.weight") || key.ends_with(".lora_B.weight")) << key;
  }

  fs::create_directories(dir_ / "resumed");
  fs::copy(dir_ / "whole" / "checkpoint-4", dir_ / "resumed" / "checkpoint-4",
           fs::copy_options::recursive);
  const auto resumed = run_shell(clm(dir_ / "resumed"));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("resuming training at"), std::string::npos) << resumed.output;
  const std::vector<double> losses = step_losses(dir_ / "resumed");
  ASSERT_EQ(losses.size(), 8u);
  for (size_t i = 0; i < 8; ++i) EXPECT_DOUBLE_EQ(losses[i], expected[i]) << "step " << i + 1;
  EXPECT_TRUE(same_bytes(dir_ / "whole" / "adapter_model.safetensors",
                         dir_ / "resumed" / "adapter_model.safetensors"))
      << "the resumed run saved another adapter";
}

class RunGlueLora : public RunLora {
 protected:
  void SetUp() override {
    RunLora::SetUp();
    const fs::path source = fs::path(kData) / "glue" / "MRPC";
    write_slice(source / "train.tsv", dir_ / "data" / "train.tsv", 96, true);
    write_slice(source / "dev.tsv", dir_ / "data" / "dev.tsv", 41, true);
    // Dropout off: runs on different process counts compute the same function.
    std::ofstream(dir_ / "config.json") << R"({"model_type": "bert", "vocab_size": 30522,
        "hidden_size": 16, "num_hidden_layers": 2, "num_attention_heads": 2,
        "intermediate_size": 32, "max_position_embeddings": 64, "hidden_dropout_prob": 0.0,
        "attention_probs_dropout_prob": 0.0})";
  }

  /// run_glue with a LoRA adapter, on `nproc` processes under ctrainer-run (0: run directly).
  testing::CommandResult run(int nproc, const std::string& out, const std::string& flags) const {
    const std::string args =
        "--task_name mrpc --data_dir " + (dir_ / "data").string() + " --output_dir " +
        (dir_ / out).string() + " --cache_dir " + (dir_ / "cache").string() + " --config_name " +
        (dir_ / "config.json").string() + " --tokenizer_name " + kData +
        "/vocab/bert-base-uncased-vocab.txt --max_seq_length 64 --per_device_eval_batch_size 4 "
        "--learning_rate 1e-2 --logging_steps 1 --report_to none --disable_tqdm --do_train "
        "--do_eval --max_steps 6 --lora_r 4 --lora_alpha 16 --lora_target_modules "
        "query,value,dense --merge_lora " +
        flags;
    if (nproc == 0) return run_shell(std::string(CTRAINER_RUN_GLUE_BINARY) + " " + args);
    return run_shell(std::string(CTRAINER_RUN_BINARY) + " --standalone --nproc-per-node " +
                     std::to_string(nproc) + " " + CTRAINER_RUN_GLUE_BINARY + " " + args);
  }

  void expect_same_training(const std::string& a, const std::string& b) const {
    const auto eval_a = read_json(dir_ / a / "eval_results.json");
    const auto eval_b = read_json(dir_ / b / "eval_results.json");
    EXPECT_NEAR(eval_a.at("eval_loss").get<double>(), eval_b.at("eval_loss").get<double>(), 1e-5);
    const std::vector<double> losses_a = step_losses(dir_ / a), losses_b = step_losses(dir_ / b);
    ASSERT_EQ(losses_a.size(), 6u);
    ASSERT_EQ(losses_b.size(), 6u);
    for (size_t i = 0; i < 6; ++i) EXPECT_NEAR(losses_a[i], losses_b[i], 1e-5) << "step " << i + 1;
    EXPECT_GT(std::abs(losses_a.front() - losses_a.back()), 1e-4) << "the adapter did not train";
    // The merged folders: a plain model whose weights agree.
    const auto merged_a = load_safetensors((dir_ / a / "merged" / "model.safetensors").string());
    const auto merged_b = load_safetensors((dir_ / b / "merged" / "model.safetensors").string());
    ASSERT_EQ(merged_a.tensors.size(), merged_b.tensors.size());
    for (const auto& [key, tensor] : merged_a.tensors) {
      EXPECT_EQ(key.find("lora"), std::string::npos) << key;
      ASSERT_TRUE(merged_b.tensors.count(key)) << key;
      EXPECT_LT((tensor - merged_b.tensors.at(key)).abs().max().item<double>(), 1e-5) << key;
    }
    EXPECT_TRUE(fs::exists(dir_ / a / "merged" / "config.json"));
    EXPECT_TRUE(fs::exists(dir_ / a / "merged" / "vocab.txt"));
  }
};

TEST_F(RunGlueLora, DdpOnTwoProcessesTrainsWhatOneProcessTrains) {
  const auto one = run(0, "one", "--per_device_train_batch_size 8");
  ASSERT_EQ(one.exit_code, 0) << one.output;
  const auto ddp = run(2, "ddp", "--per_device_train_batch_size 4");
  ASSERT_EQ(ddp.exit_code, 0) << ddp.output;
  expect_same_training("one", "ddp");
}

TEST_F(RunGlueLora, Zero3OnTwoProcessesTrainsWhatOneProcessTrains) {
  std::ofstream(dir_ / "zero3.json") << R"({"zero_optimization": {"stage": 3},
      "train_micro_batch_size_per_gpu": "auto", "train_batch_size": "auto",
      "gradient_accumulation_steps": "auto"})";
  const auto one = run(0, "one", "--per_device_train_batch_size 8");
  ASSERT_EQ(one.exit_code, 0) << one.output;
  const auto zero3 = run(
      2, "zero3", "--per_device_train_batch_size 4 --deepspeed " + (dir_ / "zero3.json").string());
  ASSERT_EQ(zero3.exit_code, 0) << zero3.output;
  EXPECT_NE(zero3.output.find("ZeRO-3"), std::string::npos) << zero3.output;
  expect_same_training("one", "zero3");
}

}  // namespace
}  // namespace ctrainer
