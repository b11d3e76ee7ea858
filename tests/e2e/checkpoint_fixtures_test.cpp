// Checkpoints written by an earlier build (tests/data/checkpoints_v1, made by its
// make_fixtures.sh with main at bbb49f7) still resume: plain, ZeRO-2, ZeRO-3 and FSDP
// full_shard. Each fixture is the checkpoint-3 of a 6-step run and the weights that run ended
// with; today's ctrainer-train-classifier resumes the checkpoint (under ctrainer-run, with the
// fixture's number of processes) and must end on those weights. This is what keeps the
// checkpoint format, and what a resume restores, from changing under a refactoring of the code
// that writes and reads it (the Strategy's sharded state, the optimizer-state codec).
//
// Bit for bit where the CPU takes the fixture machine's MKL kernels (the Intel Xeon dev machines
// of 2026-11); other CPUs round the GEMMs differently (on an AMD EPYC with AVX-512 the resumed
// weights end within 1.2e-7 of the recorded ones), so they must agree within kTolerance. That
// still catches what the test is for, a resume that restores a different state: resuming the
// plain fixture with dropout 0.11 instead of 0.1 ends 9e-5 away, with a linear schedule over 7
// steps instead of 6 2.9e-3 away (measured on the AMD machine), against 1.2e-7 of rounding.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <ATen/ATen.h>

#include <ctrainer/integrations/safetensors.h>

#include "support/process.h"

namespace {

namespace fs = std::filesystem;

// The flags of make_fixtures.sh (keep the two in step).
constexpr const char* kTrainFlags =
    " --do_train --max_steps 6 --save_strategy steps --save_steps 3 --logging_steps 1"
    " --report_to none --disable_tqdm true --seed 5 --num_train_examples 96"
    " --num_eval_examples 8 --hidden_size 8 --num_hidden_layers 2 --dropout 0.1"
    " --per_device_train_batch_size 8 --learning_rate 0.01 --weight_decay 0.01"
    " --warmup_steps 2 --dataloader_num_workers 0";

const fs::path kFixtures = fs::path(CTRAINER_TEST_DATA_DIR) / "checkpoints_v1";
constexpr double kTolerance = 1e-6;

class CheckpointFixtures : public ::testing::TestWithParam<std::pair<std::string, int>> {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("ctrainer_fixture_" + std::to_string(::getpid()) + "_" + GetParam().first);
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path dir_;
};

TEST_P(CheckpointFixtures, ResumesToTheWeightsTheOriginalRunEndedWith) {
  const auto& [name, processes] = GetParam();
  const fs::path fixture = kFixtures / name;
  ASSERT_TRUE(fs::is_directory(fixture / "checkpoint-3")) << fixture;
  const fs::path out = dir_ / "out";
  fs::create_directories(out);
  fs::copy(fixture / "checkpoint-3", out / "checkpoint-3", fs::copy_options::recursive);

  std::string flags = kTrainFlags;
  if (name == "zero2" || name == "zero3") {
    const fs::path config = dir_ / (name + ".json");
    std::ofstream(config) << R"({"zero_optimization": {"stage": )" << name.back()
                          << R"(}, "train_micro_batch_size_per_gpu": "auto"})";
    flags += " --deepspeed " + config.string();
  } else if (name == "fsdp") {
    flags += " --fsdp full_shard";
  }
  const auto result = ctrainer::testing::run_shell(
      "OMP_NUM_THREADS=1 " + std::string(CTRAINER_RUN_BINARY) + " --standalone --nproc-per-node " +
      std::to_string(processes) + " " + CTRAINER_TRAIN_CLASSIFIER_BINARY + " --output_dir " +
      out.string() + " --resume_from_checkpoint " + (out / "checkpoint-3").string() + flags +
      " 2>&1");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("Resuming from"), std::string::npos) << result.output;

  const auto expected = ctrainer::load_safetensors((fixture / "final_model.safetensors").string());
  const auto resumed =
      ctrainer::load_safetensors((out / "checkpoint-6" / "model.safetensors").string());
  ASSERT_EQ(resumed.tensors.size(), expected.tensors.size());
  for (const auto& [key, value] : expected.tensors) {
    ASSERT_TRUE(resumed.tensors.count(key)) << key;
    const at::Tensor& got = resumed.tensors.at(key);
    ASSERT_EQ(got.sizes(), value.sizes()) << name << " " << key;
    const double difference = (got - value).abs().max().item<double>();
    EXPECT_LE(difference, kTolerance) << name << " " << key << ": max difference " << difference;
  }
}

INSTANTIATE_TEST_SUITE_P(EveryKind, CheckpointFixtures,
                         ::testing::Values(std::make_pair(std::string("plain"), 1),
                                           std::make_pair(std::string("zero2"), 2),
                                           std::make_pair(std::string("zero3"), 2),
                                           std::make_pair(std::string("fsdp"), 2)),
                         [](const auto& info) { return info.param.first; });

}  // namespace
