// Console output: the progress bar in a terminal, periodic plain lines otherwise, log dicts.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include <ctrainer/trainer/callbacks/progress_callback.h>

namespace ctrainer {
namespace progress_test {

std::string read_all(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string out;
  char buf[4096];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) out.append(buf, n);
  return out;
}

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t pos = s.find(what); pos != std::string::npos; pos = s.find(what, pos + 1)) ++n;
  return n;
}

void drive(ProgressCallback& cb, int64_t steps, bool world_zero = true) {
  TrainingArguments args;
  TrainerState state;
  TrainerControl control;
  state.max_steps = steps;
  state.is_world_process_zero = world_zero;
  CallbackContext ctx;
  cb.on_train_begin(args, state, control, ctx);
  for (int64_t s = 1; s <= steps; ++s) {
    state.global_step = s;
    cb.on_step_end(args, state, control, ctx);
    if (s == steps / 2) {
      nlohmann::json logs = {{"loss", 0.5}, {"learning_rate", 1e-4}, {"total_flos", 3.0}};
      ctx.logs = &logs;
      cb.on_log(args, state, control, ctx);
      ctx.logs = nullptr;
    }
  }
  cb.on_train_end(args, state, control, ctx);
}

TEST(Progress, PlainLinesEveryTenPercentWhenNotATerminal) {
  std::FILE* progress = std::tmpfile();
  std::FILE* logs = std::tmpfile();
  ProgressCallback cb(progress, logs, /*interactive=*/false);
  drive(cb, 100);
  const std::string out = read_all(progress);
  EXPECT_EQ(count(out, "progress: step"), 11u);  // steps 1, 11, ..., 91 and the final line
  EXPECT_NE(out.find("step 100/100 (100%)"), std::string::npos);
  EXPECT_NE(out.find("it/s"), std::string::npos);
  EXPECT_NE(out.find("ETA"), std::string::npos);
  EXPECT_EQ(out.find('\r'), std::string::npos);
  const std::string log_lines = read_all(logs);
  EXPECT_EQ(log_lines, "[rank 0] {'learning_rate': 0.0001, 'loss': 0.5}\n");  // no total_flos
}

TEST(Progress, BarIsRedrawnInPlaceInATerminal) {
  std::FILE* progress = std::tmpfile();
  std::FILE* logs = std::tmpfile();
  ProgressCallback cb(progress, logs, /*interactive=*/true);
  drive(cb, 20);
  const std::string out = read_all(progress);
  EXPECT_NE(out.find("\r100%|##############################| 20/20"), std::string::npos) << out;
  EXPECT_EQ(count(out, "\n"), 1u);  // one final newline, everything else redrawn with \r
}

TEST(Progress, OnlyTheWorldMainProcessPrints) {
  std::FILE* progress = std::tmpfile();
  std::FILE* logs = std::tmpfile();
  ProgressCallback cb(progress, logs, false);
  drive(cb, 10, /*world_zero=*/false);
  EXPECT_TRUE(read_all(progress).empty());
  EXPECT_TRUE(read_all(logs).empty());
}

}  // namespace progress_test
}  // namespace ctrainer
