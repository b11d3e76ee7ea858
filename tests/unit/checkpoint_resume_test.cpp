// Exact resume: a run stopped at step k and resumed from its checkpoint ends bitwise equal to
// the uninterrupted run (parameters, optimizer state, logged losses); plus fallback from broken
// checkpoints, rotation, best-model tracking and refusals.
#include <gtest/gtest.h>

#include <zlib.h>

#include <filesystem>
#include <fstream>

#include <torch/optim/adamw.h>

#include <ctrainer/core/errors.h>
#include <ctrainer/integrations/safetensors.h>
#include <ctrainer/models/simple/mlp_classifier.h>
#include <ctrainer/trainer/callbacks/early_stopping_callback.h>
#include <ctrainer/trainer/checkpoint/checkpoint_dir.h>
#include <ctrainer/trainer/checkpoint/optimizer_state.h>
#include <ctrainer/trainer/trainer.h>

#include "support/test_data.h"

namespace ctrainer {
namespace checkpoint_resume_test {
namespace fs = std::filesystem;

/// Stops training after step k (the checkpoint of step k is written by save_steps).
using testing::StopAt;

struct RunResult {
  std::vector<at::Tensor> params;
  OptimizerStateDict optimizer;
  std::vector<nlohmann::json> history;
};

struct RunSetup {
  int64_t seed = 42;
  int64_t accumulation = 1;
  int64_t max_steps = 12;
  int64_t save_steps = 1;
  /// Not a divisor of the stop points, so a checkpoint holds an unlogged running loss.
  int64_t logging_steps = 4;
  SaveStrategy save_strategy = SaveStrategy::kSteps;
  int64_t num_workers = 0;
  bool group_by_length = false;
};

/// Blobs with made-up example lengths, so that --group_by_length has something to group.
class BlobsWithLengths : public Dataset {
 public:
  explicit BlobsWithLengths(std::shared_ptr<TensorDataset> inner) : inner_(std::move(inner)) {}
  int64_t size() const override { return inner_->size(); }
  Example get(int64_t i) const override { return inner_->get(i); }
  std::optional<std::vector<int64_t>> lengths() const override {
    std::vector<int64_t> out;
    for (int64_t i = 0; i < size(); ++i) out.push_back((i * 7) % 11 + 1);
    return out;
  }

 private:
  std::shared_ptr<TensorDataset> inner_;
};

TrainingArguments args_for(const RunSetup& s, const std::string& dir) {
  TrainingArguments args = testing::quiet_args("unused");
  args.output_dir = dir;
  args.seed = s.seed;
  args.per_device_train_batch_size = 4;  // 22 examples -> 6 batches per epoch (last one short)
  args.gradient_accumulation_steps = s.accumulation;
  args.max_steps = s.max_steps;
  args.learning_rate = 1e-2;
  args.weight_decay = 0.01;
  args.warmup_steps = 2;
  args.logging_steps = static_cast<double>(s.logging_steps);
  args.save_strategy = s.save_strategy;
  args.save_steps = static_cast<double>(s.save_steps);
  args.eval_strategy = IntervalStrategy::kSteps;
  args.eval_steps = 3;
  args.dataloader_num_workers = s.num_workers;
  args.group_by_length = s.group_by_length;
  return args;
}

RunResult run(const RunSetup& s, const std::string& dir, std::optional<int64_t> stop_at,
              std::optional<std::string> resume, uint64_t init_seed = 9) {
  std::shared_ptr<Dataset> data = testing::make_blobs_dataset(22, 5, 4);
  if (s.group_by_length)
    data = std::make_shared<BlobsWithLengths>(std::static_pointer_cast<TensorDataset>(data));
  auto args = args_for(s, dir);
  args.resume_from_checkpoint = resume;
  torch::manual_seed(init_seed);
  auto model = std::make_shared<MLPClassifier>(5, 16, 2, /*dropout=*/0.3, /*layers=*/2);
  std::vector<std::shared_ptr<TrainerCallback>> cbs;
  if (stop_at) cbs.push_back(std::make_shared<StopAt>(*stop_at));
  Trainer trainer(model, args, {.train_dataset = data, .eval_dataset = data, .callbacks = cbs});
  trainer.train();
  RunResult r;
  for (const auto& p : model->parameters()) r.params.push_back(p.detach().clone());
  r.optimizer = optimizer_state_dict(*trainer.optimizer());
  r.history = trainer.state().log_history;
  return r;
}

/// Log entries of training steps and evaluations (the final train-metrics entry has timings).
std::vector<nlohmann::json> step_logs(const std::vector<nlohmann::json>& history) {
  std::vector<nlohmann::json> out;
  for (auto e : history) {
    if (e.contains("train_runtime")) continue;
    for (const char* k : {"eval_runtime", "eval_samples_per_second", "eval_steps_per_second"})
      e.erase(k);
    out.push_back(e);
  }
  return out;
}

void expect_identical(const RunResult& a, const RunResult& b) {
  ASSERT_EQ(a.params.size(), b.params.size());
  for (size_t i = 0; i < a.params.size(); ++i)
    EXPECT_TRUE(a.params[i].equal(b.params[i])) << "param " << i;
  ASSERT_EQ(a.optimizer.tensors.size(), b.optimizer.tensors.size());
  for (const auto& [k, t] : a.optimizer.tensors)
    EXPECT_TRUE(t.equal(b.optimizer.tensors.at(k))) << k;
  EXPECT_EQ(a.optimizer.meta, b.optimizer.meta);
  EXPECT_EQ(step_logs(a.history), step_logs(b.history));
}

TEST(CheckpointResume, StopAndResumeEqualsUninterruptedForSeedsAndStopPoints) {
  // 6 batches per epoch: k=3 is mid-epoch, k=6 an epoch boundary, k=8 mid second epoch;
  // with accumulation 2 an epoch is 3 steps (the last window is a single short batch).
  for (int64_t seed : {1, 2, 3}) {
    for (auto [accumulation, k] :
         std::vector<std::pair<int64_t, int64_t>>{{1, 3}, {1, 6}, {1, 8}, {2, 3}, {2, 4}}) {
      SCOPED_TRACE("seed " + std::to_string(seed) + " accumulation " +
                   std::to_string(accumulation) + " stop " + std::to_string(k));
      RunSetup s{.seed = seed, .accumulation = accumulation};
      auto straight = run(s, testing::fresh_output_dir("straight"), std::nullopt, std::nullopt);
      const auto dir = testing::fresh_output_dir("stopped");
      run(s, dir, k, std::nullopt);
      ASSERT_TRUE(fs::exists(checkpoint_path(dir, k)));
      // A different initialisation proves the weights come from the checkpoint.
      auto resumed = run(s, dir, std::nullopt, "latest", /*init_seed=*/77);
      expect_identical(straight, resumed);
    }
  }
}

TEST(CheckpointResume, WorkersAndGroupByLengthResumeExactly) {
  // Batches prefetched by 2 worker threads, in a length-grouped order: the resumed run starts
  // the worker stream at the first unseen batch and ends bitwise equal.
  RunResult first_straight;
  for (auto [accumulation, k] : std::vector<std::pair<int64_t, int64_t>>{{1, 8}, {2, 4}}) {
    SCOPED_TRACE("accumulation " + std::to_string(accumulation) + " stop " + std::to_string(k));
    RunSetup s{.seed = 4, .accumulation = accumulation, .num_workers = 2, .group_by_length = true};
    auto straight = run(s, testing::fresh_output_dir("straight"), std::nullopt, std::nullopt);
    const auto dir = testing::fresh_output_dir("stopped");
    run(s, dir, k, std::nullopt);
    ASSERT_TRUE(fs::exists(checkpoint_path(dir, k)));
    // The checkpoint records the sampler that ordered the data and where it stood: both stop
    // points are 2 batches into the second epoch (6 batches per epoch).
    auto rng = nlohmann::json::parse(std::ifstream(checkpoint_path(dir, k) / "rng_state.json"));
    EXPECT_EQ(rng["sampler"]["sampler"], "length_grouped");
    EXPECT_EQ(rng["sampler"]["seed"], 4);
    EXPECT_EQ(rng["sampler"]["epoch"], 1);
    EXPECT_EQ(rng["sampler"]["position"], 2);
    expect_identical(straight, run(s, dir, std::nullopt, "latest", /*init_seed=*/77));
    if (accumulation == 1) first_straight = straight;
  }
  // Workers do not change the result: the same run with the batches built in the loop.
  RunSetup inline_loading{.seed = 4, .group_by_length = true};
  expect_identical(first_straight, run(inline_loading, testing::fresh_output_dir("inline"),
                                       std::nullopt, std::nullopt));
}

TEST(CheckpointResume, EpochCheckpointsResumeAtTheNextEpoch) {
  // save_strategy epoch: the checkpoint is written after on_epoch_end (6 batches per epoch), and
  // the resumed run must start the next epoch, not replay the finished one.
  for (int64_t accumulation : {1, 2}) {
    RunSetup s{.seed = 5,
               .accumulation = accumulation,
               .max_steps = accumulation == 1 ? 15 : 8,
               .save_strategy = SaveStrategy::kEpoch};
    const int64_t first_epoch_end = accumulation == 1 ? 6 : 3;
    auto straight = run(s, testing::fresh_output_dir("epoch_straight"), std::nullopt, std::nullopt);
    const auto dir = testing::fresh_output_dir("epoch_stopped");
    run(s, dir, first_epoch_end + 1, std::nullopt);
    // Stopping also ends the epoch, which saves (as HF does); remove that folder to stand for a
    // kill during the second epoch, so the resume starts from the epoch-end checkpoint.
    fs::remove_all(checkpoint_path(dir, first_epoch_end + 1));
    ASSERT_EQ(list_checkpoints(dir).back(), checkpoint_path(dir, first_epoch_end));
    expect_identical(straight, run(s, dir, std::nullopt, "latest", 77));
  }
}

TEST(CheckpointResume, LayoutHasHfFilesAndFieldNames) {
  const auto dir = testing::fresh_output_dir("layout");
  run(RunSetup{.max_steps = 2, .save_steps = 2}, dir, std::nullopt, std::nullopt);
  const auto ckpt = checkpoint_path(dir, 2);
  for (const char* f : {"model.safetensors", "optimizer.safetensors", "optimizer.json",
                        "scheduler.json", "trainer_state.json", "training_args.json",
                        "rng_state.json", "loop_state.json", "manifest.json"})
    EXPECT_TRUE(fs::exists(ckpt / f)) << f;
  auto state = nlohmann::json::parse(std::ifstream(ckpt / "trainer_state.json"));
  for (const char* k : {"epoch",
                        "global_step",
                        "max_steps",
                        "logging_steps",
                        "eval_steps",
                        "save_steps",
                        "train_batch_size",
                        "num_train_epochs",
                        "total_flos",
                        "log_history",
                        "best_metric",
                        "best_global_step",
                        "best_model_checkpoint",
                        "is_local_process_zero",
                        "is_world_process_zero",
                        "stateful_callbacks",
                        "num_input_tokens_seen",
                        "is_hyper_param_search",
                        "trial_name",
                        "trial_params"})
    EXPECT_TRUE(state.contains(k)) << k;
  EXPECT_EQ(state.size(), 20u);  // exactly HF's TrainerState fields
  EXPECT_EQ(state["global_step"], 2);
  EXPECT_EQ(state["eval_steps"], 3);
  // HF's TrainerControl.state() as of the save: the last step stops training and saves.
  EXPECT_EQ(state["stateful_callbacks"]["TrainerControl"],
            nlohmann::json::parse(R"({"args": {"should_training_stop": true,
                "should_epoch_stop": false, "should_save": true, "should_evaluate": false,
                "should_log": false}, "attributes": {}})"));
  auto weights = load_safetensors((ckpt / "model.safetensors").string());
  EXPECT_EQ(weights.metadata.at("format"), "pt");
  EXPECT_TRUE(weights.tensors.count("classifier.weight"));
  EXPECT_TRUE(weights.tensors.count("layers.0.weight"));
  EXPECT_FALSE(verify_checkpoint(ckpt).has_value());
}

TEST(CheckpointResume, CorruptedNewestCheckpointFallsBackAndExplicitPathIsAnError) {
  const auto dir = testing::fresh_output_dir("corrupt");
  run(RunSetup{.max_steps = 4, .save_steps = 2}, dir, std::nullopt, std::nullopt);
  const auto newest = checkpoint_path(dir, 4);
  {  // flip one byte in the middle of the weights: same size, different CRC
    std::fstream f(newest / "model.safetensors", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(fs::file_size(newest / "model.safetensors") / 2));
    f.put('\x7f');
  }
  auto problem = verify_checkpoint(newest);
  ASSERT_TRUE(problem.has_value());
  EXPECT_NE(problem->find("model.safetensors"), std::string::npos);
  std::vector<std::string> reported;
  auto latest = latest_complete_checkpoint(
      dir, [&](const fs::path& p, const std::string&) { reported.push_back(p.string()); });
  ASSERT_TRUE(latest.has_value());
  EXPECT_EQ(*latest, checkpoint_path(dir, 2));
  EXPECT_EQ(reported, std::vector<std::string>{newest.string()});
  // Truncation and a missing manifest (a crash before the rename cannot leave this, but a
  // copy can) are both reported too.
  fs::resize_file(checkpoint_path(dir, 2) / "optimizer.safetensors", 10);
  EXPECT_NE(verify_checkpoint(checkpoint_path(dir, 2))->find("optimizer.safetensors"),
            std::string::npos);
  try {
    run(RunSetup{.max_steps = 6, .save_steps = 2}, dir, std::nullopt, newest.string());
    FAIL() << "resuming from a corrupted checkpoint must fail";
  } catch (const ArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("model.safetensors"), std::string::npos) << e.what();
  }
}

TEST(CheckpointResume, RotationKeepsTheNewestAndTheBest) {
  const auto dir = testing::fresh_output_dir("rotation");
  for (int step : {1, 2, 3, 4, 5}) fs::create_directories(checkpoint_path(dir, step));
  auto deleted = rotate_checkpoints(dir, 2, checkpoint_path(dir, 2));
  std::vector<fs::path> left = list_checkpoints(dir);
  EXPECT_EQ(left, (std::vector<fs::path>{checkpoint_path(dir, 2), checkpoint_path(dir, 5)}));
  EXPECT_EQ(deleted.size(), 3u);
  // Limit 1 with a best checkpoint that is not the newest keeps both (HF).
  fs::create_directories(checkpoint_path(dir, 6));
  rotate_checkpoints(dir, 1, checkpoint_path(dir, 2));
  EXPECT_EQ(list_checkpoints(dir),
            (std::vector<fs::path>{checkpoint_path(dir, 2), checkpoint_path(dir, 6)}));
  rotate_checkpoints(dir, 1, std::nullopt);
  EXPECT_EQ(list_checkpoints(dir), (std::vector<fs::path>{checkpoint_path(dir, 6)}));
}

TEST(CheckpointResume, TrainerRotatesAndReloadsTheBestModel) {
  const auto dir = testing::fresh_output_dir("best");
  auto data = testing::make_blobs_dataset(16, 5, 4);
  TrainingArguments args = testing::quiet_args("unused");
  args.output_dir = dir;
  args.per_device_train_batch_size = 4;
  args.max_steps = 6;
  args.eval_strategy = IntervalStrategy::kSteps;
  args.eval_steps = 1;
  args.save_steps = 1;
  args.save_total_limit = 2;
  args.load_best_model_at_end = true;
  args.metric_for_best_model = "score";
  args.greater_is_better = true;
  // Scripted scores: the best is step 3.
  auto calls = std::make_shared<int>(0);
  std::vector<double> scores = {0.1, 0.2, 0.9, 0.3, 0.4, 0.5};
  auto metrics = [=](const EvalPrediction&) {
    return Metrics{{"score", scores.at(static_cast<size_t>((*calls)++))}};
  };
  torch::manual_seed(1);
  auto model = std::make_shared<MLPClassifier>(5, 8, 2);
  Trainer trainer(model, args,
                  {.train_dataset = data, .eval_dataset = data, .compute_metrics = metrics});
  trainer.train();
  EXPECT_EQ(trainer.state().best_model_checkpoint, checkpoint_path(dir, 3).string());
  EXPECT_EQ(trainer.state().best_global_step, 3);
  EXPECT_EQ(list_checkpoints(dir),
            (std::vector<fs::path>{checkpoint_path(dir, 3), checkpoint_path(dir, 6)}));
  auto best = load_safetensors((checkpoint_path(dir, 3) / "model.safetensors").string());
  EXPECT_TRUE(
      model->named_parameters()["classifier.weight"].equal(best.tensors.at("classifier.weight")));
  auto last = load_safetensors((checkpoint_path(dir, 6) / "model.safetensors").string());
  EXPECT_FALSE(
      model->named_parameters()["classifier.weight"].equal(last.tensors.at("classifier.weight")));
}

TEST(CheckpointResume, EarlyStoppingCounterIsRestored) {
  // Patience 3 over scores that never improve after step 1: the uninterrupted run stops at 4.
  // Stopping at 2 (counter 1) and resuming must still stop at 4, not at 5.
  auto go = [](const std::string& dir, std::optional<int64_t> stop,
               std::optional<std::string> resume) {
    auto data = testing::make_blobs_dataset(16, 5, 4);
    TrainingArguments args = testing::quiet_args("unused");
    args.output_dir = dir;
    args.per_device_train_batch_size = 4;
    args.max_steps = 20;
    args.eval_strategy = IntervalStrategy::kSteps;
    args.eval_steps = 1;
    args.save_steps = 1;
    args.metric_for_best_model = "score";
    args.greater_is_better = true;
    args.resume_from_checkpoint = resume;
    auto calls = std::make_shared<int>(resume ? 2 : 0);
    auto metrics = [calls](const EvalPrediction&) {
      return Metrics{{"score", (*calls)++ == 0 ? 1.0 : 0.5}};
    };
    std::vector<std::shared_ptr<TrainerCallback>> cbs{std::make_shared<EarlyStoppingCallback>(3)};
    if (stop) cbs.push_back(std::make_shared<StopAt>(*stop));
    torch::manual_seed(1);
    Trainer trainer(std::make_shared<MLPClassifier>(5, 8, 2), args,
                    {.train_dataset = data,
                     .eval_dataset = data,
                     .compute_metrics = metrics,
                     .callbacks = cbs});
    return trainer.train().global_step;
  };
  EXPECT_EQ(go(testing::fresh_output_dir("es_straight"), std::nullopt, std::nullopt), 4);
  const auto dir = testing::fresh_output_dir("es_resume");
  EXPECT_EQ(go(dir, 2, std::nullopt), 2);
  EXPECT_EQ(go(dir, std::nullopt, "latest"), 4);
}

TEST(CheckpointResume, LatestWithoutAnyCheckpointStartsFromScratch) {
  // The first attempt of a command that always carries `--resume_from_checkpoint latest`
  // (ctrainer-run --max-restarts) has nothing to resume: it trains as if the flag were absent.
  const RunSetup s{.max_steps = 4, .save_steps = 2};
  const auto straight = run(s, testing::fresh_output_dir("latest_ref"), std::nullopt, std::nullopt);
  expect_identical(straight,
                   run(s, testing::fresh_output_dir("latest_fresh"), std::nullopt, "latest"));
}

TEST(CheckpointResume, RefusesWhatCannotResumeExactly) {
  const auto dir = testing::fresh_output_dir("refuse");
  run(RunSetup{.max_steps = 2, .save_steps = 2}, dir, std::nullopt, std::nullopt);
  auto expect_error = [&](TrainingArguments args, const std::string& needle) {
    auto data = testing::make_blobs_dataset(22, 5, 4);
    torch::manual_seed(9);
    Trainer trainer(std::make_shared<MLPClassifier>(5, 16, 2, 0.3, 2), args,
                    {.train_dataset = data});
    try {
      trainer.train();
      FAIL() << "expected an error containing " << needle;
    } catch (const ArgumentError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  auto args = args_for(RunSetup{.max_steps = 4}, dir);
  args.eval_strategy = IntervalStrategy::kNo;
  args.resume_from_checkpoint = "latest";
  args.per_device_train_batch_size = 2;
  expect_error(args, "--per_device_train_batch_size");
  args.per_device_train_batch_size = 4;
  args.gradient_accumulation_steps = 2;
  expect_error(args, "--gradient_accumulation_steps");
  args.gradient_accumulation_steps = 1;
  args.resume_from_checkpoint = (fs::path(dir) / "nope").string();
  expect_error(args, "no such checkpoint folder");
  args.resume_from_checkpoint = "true";  // HF: true insists on a checkpoint
  args.output_dir = testing::fresh_output_dir("refuse_empty");
  expect_error(args, "no complete checkpoint");
  // save_only_model checkpoints hold weights only.
  const auto only = testing::fresh_output_dir("only_model");
  auto a = args_for(RunSetup{.max_steps = 2, .save_steps = 2}, only);
  a.eval_strategy = IntervalStrategy::kNo;
  a.save_only_model = true;
  {
    auto data = testing::make_blobs_dataset(22, 5, 4);
    Trainer t(std::make_shared<MLPClassifier>(5, 16, 2, 0.3, 2), a, {.train_dataset = data});
    t.train();
  }
  EXPECT_FALSE(fs::exists(checkpoint_path(only, 2) / "optimizer.safetensors"));
  a.resume_from_checkpoint = "latest";
  a.max_steps = 4;
  expect_error(a, "save_only_model");
}

// A state file that passes the manifest's check (its size and CRC recorded anew) but holds
// garbage: the error names that file, and so the checkpoint, not the function that parsed it.
TEST(CheckpointResume, AStateFileWithGarbageIsNamedInTheError) {
  const std::vector<std::pair<std::string, nlohmann::json>> cases = {
      {"rng_state.json", {{"format_version", 1}, {"cpu", "not*base64"}}},
      {"loop_state.json", {{"format_version", "one"}}},
      {"scheduler.json", nlohmann::json::array()},
      {"trainer_state.json", {{"global_step", "many"}}},
      {"optimizer.json", {{"format_version", 1}}},
  };
  for (const auto& [name, garbage] : cases) {
    SCOPED_TRACE(name);
    const auto dir = testing::fresh_output_dir("garbage");
    run(RunSetup{.max_steps = 2, .save_steps = 2}, dir, std::nullopt, std::nullopt);
    const fs::path checkpoint = checkpoint_path(dir, 2);
    const fs::path file = checkpoint / name;
    std::ofstream(file, std::ios::trunc) << garbage.dump();
    const fs::path manifest_file = checkpoint / "manifest.json";
    auto manifest = nlohmann::json::parse(std::ifstream(manifest_file));
    manifest["files"][name] = {{"size", fs::file_size(file)}, {"crc32", file_crc32(file)}};
    std::ofstream(manifest_file, std::ios::trunc) << manifest.dump();
    ASSERT_FALSE(verify_checkpoint(checkpoint).has_value()) << *verify_checkpoint(checkpoint);

    auto args = args_for(RunSetup{.max_steps = 4}, dir);
    args.eval_strategy = IntervalStrategy::kNo;
    args.resume_from_checkpoint = checkpoint.string();
    auto data = testing::make_blobs_dataset(22, 5, 4);
    Trainer trainer(std::make_shared<MLPClassifier>(5, 16, 2, 0.3, 2), args,
                    {.train_dataset = data});
    try {
      trainer.train();
      ADD_FAILURE() << "resumed from a checkpoint whose " << name << " holds garbage";
    } catch (const ArgumentError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(checkpoint.string()), std::string::npos) << what;
      EXPECT_NE(what.find(name), std::string::npos) << what;
      EXPECT_EQ(what.find("_from_json"), std::string::npos) << what;
    } catch (const std::exception& e) {
      ADD_FAILURE() << "not an ArgumentError: " << e.what();
    }
  }
}

}  // namespace checkpoint_resume_test
}  // namespace ctrainer

namespace ctrainer {
namespace checkpoint_resume_test {

TEST(CheckpointDir, ParallelCrc32EqualsZlibOverTheWholeFile) {
  // Sizes around the split threshold (32 MiB per part) and odd lengths.
  for (uint64_t size : {0ull, 1ull, 1000ull, (64ull << 20) + 7, (96ull << 20) + 3}) {
    const auto path = fs::path(testing::fresh_output_dir("crc")) += ".bin";
    std::vector<unsigned char> bytes(size);
    for (uint64_t i = 0; i < size; ++i)
      bytes[i] = static_cast<unsigned char>((i * 2654435761u) >> 13);
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(size));
    const uLong expected = crc32(crc32(0L, Z_NULL, 0), bytes.data(), static_cast<uInt>(size));
    EXPECT_EQ(file_crc32(path), static_cast<uint32_t>(expected)) << size;
    fs::remove(path);
  }
}

}  // namespace checkpoint_resume_test
}  // namespace ctrainer
