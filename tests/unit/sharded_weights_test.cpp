// Sharded safetensors checkpoints (model.safetensors.index.json): max_shard_size as
// huggingface_hub parses it, the split as split_torch_state_dict_into_shards makes it, saving
// (stale files of an earlier save removed), loading (bad indexes refused by name) and a model
// saved in shards loading back through the registry. Against transformers:
// tests/parity/sharded_checkpoint_parity.py.
#include <gtest/gtest.h>

#include <unistd.h>
#include <filesystem>
#include <fstream>

#include <torch/torch.h>

#include <ctrainer/core/json_file.h>
#include <ctrainer/integrations/safetensors.h>
#include <ctrainer/integrations/safetensors_index.h>
#include <ctrainer/models/pretrained_weights.h>
#include <ctrainer/models/registry/model_registry.h>

#include "support/decoder_batches.h"
#include "support/expect_error.h"

namespace ctrainer {
namespace sharded_weights_test {

namespace fs = std::filesystem;
using testing::expect_error;
using Tensors = std::vector<std::pair<std::string, at::Tensor>>;

class ShardedWeights : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("ctrainer_sharded_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::set<std::string> files() const {
    std::set<std::string> names;
    for (const auto& entry : fs::directory_iterator(dir_)) names.insert(entry.path().filename());
    return names;
  }

  fs::path dir_;
};

/// Byte tensors of the given sizes named t0, t1, ...
Tensors byte_tensors(const std::vector<int64_t>& sizes) {
  Tensors out;
  for (size_t i = 0; i < sizes.size(); ++i)
    out.emplace_back("t" + std::to_string(i),
                     torch::full({sizes[i]}, static_cast<int64_t>(i), torch::kUInt8));
  return out;
}

TEST(ShardSize, ParsesAsHuggingFaceHub) {
  EXPECT_EQ(parse_shard_size("5GB", "max_shard_size"), 5'000'000'000);
  EXPECT_EQ(parse_shard_size("50gb", "max_shard_size"), 50'000'000'000);
  EXPECT_EQ(parse_shard_size(" 1.5MB ", "max_shard_size"), 1'500'000);
  EXPECT_EQ(parse_shard_size("20 KB", "max_shard_size"), 20'000);
  EXPECT_EQ(parse_shard_size("2TB", "max_shard_size"), 2'000'000'000'000);
  EXPECT_EQ(parse_shard_size("4096", "max_shard_size"), 4096);
  EXPECT_EQ(kDefaultMaxShardBytes, parse_shard_size("50GB", "x"));
  for (const char* bad :
       {"", "GB", "5GiB", "5 G", "-1MB", "0", "0.0001KB", "five", "99999999999999999999"})
    expect_error([&] { parse_shard_size(bad, "--max_shard_size"); },
                 {"--max_shard_size", "give a size such as \"5GB\""});
}

TEST(ShardSplit, FollowsSplitTorchStateDictIntoShards) {
  // huggingface_hub's own example: [6, 6, 2, 6, 2, 2] at 10 -> [6], [6+2], [6+2+2].
  const SafetensorsSplit split = split_into_shards(byte_tensors({6, 6, 2, 6, 2, 2}), 10);
  ASSERT_EQ(split.shards.size(), 3u);
  EXPECT_EQ(split.shards[0].names, (std::vector<std::string>{"t0"}));
  EXPECT_EQ(split.shards[1].names, (std::vector<std::string>{"t1", "t2"}));
  EXPECT_EQ(split.shards[2].names, (std::vector<std::string>{"t3", "t4", "t5"}));
  EXPECT_EQ(split.shards[0].file_name, "model-00001-of-00003.safetensors");
  EXPECT_EQ(split.shards[2].file_name, "model-00003-of-00003.safetensors");
  EXPECT_EQ(split.total_size, 24);
  // A tensor above the limit sits alone; the open shard carries on after it.
  const SafetensorsSplit big = split_into_shards(byte_tensors({3, 12, 4}), 10);
  ASSERT_EQ(big.shards.size(), 2u);
  EXPECT_EQ(big.shards[0].names, (std::vector<std::string>{"t1"}));
  EXPECT_EQ(big.shards[1].names, (std::vector<std::string>{"t0", "t2"}));
  // Element sizes count: 3 float32 values are 12 bytes.
  const SafetensorsSplit floats = split_into_shards({{"f", torch::zeros({3})}}, 12);
  EXPECT_EQ(floats.shards.size(), 1u);
  EXPECT_EQ(floats.shards[0].file_name, "model.safetensors");
  EXPECT_FALSE(floats.sharded());
}

TEST_F(ShardedWeights, SavedShardsLoadBackAndAnEarlierSavesFilesGo) {
  save_safetensors((dir_ / "model.safetensors").string(), {{"old", torch::zeros({1})}});
  save_safetensors((dir_ / "model-00001-of-00009.safetensors").string(),
                   {{"old", torch::zeros({1})}});
  std::ofstream(dir_ / "notes.txt") << "kept";
  const Tensors tensors = byte_tensors({6, 6, 2, 6, 2, 2});
  const SafetensorsSplit split = save_safetensors_shards(dir_, tensors, 10, 24);
  EXPECT_EQ(files(),
            (std::set<std::string>{
                "model-00001-of-00003.safetensors", "model-00002-of-00003.safetensors",
                "model-00003-of-00003.safetensors", "model.safetensors.index.json", "notes.txt"}));
  const nlohmann::json index = read_json_file(dir_ / kSafetensorsIndexFile);
  EXPECT_EQ(index.at("metadata"), (nlohmann::json{{"total_parameters", 24}, {"total_size", 24}}));
  EXPECT_EQ(index.at("weight_map").at("t4"), "model-00003-of-00003.safetensors");
  EXPECT_EQ(index.at("weight_map").size(), 6u);
  const auto loaded = load_safetensors_shards(dir_ / kSafetensorsIndexFile);
  ASSERT_EQ(loaded.size(), tensors.size());
  for (const auto& [name, tensor] : tensors) EXPECT_TRUE(loaded.at(name).equal(tensor)) << name;
  // A later save that fits one file drops the shards and the index.
  save_safetensors_shards(dir_, tensors, 1000, 24);
  EXPECT_EQ(files(), (std::set<std::string>{"model.safetensors", "notes.txt"}));
  EXPECT_EQ(split.shards.size(), 3u);
}

TEST_F(ShardedWeights, ABadIndexIsRefusedByName) {
  save_safetensors_shards(dir_, byte_tensors({3, 3, 6}), 6, 12);  // [t0, t1], [t2]
  const fs::path index = dir_ / kSafetensorsIndexFile;
  const auto with_map = [&](const nlohmann::json& map) {
    write_json_file(index, {{"weight_map", map}});
  };
  const std::string first = "model-00001-of-00002.safetensors";
  const std::string second = "model-00002-of-00002.safetensors";
  with_map({{"t0", "../" + first}, {"t1", first}, {"t2", second}});
  expect_error([&] { load_safetensors_shards(index); },
               {index.string(), "not a file of the index's own folder"});
  with_map({{"t0", first}, {"t1", first}, {"t2", "/etc/passwd"}});
  expect_error([&] { load_safetensors_shards(index); }, {"shards must lie next to the index"});
  with_map({{"t0", first}, {"t1", first}, {"t2", "model-00003-of-00003.safetensors"}});
  expect_error([&] { load_safetensors_shards(index); },
               {"model-00003-of-00003.safetensors, which is missing"});
  with_map({{"t0", first}, {"t1", first}, {"t2", first}});
  expect_error([&] { load_safetensors_shards(index); },
               {"puts tensor t2 in " + first + ", which does not hold it"});
  with_map({{"t0", first}, {"t2", second}});
  expect_error([&] { load_safetensors_shards(index); }, {"holds tensor t1", "does not list"});
  with_map({{"t0", 3}});
  expect_error([&] { load_safetensors_shards(index); }, {"weight_map[\"t0\"] is 3"});
  write_json_file(index, {{"weights", {}}});
  expect_error([&] { load_safetensors_shards(index); }, {index.string(), "no \"weight_map\""});
  std::ofstream(index) << "{not json";
  expect_error([&] { load_safetensors_shards(index); }, {index.string(), "not valid JSON"});
}

TEST_F(ShardedWeights, AModelSavedInShardsLoadsThroughTheRegistryWithItsOutputs) {
  torch::manual_seed(3);
  const auto config = AutoConfig::from_json(testing::tiny_llama_json(), "tiny llama");
  const auto model = AutoModel::from_config(*config, ModelTask::kCausalLM);
  model->eval();
  const std::vector<std::pair<std::string, at::Tensor>> state = ordered_state_dict(*model);
  // torch's state_dict order: the embedding first, the head last.
  EXPECT_EQ(state.front().first, "model.embed_tokens.weight");
  EXPECT_EQ(state.back().first, "lm_head.weight");
  save_pretrained(*model, dir_.string(), "LlamaForCausalLM", /*max_shard_bytes=*/4000);
  EXPECT_FALSE(fs::exists(dir_ / "model.safetensors"));
  const nlohmann::json index = read_json_file(dir_ / kSafetensorsIndexFile);
  int64_t parameters = 0;
  for (const auto& p : model->parameters()) parameters += p.numel();
  EXPECT_EQ(index.at("metadata").at("total_parameters"), parameters);
  EXPECT_EQ(index.at("metadata").at("total_size"), parameters * 4);
  EXPECT_GT(files().size(), 4u);  // shards, the index, config.json

  const auto loaded = AutoModel::from_pretrained(dir_.string(), ModelTask::kCausalLM);
  loaded->eval();
  const Batch batch = testing::ragged_lm_batch();
  torch::NoGradGuard no_grad;
  EXPECT_TRUE(loaded->forward(batch).logits.equal(model->forward(batch).logits));
  // A path to the index itself works too.
  const auto again = AutoModel::from_config(*config, ModelTask::kCausalLM);
  const WeightLoadReport report = load_pretrained_weights(
      *again, (dir_ / kSafetensorsIndexFile).string(), WeightLoadOptions{.strict = true});
  EXPECT_TRUE(report.missing_keys.empty());
  fs::remove(dir_ / kSafetensorsIndexFile);
  expect_error([&] { AutoModel::from_pretrained(dir_.string(), ModelTask::kCausalLM); },
               {"has no model.safetensors and no model.safetensors.index.json"});
}

}  // namespace sharded_weights_test
}  // namespace ctrainer
