// The checkpoint room on its own: atomic JSON state files, loop_state.json, strict weight loading,
// TrainerState::continue_from, and CheckpointManager saving every part of a run and loading it
// back bitwise (the Trainer-level resume tests are in checkpoint_resume_test.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include <torch/optim/adamw.h>

#include <ctrainer/core/errors.h>
#include <ctrainer/core/json_file.h>
#include <ctrainer/distributed/strategy.h>
#include <ctrainer/models/pretrained_weights.h>
#include <ctrainer/models/simple/mlp_classifier.h>
#include <ctrainer/trainer/args/training_args.h>
#include <ctrainer/trainer/checkpoint/checkpoint_dir.h>
#include <ctrainer/trainer/checkpoint/checkpoint_manager.h>
#include <ctrainer/trainer/checkpoint/optimizer_state.h>
#include <ctrainer/trainer/data/sampler.h>
#include <ctrainer/trainer/optim/lr_scheduler.h>
#include <ctrainer/trainer/precision/grad_scaler.h>
#include <ctrainer/trainer/trainer_state.h>

#include "support/expect_error.h"
#include "support/test_data.h"

namespace ctrainer {
namespace checkpoint_manager_test {
namespace fs = std::filesystem;

std::string file_text(const fs::path& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::vector<std::string> names_in(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& entry : fs::directory_iterator(dir)) out.push_back(entry.path().filename());
  std::sort(out.begin(), out.end());
  return out;
}

/// The error message of `fn`, which must throw a std::exception.
std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    return e.what();
  }
  ADD_FAILURE() << "no exception";
  return "";
}

// ---- json_file ---------------------------------------------------------------------------------

TEST(JsonFile, WritesPrettyJsonReadsItBackAndLeavesNoTemporary) {
  const fs::path dir = testing::fresh_output_dir("json");
  fs::create_directories(dir);
  const nlohmann::json value = {{"b", 1.5}, {"a", {1, 2, 3}}, {"s", "text"}};
  write_json_file(dir / "state.json", value);
  EXPECT_EQ(file_text(dir / "state.json"), value.dump(2) + "\n");
  EXPECT_EQ(read_json_file(dir / "state.json"), value);
  write_json_file(dir / "compact.json", value, /*indent=*/-1);
  EXPECT_EQ(file_text(dir / "compact.json"), value.dump() + "\n");
  EXPECT_EQ(names_in(dir), (std::vector<std::string>{"compact.json", "state.json"}));
}

TEST(JsonFile, AFailedWriteKeepsTheOldFileAndRemovesItsTemporary) {
  const fs::path dir = testing::fresh_output_dir("json");
  fs::create_directories(dir);
  write_json_file(dir / "state.json", {{"step", 3}});
  // nlohmann refuses to serialise invalid UTF-8: the write fails after the temporary exists.
  EXPECT_ANY_THROW(write_json_file(dir / "state.json", {{"step", std::string("\xff\xfe")}}));
  EXPECT_EQ(read_json_file(dir / "state.json"), nlohmann::json({{"step", 3}}));
  EXPECT_EQ(names_in(dir), (std::vector<std::string>{"state.json"}));
  // A folder that is not there: the error names the file.
  const std::string missing_dir = error_of([&] { write_json_file(dir / "no" / "x.json", {}); });
  EXPECT_NE(missing_dir.find((dir / "no" / "x.json").string()), std::string::npos) << missing_dir;
}

TEST(JsonFile, ReadErrorsNameTheFileAndItsRole) {
  const fs::path dir = testing::fresh_output_dir("json");
  fs::create_directories(dir);
  const std::string missing =
      error_of([&] { read_json_file(dir / "trainer_state.json", "trainer state"); });
  EXPECT_EQ(missing,
            "trainer state " + (dir / "trainer_state.json").string() + " is missing or unreadable");
  std::ofstream(dir / "bad.json") << "{\"step\": ";
  const std::string invalid =
      error_of([&] { read_json_file(dir / "bad.json", "checkpoint file"); });
  EXPECT_EQ(
      invalid.rfind("checkpoint file " + (dir / "bad.json").string() + " is not valid JSON: ", 0),
      0u)
      << invalid;
}

// ---- loop_state.json ---------------------------------------------------------------------------

LoopState sample_loop_state() {
  LoopState loop;
  loop.tr_loss = 1.25;
  loop.tr_loss_by_rank = {1.0, 1.5};
  loop.total_loss_scalar = 7.5;
  loop.globalstep_last_logged = 8;
  loop.position = {1, 4};
  loop.shape = {2, 16, 2, 100};
  return loop;
}

TEST(LoopState, RoundTripsThroughItsJsonFile) {
  const LoopState loop = sample_loop_state();
  const nlohmann::json json = loop.to_json();
  EXPECT_EQ(json.at("format_version"), 1);
  EXPECT_EQ(json.at("batches_consumed_in_epoch"), 4);
  const LoopState back = LoopState::from_json(json, "ckpt");
  EXPECT_EQ(back.tr_loss, 1.25);
  EXPECT_EQ(back.tr_loss_by_rank, (std::vector<double>{1.0, 1.5}));
  EXPECT_EQ(back.total_loss_scalar, 7.5);
  EXPECT_EQ(back.globalstep_last_logged, 8);
  EXPECT_EQ(back.position.epoch, 1);
  EXPECT_EQ(back.position.batches_consumed, 4);
  EXPECT_EQ(back.shape.world_size, 2);
  EXPECT_EQ(back.shape.per_device_train_batch_size, 16);
  EXPECT_EQ(back.shape.gradient_accumulation_steps, 2);
  EXPECT_EQ(back.shape.train_dataset_size, 100);

  nlohmann::json newer = json;
  newer["format_version"] = 2;
  EXPECT_NE(error_of([&] { LoopState::from_json(newer, "ckpt"); }).find("format_version 2"),
            std::string::npos);
}

TEST(LoopState, MalformedFilesAreErrorsNamingTheKey) {
  // Found by fuzz/loop_state_fuzzer.cpp (fuzz/corpus/loop_state/): JSON library errors without
  // the file's name, a cast of 1e300 to an integer, counters that overflow on use.
  const nlohmann::json good = sample_loop_state().to_json();
  const auto refused = [](const nlohmann::json& json, const std::string& part) {
    try {
      LoopState::from_json(json, "ckpt");
      ADD_FAILURE() << "accepted " << json.dump();
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
  };
  refused(nlohmann::json::array(), "ckpt/loop_state.json is not a JSON object");
  nlohmann::json bad = good;
  bad.erase("tr_loss");
  refused(bad, "ckpt/loop_state.json lacks \"tr_loss\"");
  bad = good;
  bad["tr_loss"] = "x";
  refused(bad, "\"tr_loss\" must be a number");
  bad = good;
  bad["batches_consumed_in_epoch"] = 1e300;
  refused(bad, "\"batches_consumed_in_epoch\" must be an integer in [0, 2^53]");
  bad = good;
  bad["world_size"] = int64_t{1} << 62;
  refused(bad, "\"world_size\" must be an integer in [1, 2^53]");
  bad = good;
  bad["gradient_accumulation_steps"] = 0;
  refused(bad, "\"gradient_accumulation_steps\"");
  bad = good;
  bad["tr_loss_by_rank"] = {1.0, 2.0, 3.0};  // world_size 2
  refused(bad, "\"tr_loss_by_rank\" must be a list of world_size (2) numbers");
  bad["tr_loss_by_rank"] = {1.0, "x"};
  refused(bad, "\"tr_loss_by_rank[1]\" must be a number");
  // Checkpoints written before tr_loss_by_rank: every rank restores tr_loss.
  bad = good;
  bad.erase("tr_loss_by_rank");
  EXPECT_TRUE(LoopState::from_json(bad, "ckpt").tr_loss_by_rank.empty());
  // What to_json() writes for a NaN loss (null) reads back.
  bad = good;
  bad["tr_loss"] = nullptr;
  EXPECT_TRUE(std::isnan(LoopState::from_json(bad, "ckpt").tr_loss));
}

TEST(TrainerStateFile, CountersMustBeIntegers) {
  // fuzz/corpus/trainer_state/bad_global_step_1e_300.json: a cast of 1e300 to int64 before.
  nlohmann::json state = TrainerState().to_json();
  state["global_step"] = 1e300;
  const std::string error = error_of([&] { TrainerState::from_json(state); });
  EXPECT_NE(error.find("\"global_step\": must be an integer, got 1e+300"), std::string::npos)
      << error;
  state["global_step"] = 2.5;
  EXPECT_THROW(TrainerState::from_json(state), std::runtime_error);
  state["global_step"] = 7;
  EXPECT_EQ(TrainerState::from_json(state).global_step, 7);
}

TEST(LoopState, RefusesARunOfAnotherShapeNamingTheFlag) {
  const LoopState loop = sample_loop_state();  // 2 processes x 16 examples x 2 accumulation
  EXPECT_NO_THROW(loop.require_resumable_by({2, 16, 2, 100}, "ckpt"));
  testing::expect_error(
      [&] {
        loop.require_resumable_by({2, 8, 2, 100}, "ckpt");
      },
      {"--resume_from_checkpoint ckpt", "--per_device_train_batch_size 16", "this run uses 8",
       "resume with the same value"});
  // Another world size with another per-device batch that does not keep the global batch.
  testing::expect_error(
      [&] {
        loop.require_resumable_by({3, 8, 2, 100}, "ckpt");
      },
      {"--per_device_train_batch_size 16", "keeps the global batch of 2 x 16 examples"});
  testing::expect_error(
      [&] {
        loop.require_resumable_by({2, 16, 4, 100}, "ckpt");
      },
      {"--gradient_accumulation_steps 2"});
  testing::expect_error(
      [&] {
        loop.require_resumable_by({2, 16, 2, 99}, "ckpt");
      },
      {"a train dataset of size 100"});
}

TEST(LoopState, AnotherWorldSizeResumes) {
  // torchrun's elastic restarts run the same command on another number of processes.
  const LoopState loop = sample_loop_state();
  EXPECT_NO_THROW(loop.require_resumable_by({1, 16, 2, 100}, "ckpt"));
  EXPECT_NO_THROW(loop.require_resumable_by({4, 16, 2, 100}, "ckpt"));
  EXPECT_NO_THROW(loop.require_resumable_by({1, 32, 2, 100}, "ckpt"));  // the same global batch
  EXPECT_TRUE(loop.same_global_batch({1, 32, 2, 100}));
  EXPECT_TRUE(loop.same_global_batch({4, 8, 2, 100}));
  EXPECT_FALSE(loop.same_global_batch({1, 16, 2, 100}));
}

TEST(LoopState, ResumePositionFollowsTheEpochAndTheWindow) {
  LoopState loop = sample_loop_state();  // epoch 1, 4 batches consumed, accumulation 2
  const LoopShape same = loop.shape;
  // (global_step plays no part with the saved global batch.)
  DataPosition next = loop.resume_position(same, /*batches_per_epoch=*/10, 7, false, "ckpt");
  EXPECT_EQ(next.epoch, 1);
  EXPECT_EQ(next.batches_consumed, 4);
  next = loop.resume_position(same, 10, 7, /*ignore_data_skip=*/true, "ckpt");
  EXPECT_EQ(next.epoch, 1);
  EXPECT_EQ(next.batches_consumed, 0);
  // Another world size with the same global batch: the same position, in the same batches.
  next = loop.resume_position({4, 8, 2, 100}, 10, 7, false, "ckpt");
  EXPECT_EQ(next.epoch, 1);
  EXPECT_EQ(next.batches_consumed, 4);
  loop.position = {1, 10};  // saved at the end of epoch 1
  next = loop.resume_position(same, 10, 10, false, "ckpt");
  EXPECT_EQ(next.epoch, 2);
  EXPECT_EQ(next.batches_consumed, 0);
  loop.position = {1, 5};
  EXPECT_NE(error_of([&] {
              loop.resume_position(same, 10, 7, false, "ckpt");
            }).find("saved inside an accumulation window (batch 5)"),
            std::string::npos);
}

TEST(LoopState, AnotherGlobalBatchResumesByTransformersRule) {
  // transformers' _init_training_state: epochs_trained = global_step // updates per epoch,
  // steps_trained_in_current_epoch = global_step % updates per epoch * accumulation, in the
  // resumed run's own batches. Saved: 2 processes x 16 x 2 (64 examples a step), 100 examples.
  LoopState loop = sample_loop_state();
  loop.position = {1, 2};  // 2 steps a epoch at 2 processes: global step 3
  // 1 process: 7 batches of 16 a epoch, 4 updates (the last one of a single batch).
  const LoopShape one = {1, 16, 2, 100};
  DataPosition next = loop.resume_position(one, 7, /*global_step=*/3, false, "ckpt");
  EXPECT_EQ(next.epoch, 0);
  EXPECT_EQ(next.batches_consumed, 6);
  next = loop.resume_position(one, 7, 5, false, "ckpt");
  EXPECT_EQ(next.epoch, 1);
  EXPECT_EQ(next.batches_consumed, 2);
  next = loop.resume_position(one, 7, 8, false, "ckpt");  // 8 = 2 epochs of 4 updates
  EXPECT_EQ(next.epoch, 2);
  EXPECT_EQ(next.batches_consumed, 0);
  next = loop.resume_position(one, 7, 5, /*ignore_data_skip=*/true, "ckpt");
  EXPECT_EQ(next.epoch, 1);
  EXPECT_EQ(next.batches_consumed, 0);
  // 4 processes: 2 batches of 16 a epoch, 1 update; the position does not depend on the saved
  // one.
  loop.position = {0, 7};  // (inside a window of the saved run: irrelevant here)
  next = loop.resume_position({4, 16, 2, 100}, 2, 3, false, "ckpt");
  EXPECT_EQ(next.epoch, 3);
  EXPECT_EQ(next.batches_consumed, 0);
}

// ---- trainer state -----------------------------------------------------------------------------

TEST(TrainerStateResume, ContinueFromTakesProgressAndKeepsThisRunsSchedule) {
  TrainerState now;
  now.max_steps = 100;
  now.num_train_epochs = 5;
  now.logging_steps = 10;
  now.eval_steps = 20;
  now.save_steps = 30;
  now.train_batch_size = 8;
  now.is_world_process_zero = false;
  TrainerState saved;
  saved.global_step = 42;
  saved.epoch = 2.1;
  saved.max_steps = 60;
  saved.logging_steps = 1;
  saved.best_metric = 0.5;
  saved.log_history = {{{"loss", 1.0}, {"step", 40}}};
  now.continue_from(saved);
  EXPECT_EQ(now.global_step, 42);
  EXPECT_EQ(now.epoch, 2.1);
  EXPECT_EQ(now.best_metric, 0.5);
  EXPECT_EQ(now.log_history.size(), 1u);
  EXPECT_EQ(now.max_steps, 100);
  EXPECT_EQ(now.num_train_epochs, 5);
  EXPECT_EQ(now.logging_steps, 10);
  EXPECT_EQ(now.eval_steps, 20);
  EXPECT_EQ(now.save_steps, 30);
  EXPECT_EQ(now.train_batch_size, 8);
  EXPECT_FALSE(now.is_world_process_zero);
}

// ---- strict weights ----------------------------------------------------------------------------

TEST(PretrainedWeights, StrictLoadRefusesMissingOrUnexpectedKeysAndCopiesNothing) {
  torch::manual_seed(1);
  MLPClassifier source(4, 8, 3);
  torch::manual_seed(2);
  MLPClassifier target(4, 8, 3);
  const auto before = module_state_dict(target);
  WeightLoadOptions strict;
  strict.strict = true;

  auto checkpoint = module_state_dict(source);
  const std::string dropped = checkpoint.begin()->first;
  checkpoint.erase(checkpoint.begin());
  testing::expect_error([&] { load_state_dict(target, checkpoint, strict, "ckpt"); },
                        {"ckpt does not match the model", "missing ['" + dropped + "']"});
  checkpoint = module_state_dict(source);
  checkpoint["extra.weight"] = at::zeros({2});
  testing::expect_error([&] { load_state_dict(target, checkpoint, strict, "ckpt"); },
                        {"missing []", "unexpected ['extra.weight']"});
  for (const auto& [name, tensor] : module_state_dict(target))
    EXPECT_TRUE(tensor.equal(before.at(name))) << name << " was copied";

  // The same keys load (and non-strict loading keeps its lenient rules).
  EXPECT_NO_THROW(load_state_dict(target, module_state_dict(source), strict, "ckpt"));
  for (const auto& [name, tensor] : module_state_dict(target))
    EXPECT_TRUE(tensor.equal(module_state_dict(source).at(name))) << name;
  EXPECT_NO_THROW(load_state_dict(target, checkpoint, WeightLoadOptions{}, "ckpt"));
}

// ---- CheckpointManager -------------------------------------------------------------------------

/// A model, AdamW, a scheduler and a loss scaler after `steps` optimizer steps from `seed`.
struct RunObjects {
  std::shared_ptr<MLPClassifier> model;
  std::shared_ptr<torch::optim::AdamW> optimizer;
  std::shared_ptr<LRScheduler> scheduler;
  std::unique_ptr<GradScaler> scaler;

  RunObjects(int64_t seed, int steps) {
    torch::manual_seed(seed);
    model = std::make_shared<MLPClassifier>(4, 8, 3);
    optimizer = std::make_shared<torch::optim::AdamW>(model->parameters(),
                                                      torch::optim::AdamWOptions(0.01));
    scheduler = std::make_shared<LRScheduler>(
        optimizer, [](int64_t step) { return 1.0 / static_cast<double>(step + 1); });
    scaler = std::make_unique<GradScaler>();
    for (int i = 0; i < steps; ++i) {
      Batch batch;
      batch["x"] = torch::randn({5, 4});
      batch["labels"] = torch::randint(0, 3, {5});
      optimizer->zero_grad();
      model->forward(batch).loss.backward();
      optimizer->step();
      scheduler->step();
      scaler->update(at::full({1}, 1.0f));  // an overflow: the scale halves each step
    }
  }
  CheckpointParts parts() { return {model.get(), optimizer.get(), scheduler.get(), scaler.get()}; }
};

TEST(CheckpointManager, SavesEveryPartAndLoadsItBackBitwise) {
  TrainingArguments args = testing::quiet_args("manager");
  args.save_total_limit = 1;
  ProcessInfo process;
  SingleDeviceStrategy strategy;
  CheckpointManager manager(args, process, strategy);

  RunObjects trained(1, 3);
  TrainerState state;
  state.global_step = 3;
  state.log_history = {{{"loss", 0.7}, {"step", 3}}};
  LoopState loop = sample_loop_state();
  loop.shape = {1, 5, 1, 20};
  loop.tr_loss_by_rank = {loop.tr_loss};  // one entry per rank of the saved world
  loop.position = {0, 3};
  SamplerState sampler;
  sampler.sampler = "RandomSampler";
  sampler.seed = 42;
  sampler.position = 3;
  const fs::path folder = manager.save(trained.parts(), state, loop, sampler);
  EXPECT_EQ(folder, checkpoint_path(args.output_dir, 3));
  EXPECT_TRUE(manager.has_complete(3));
  EXPECT_FALSE(manager.has_complete(4));
  for (const char* file : {"model.safetensors", "optimizer.safetensors", "optimizer.json",
                           "scheduler.json", "scaler.json", "rng_state.json", "loop_state.json",
                           "trainer_state.json", "training_args.json"})
    EXPECT_TRUE(fs::exists(folder / file)) << file;

  RunObjects fresh(2, 0);
  const LoadedCheckpoint loaded = manager.load(folder, fresh.parts(), loop.shape, 6);
  for (const auto& [name, tensor] : module_state_dict(*fresh.model))
    EXPECT_TRUE(tensor.equal(module_state_dict(*trained.model).at(name))) << name;
  const OptimizerStateDict want = optimizer_state_dict(*trained.optimizer);
  const OptimizerStateDict got = optimizer_state_dict(*fresh.optimizer);
  EXPECT_EQ(got.meta, want.meta);
  ASSERT_EQ(got.tensors.size(), want.tensors.size());
  for (const auto& [name, tensor] : want.tensors) EXPECT_TRUE(got.tensors.at(name).equal(tensor));
  EXPECT_EQ(fresh.scheduler->last_epoch(), 3);
  EXPECT_EQ(fresh.scheduler->get_last_lr(), trained.scheduler->get_last_lr());
  EXPECT_EQ(fresh.scaler->get_scale(), trained.scaler->get_scale());
  EXPECT_EQ(fresh.scaler->get_scale(), 65536.0 / 8);
  EXPECT_EQ(loaded.state.global_step, 3);
  EXPECT_EQ(loaded.state.log_history, state.log_history);
  EXPECT_EQ(loaded.loop.tr_loss, loop.tr_loss);
  EXPECT_EQ(loaded.loop.tr_loss_by_rank, loop.tr_loss_by_rank);
  EXPECT_EQ(loaded.position.epoch, 0);
  EXPECT_EQ(loaded.position.batches_consumed, 3);

  // Another shape is refused before anything is restored.
  RunObjects other(3, 0);
  const auto untouched = module_state_dict(*other.model);
  testing::expect_error(
      [&] {
        manager.load(folder, other.parts(), {1, 4, 1, 20}, 6);
      },
      {"--per_device_train_batch_size 5"});
  for (const auto& [name, tensor] : module_state_dict(*other.model))
    EXPECT_TRUE(tensor.equal(untouched.at(name))) << name;

  // The next save rotates the old checkpoint away (save_total_limit 1).
  state.global_step = 4;
  manager.save(trained.parts(), state, loop, sampler);
  EXPECT_EQ(list_checkpoints(args.output_dir),
            (std::vector<fs::path>{checkpoint_path(args.output_dir, 4)}));
}

TEST(CheckpointManager, ResumeCheckpointFollowsHfsFlag) {
  TrainingArguments args = testing::quiet_args("resume");
  ProcessInfo process;
  SingleDeviceStrategy strategy;
  RunObjects run(1, 1);
  TrainerState state;
  LoopState loop;
  loop.shape = {1, 5, 1, 20};

  CheckpointManager unset(args, process, strategy);
  EXPECT_FALSE(unset.resume_checkpoint());
  args.resume_from_checkpoint = "latest";
  EXPECT_FALSE(CheckpointManager(args, process, strategy).resume_checkpoint());  // from scratch
  args.resume_from_checkpoint = "true";
  testing::expect_error([&] { CheckpointManager(args, process, strategy).resume_checkpoint(); },
                        {"--resume_from_checkpoint true", "no complete checkpoint"});

  CheckpointManager manager(args, process, strategy);
  for (int64_t step : {2, 5}) {
    state.global_step = step;
    manager.save(run.parts(), state, loop, SamplerState{});
  }
  // The newest is corrupted: `true` falls back to the newest complete one.
  std::ofstream(checkpoint_path(args.output_dir, 5) / "scheduler.json") << "{}";
  EXPECT_EQ(manager.resume_checkpoint(), checkpoint_path(args.output_dir, 2));
  args.resume_from_checkpoint = checkpoint_path(args.output_dir, 5).string();
  testing::expect_error(
      [&] { CheckpointManager(args, process, strategy).resume_checkpoint(); },
      {"--resume_from_checkpoint " + *args.resume_from_checkpoint, "scheduler.json"});
  args.resume_from_checkpoint = (fs::path(args.output_dir) / "checkpoint-9").string();
  testing::expect_error([&] { CheckpointManager(args, process, strategy).resume_checkpoint(); },
                        {"no such checkpoint folder"});
}

}  // namespace checkpoint_manager_test
}  // namespace ctrainer
