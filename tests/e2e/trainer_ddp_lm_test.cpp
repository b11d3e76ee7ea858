// The multi-process Trainer on causal LMs (tests/e2e/trainer_ddp_worker.cpp --causal_lm): the
// token-level loss over the ranks, and ZeRO-3 / FSDP with one unit per decoder layer.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "support/parameter_text.h"
#include "trainer_ddp_jobs.h"

namespace {
namespace fs = std::filesystem;
using ctrainer::testing::read_text_file;
using namespace ctrainer::testing::trainer_ddp;

// A token-level loss (a causal LM on sequences of ragged lengths, accumulation 2): 2 ranks x 4
// train as one process with batches of 8 when the token count covers every rank
// (average_tokens_across_devices, the default), and differently when each rank divides by its own.
TEST(TrainerDDP, TokenLevelLossOverTheRanksMatchesOneProcess) {
  const Args lm = {
      "--causal_lm", "true", "--num_train_examples", "32", "--gradient_accumulation_steps", "2"};
  auto run_job = [&](const std::string& name, int nproc, const Args& more) {
    const fs::path dir = scratch(name);
    Args flags = worker_args(dir, lm);
    flags.insert(flags.end(), more.begin(), more.end());
    flags.insert(flags.end(), {"--per_device_train_batch_size", std::to_string(8 / nproc)});
    const JobResult job = nproc == 1 ? single_process(dir, flags) : launch(dir, nproc, flags);
    EXPECT_EQ(job.exit_code, 0) << job.output;
    return dir;
  };
  const fs::path single = run_job("lm_single", 1, {}), ddp = run_job("lm_ddp", 2, {}),
                 per_rank = run_job("lm_per_rank", 2, {"--average_tokens_across_devices", "0"});
  expect_ranks_bitwise_equal(ddp / "dump", 2, "");
  const std::string reference = read_text_file(single / "dump/params.0.txt");
  EXPECT_LE(max_parameter_difference(read_text_file(ddp / "dump/params.0.txt"), reference), 1e-5);
  EXPECT_GT(max_parameter_difference(read_text_file(per_rank / "dump/params.0.txt"), reference),
            1e-4);
  const auto ddp_losses = logged_losses(ddp / "out"), single_losses = logged_losses(single / "out");
  ASSERT_EQ(ddp_losses.size(), single_losses.size());
  ASSERT_EQ(ddp_losses.size(), 2u);  // 2 windows of 2 x 8 per epoch, 2 epochs, every 2nd logged
  for (size_t i = 0; i < ddp_losses.size(); ++i)
    EXPECT_NEAR(ddp_losses[i], single_losses[i], 1e-5) << "logged loss " << i;
  for (const auto& dir : {single, ddp, per_rank}) fs::remove_all(dir);
}

// ZeRO-3 and FSDP full_shard of the LMs with one unit per layer, the model's own layer classes
// (GPT2Block, LlamaDecoderLayer, T5Block, BartEncoderLayer and BartDecoderLayer) picked as
// accelerate picks _no_split_modules: on 2 ranks they train what DDP trains, token-level loss
// included (the decoder LMs), and save the same model.
class DecoderLayerSharding : public ::testing::TestWithParam<std::string> {};

TEST_P(DecoderLayerSharding, TrainsWhatDdpTrains) {
  const std::string family = GetParam();
  const std::map<std::string, std::string> units = {{"llama", "LlamaDecoderLayer"},
                                                    {"gpt2", "GPT2Block"},
                                                    {"t5", "T5Block"},
                                                    {"bart", "BartEncoderLayer, BartDecoderLayer"}};
  const std::string layer = units.at(family);
  const Args lm = {"--causal_lm",
                   "true",
                   "--causal_lm_family",
                   family,
                   "--num_train_examples",
                   "16",
                   "--gradient_accumulation_steps",
                   "2",
                   "--per_device_train_batch_size",
                   "4"};
  auto run_job = [&](const std::string& name, const Args& more) {
    const fs::path dir = scratch(family + "_" + name);
    Args flags = worker_args(dir, lm);
    flags.insert(flags.end(), more.begin(), more.end());
    const JobResult job = launch(dir, 2, flags);
    EXPECT_EQ(job.exit_code, 0) << job.output;
    return std::make_pair(dir, job.output);
  };
  const auto [ddp, ddp_log] = run_job("ddp", {});
  const std::string reference = read_text_file(ddp / "dump/saved_params.txt");
  ASSERT_FALSE(reference.empty()) << ddp_log;
  // The units are the model's layers: without its class named, and under DeepSpeed (which names
  // none), with every parameter sharded (stage3_param_persistence_threshold 0). DeepSpeed clips
  // only when its config says so ("auto": max_grad_norm, as DDP clips; GPT-2's first norm is >1).
  std::ofstream(ddp / "zero3.json")
      << R"({"zero_optimization": {"stage": 3, "stage3_param_persistence_threshold": 0},
            "gradient_clipping": "auto", "train_micro_batch_size_per_gpu": "auto",
            "gradient_accumulation_steps": "auto"})";
  const std::vector<std::pair<std::string, Args>> sharded = {
      {"fsdp", {"--fsdp", "full_shard auto_wrap"}},
      {"zero3", {"--deepspeed", (ddp / "zero3.json").string()}}};
  for (const auto& [name, flags] : sharded) {
    Args more = flags;
    more.insert(more.end(), {"--dump_params", "false", "--log_level", "info"});
    const auto [dir, log] = run_job(name, more);
    EXPECT_NE(log.find("one unit per " + layer + " (the model's no_split_modules"),
              std::string::npos)
        << log;
    EXPECT_LE(max_parameter_difference(read_text_file(dir / "dump/saved_params.txt"), reference),
              1e-5)
        << name;
    const auto losses = logged_losses(dir / "out"), ddp_losses = logged_losses(ddp / "out");
    ASSERT_EQ(losses.size(), ddp_losses.size()) << name;
    ASSERT_FALSE(losses.empty()) << name;
    for (size_t i = 0; i < losses.size(); ++i)
      EXPECT_NEAR(losses[i], ddp_losses[i], 1e-5) << name << " logged loss " << i;
    fs::remove_all(dir);
  }
  fs::remove_all(ddp);
}

INSTANTIATE_TEST_SUITE_P(Families, DecoderLayerSharding,
                         ::testing::Values("llama", "gpt2", "t5", "bart"));

}  // namespace
