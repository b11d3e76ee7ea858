// A disk that fails while a checkpoint is written (issue 19, item 3): for every file of a
// checkpoint, a write that fails with ENOSPC or EIO ends training with an error naming the file,
// leaves no half-written checkpoint and no temporary folder, keeps the previous checkpoint
// complete, and a resume from it ends exactly where the uninterrupted run ends. Also what a save
// killed midway leaves behind (temporary folders, a checkpoint moved aside) is put right by the
// next save. (A real SIGKILL during a save, through a program: tests/e2e/save_faults_test.cpp.)
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <ctrainer/core/json_file.h>
#include <ctrainer/core/write_faults.h>
#include <ctrainer/models/simple/mlp_classifier.h>
#include <ctrainer/trainer/checkpoint/checkpoint_dir.h>
#include <ctrainer/trainer/trainer.h>

#include "support/test_data.h"

namespace ctrainer {
namespace write_faults_test {
namespace fs = std::filesystem;

/// Removes the hook when a test ends, passed or not.
struct ScopedHook {
  explicit ScopedHook(WriteFaultHook hook) { set_write_fault_hook(std::move(hook)); }
  ~ScopedHook() { set_write_fault_hook({}); }
};

TrainingArguments fault_args(const fs::path& dir) {
  TrainingArguments args = testing::quiet_args("unused");
  args.output_dir = dir.string();
  args.per_device_train_batch_size = 4;
  args.max_steps = 4;
  args.learning_rate = 1e-2;
  args.logging_steps = 1;
  args.save_strategy = SaveStrategy::kSteps;
  args.save_steps = 2;
  return args;
}

/// Trains the MLP of the resume tests for 4 steps (checkpoints at 2 and 4); the final weights.
std::vector<at::Tensor> train(const fs::path& dir, std::optional<std::string> resume = {}) {
  auto data = testing::make_blobs_dataset(22, 5, 4);
  TrainingArguments args = fault_args(dir);
  args.resume_from_checkpoint = resume;
  torch::manual_seed(resume ? 77 : 9);  // a resumed run's initial weights must not matter
  auto model = std::make_shared<MLPClassifier>(5, 16, 2, /*dropout=*/0.3, /*layers=*/2);
  Trainer trainer(model, args, {.train_dataset = data});
  trainer.train();
  std::vector<at::Tensor> out;
  for (const auto& p : model->parameters()) out.push_back(p.detach().clone());
  return out;
}

/// Whether `path` lies in the temporary folder of checkpoint `step`.
bool in_save_of(const fs::path& path, int64_t step) {
  return path.parent_path().filename().string().rfind(
             ".tmp-checkpoint-" + std::to_string(step) + "-", 0) == 0;
}

std::set<std::string> hidden_entries(const fs::path& dir) {
  std::set<std::string> out;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.path().filename().string()[0] == '.') out.insert(entry.path().filename());
  return out;
}

TEST(WriteFaults, EveryCheckpointFileFailingKeepsThePreviousCheckpoint) {
  // The files of the step-4 save, as the uninterrupted run writes them.
  std::vector<std::string> files;
  std::vector<at::Tensor> straight;
  {
    ScopedHook record([&](const fs::path& path) {
      if (in_save_of(path, 4)) files.push_back(path.filename());
      return 0;
    });
    straight = train(testing::fresh_output_dir("faults_straight"));
  }
  // Every file of a checkpoint, the manifest last (it marks the folder complete).
  for (const char* expected : {"model.safetensors", "optimizer.safetensors", "optimizer.json",
                               "scheduler.json", "rng_state.json", "loop_state.json",
                               "trainer_state.json", "training_args.json", "manifest.json"})
    EXPECT_NE(std::find(files.begin(), files.end(), expected), files.end()) << expected;
  ASSERT_EQ(files.back(), "manifest.json");

  int round = 0;
  for (const std::string& file : files) {
    const int error = (round++ % 2 == 0) ? ENOSPC : EIO;
    SCOPED_TRACE(file + " fails with " + std::strerror(error));
    const fs::path dir = testing::fresh_output_dir("faults");
    {
      ScopedHook fail([&](const fs::path& path) {
        return in_save_of(path, 4) && path.filename() == file ? error : 0;
      });
      try {
        train(dir);
        ADD_FAILURE() << "training went on past a failed save";
      } catch (const std::exception& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find(file), std::string::npos) << what;
        EXPECT_NE(what.find(std::strerror(error)), std::string::npos) << what;
      }
    }
    EXPECT_FALSE(verify_checkpoint(checkpoint_path(dir, 2))) << "the previous checkpoint";
    EXPECT_FALSE(fs::exists(checkpoint_path(dir, 4)));
    EXPECT_EQ(hidden_entries(dir), std::set<std::string>{}) << "temporary folders left";
    const auto resumed = train(dir, "latest");
    ASSERT_EQ(resumed.size(), straight.size());
    for (size_t i = 0; i < straight.size(); ++i) EXPECT_TRUE(resumed[i].equal(straight[i]));
  }
}

TEST(WriteFaults, ASaveKilledMidwayIsPutRightByTheNextSave) {
  const fs::path dir = testing::fresh_output_dir("faults_stale");
  const auto straight = train(testing::fresh_output_dir("faults_stale_straight"));
  train(dir);  // checkpoints 2 and 4
  // What a process killed while saving leaves (pid 999999 is above Linux's pid_max default
  // of 2^22 only in name; it is checked to be dead): its temporary folder for step 4, a
  // checkpoint-2 it had moved aside to replace, and other ranks' staged files of step 4.
  ASSERT_NE(::kill(999999, 0), 0);
  fs::create_directories(dir / ".tmp-checkpoint-4-999999");
  std::ofstream(dir / ".tmp-checkpoint-4-999999" / "model.safetensors") << "half";
  fs::rename(checkpoint_path(dir, 2), dir / ".old-checkpoint-2-999999");
  fs::create_directories(dir / ".rank-files-checkpoint-4");
  // A live process's folder (this test's parent) is somebody's save in progress: kept.
  fs::create_directories(dir / (".tmp-checkpoint-9-" + std::to_string(::getppid())));

  const auto done = clean_stale_checkpoint_temporaries(dir, 6);
  EXPECT_EQ(done.size(), 3u);
  EXPECT_FALSE(verify_checkpoint(checkpoint_path(dir, 2))) << "restored complete";
  EXPECT_EQ(hidden_entries(dir),
            std::set<std::string>{".tmp-checkpoint-9-" + std::to_string(::getppid())});
  // The Trainer does it before each save: a resumed run leaves nothing stale behind.
  fs::remove_all(dir / (".tmp-checkpoint-9-" + std::to_string(::getppid())));
  fs::create_directories(dir / ".tmp-checkpoint-4-999999");
  fs::remove_all(checkpoint_path(dir, 4));
  const auto resumed = train(dir, "latest");
  EXPECT_EQ(hidden_entries(dir), std::set<std::string>{});
  for (size_t i = 0; i < straight.size(); ++i) EXPECT_TRUE(resumed[i].equal(straight[i]));
}

}  // namespace write_faults_test
}  // namespace ctrainer
