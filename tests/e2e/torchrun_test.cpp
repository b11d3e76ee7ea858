// Our binaries under the torch wheel's own torchrun (torch.distributed.run, --no-python), on
// loopback with CPU/Gloo. torchrun differs from ctrainer-run in one way that matters: its elastic
// agent serves the rendezvous store (TORCHELASTIC_USE_AGENT_STORE=True) and keeps it across
// restarts of the workers. Checked here: every rank joins the agent's store as a client; run_glue
// trains bitwise the model ctrainer-run trains; and a worker killed after a checkpoint is
// restarted by torchrun (--max-restarts 1) and the job ends as an uninterrupted one.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/parameter_text.h"
#include "support/process.h"
#include "support/tiny_mrpc.h"

namespace {
namespace fs = std::filesystem;
using ctrainer::testing::JobResult;
using ctrainer::testing::logged_losses;
using ctrainer::testing::read_binary_file;
using ctrainer::testing::read_json_if_exists;
using ctrainer::testing::read_text_file;
using ctrainer::testing::run_job;
using Args = std::vector<std::string>;

/// A fresh scratch folder for one test.
fs::path scratch(const std::string& name) {
  const fs::path dir =
      fs::temp_directory_path() / ("ctrainer_torchrun_" + std::to_string(::getpid()) + "_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

/// `torchrun --standalone --nproc_per_node N [flags] --no-python program [program flags]`. The
/// console script runs through the environment's interpreter, so its shebang (which names the
/// folder the environment was created in) does not matter.
JobResult torchrun(const fs::path& dir, const std::string& log, int nproc, const Args& flags,
                   const std::string& program, const Args& program_flags) {
  Args argv = {CTRAINER_PYTHON, CTRAINER_TORCHRUN, "--standalone", "--nproc_per_node",
               std::to_string(nproc)};
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.insert(argv.end(), {"--no-python", program});
  argv.insert(argv.end(), program_flags.begin(), program_flags.end());
  return run_job(argv, dir / log);
}

/// The same job under `ctrainer-run --standalone --nproc-per-node N`.
JobResult ctrainer_run(const fs::path& dir, const std::string& log, int nproc,
                       const std::string& program, const Args& program_flags) {
  Args argv = {CTRAINER_RUN_BINARY, "--standalone", "--nproc-per-node", std::to_string(nproc),
               program};
  argv.insert(argv.end(), program_flags.begin(), program_flags.end());
  return run_job(argv, dir / log);
}

class Torchrun : public ::testing::Test {
 protected:
  void SetUp() override {
    // Fail, never skip, when the wheel's torchrun is missing: these tests are the only check
    // that our programs run under it.
    ASSERT_TRUE(fs::exists(CTRAINER_TORCHRUN))
        << CTRAINER_TORCHRUN << " does not exist: the torch wheel's environment "
        << "(scripts/install-deps.sh --print-venv) must hold torchrun next to its python";
  }
};

// ---- the store protocol ----------------------------------------------------------------------

TEST_F(Torchrun, EveryRankJoinsTheAgentsStoreAndTheCollectivesWork) {
  const fs::path dir = scratch("gloo");
  const JobResult run =
      torchrun(dir, "torchrun.log", 2, {}, CTRAINER_GLOO_WORKER, {"--timeout", "60"});
  ASSERT_EQ(run.exit_code, 0) << run.output;
  for (const char* rank : {"0", "1"})
    EXPECT_NE(run.output.find(std::string("rank ") + rank +
                              " of 2 (gloo): all-reduce 3 30, broadcast 1: OK"),
              std::string::npos)
        << run.output;
  // Rank 0 connected as a client. Had it tried to serve the store on the agent's port, c10d's
  // TCPStore would have logged this while forgiving the failed bind.
  EXPECT_EQ(run.output.find("has failed to bind"), std::string::npos) << run.output;
  fs::remove_all(dir);
}

TEST_F(Torchrun, AWorkersErrorIsTheRootCauseInTorchrunsSummary) {
  // Bad input: run_glue exits with 2 and writes its message to TORCHELASTIC_ERROR_FILE, which
  // torchrun prints as the root cause (instead of "To enable traceback see: ...").
  const fs::path dir = scratch("error_file");
  const JobResult run =
      torchrun(dir, "torchrun.log", 1, {}, CTRAINER_RUN_GLUE_BINARY,
               {"--task_name", "sst-2", "--data_dir", (dir / "data").string(), "--output_dir",
                (dir / "out").string(), "--do_train", "--report_to", "none"});
  EXPECT_NE(run.exit_code, 0) << run.output;
  const auto summary = run.output.find("Root Cause (first observed failure)");
  ASSERT_NE(summary, std::string::npos) << run.output;
  const std::string root_cause = run.output.substr(summary);
  EXPECT_NE(root_cause.find("exitcode  : 2"), std::string::npos) << root_cause;
  EXPECT_NE(root_cause.find("traceback : unknown GLUE task 'sst-2'; choose one of cola, sst2"),
            std::string::npos)
      << root_cause;
  fs::remove_all(dir);
}

// ---- run_glue: torchrun trains what ctrainer-run trains ---------------------------------------

TEST_F(Torchrun, RunGlueTrainsBitwiseTheModelThatCtrainerRunTrains) {
  // The tiny MRPC workload (tests/support/tiny_mrpc.h): 2 processes x 8 per step, 6 steps, a
  // checkpoint every 3.
  const fs::path dir = scratch("run_glue");
  ctrainer::testing::write_tiny_mrpc(dir, CTRAINER_EXAMPLES_DATA_DIR);
  const auto flags = [&](const std::string& out) {
    return ctrainer::testing::tiny_mrpc_flags(dir, CTRAINER_EXAMPLES_DATA_DIR, out, 1);
  };
  const JobResult reference =
      ctrainer_run(dir, "ctrainer_run.log", 2, CTRAINER_RUN_GLUE_BINARY, flags("out_ctrainer_run"));
  ASSERT_EQ(reference.exit_code, 0) << reference.output;
  const JobResult run =
      torchrun(dir, "torchrun.log", 2, {}, CTRAINER_RUN_GLUE_BINARY, flags("out_torchrun"));
  ASSERT_EQ(run.exit_code, 0) << run.output;

  const fs::path a = dir / "out_ctrainer_run", b = dir / "out_torchrun";
  const std::string weights = read_binary_file(a / "model.safetensors");
  ASSERT_GT(weights.size(), 1000u) << reference.output;
  EXPECT_TRUE(read_binary_file(b / "model.safetensors") == weights)
      << "model.safetensors differs between torchrun and ctrainer-run";
  EXPECT_TRUE(read_binary_file(b / "checkpoint-3" / "model.safetensors") ==
              read_binary_file(a / "checkpoint-3" / "model.safetensors"));
  const auto losses = logged_losses(a);
  ASSERT_EQ(losses.size(), 3u) << reference.output;  // steps 2, 4, 6
  EXPECT_EQ(logged_losses(b), losses);
  const auto eval_a = read_json_if_exists(a / "eval_results.json"),
             eval_b = read_json_if_exists(b / "eval_results.json");
  ASSERT_FALSE(eval_b.is_null()) << run.output;
  for (const char* metric : {"eval_loss", "eval_accuracy", "eval_f1", "eval_samples"})
    EXPECT_EQ(eval_b.at(metric), eval_a.at(metric)) << metric;
  // The ranks wrote their own RNG states: both processes ran under torchrun.
  EXPECT_TRUE(fs::exists(b / "checkpoint-3" / "rng_state_1.json"));
  fs::remove_all(dir);
}

// ---- restart: a killed worker resumes from the last checkpoint --------------------------------

TEST_F(Torchrun, KilledWorkerIsRestartedAndTheJobEndsAsAnUninterruptedOne) {
  // The Trainer worker, 2 epochs of 12 micro-batches of 4 per rank with accumulation 2 (12
  // steps), dropout on, a checkpoint every 3 steps. Rank 1 SIGKILLs itself after step 5 on the
  // first attempt (TORCHELASTIC_RESTART_COUNT 0): torchrun stops rank 0, restarts both, and they
  // resume from checkpoint-3 through the same agent store, whose keys of attempt 0 still hold
  // the dead workers' Gloo addresses.
  const fs::path dir = scratch("restart");
  const auto flags = [&](const std::string& name) {
    fs::create_directories(dir / name / "dump");
    return Args{"--output_dir",
                (dir / name / "out").string(),
                "--dump_dir",
                (dir / name / "dump").string(),
                "--do_train",
                "--optim",
                "sgd",
                "--learning_rate",
                "0.2",
                "--num_train_epochs",
                "2",
                "--logging_steps",
                "2",
                "--per_device_train_batch_size",
                "4",
                "--gradient_accumulation_steps",
                "2",
                "--dropout",
                "0.2",
                "--save_strategy",
                "steps",
                "--save_steps",
                "3",
                "--resume_from_checkpoint",
                "latest",
                "--log_level",
                "info",
                "--report_to",
                "none",
                "--disable_tqdm",
                "true",
                "--ddp_timeout",
                "60",
                "--seed",
                "1"};  // a save inside a logging window whose ranks' sums differ (trainer_ddp_test)
  };
  const JobResult straight =
      ctrainer_run(dir, "straight.log", 2, CTRAINER_TRAINER_DDP_WORKER, flags("straight"));
  ASSERT_EQ(straight.exit_code, 0) << straight.output;

  Args killed_flags = flags("killed");
  killed_flags.insert(killed_flags.end(),
                      {"--crash_at_step", "5", "--crash_rank", "1", "--crash_mode", "kill"});
  const JobResult killed = torchrun(dir, "killed.log", 2, {"--max-restarts", "1"},
                                    CTRAINER_TRAINER_DDP_WORKER, killed_flags);
  ASSERT_EQ(killed.exit_code, 0) << killed.output;
  EXPECT_NE(killed.output.find("rank 1 fails on purpose after step 5 (kill)"), std::string::npos)
      << killed.output;
  // torchrun's agent saw the failure. It names the failure with the smallest timestamp, in
  // whole seconds: rank 1's SIGKILL (stamped when the agent polls), or rank 0, whose all-reduce
  // broke on the dead peer and whose error file can carry the second before that poll.
  EXPECT_TRUE(std::regex_search(
      killed.output,
      std::regex(R"(failed \(exitcode: (-9\) local_rank: 1|-?[0-9]+\) local_rank: 0) )")))
      << killed.output;  // ... stopped the group ...
  EXPECT_NE(killed.output.find("Resuming from"), std::string::npos)
      << killed.output;  // ... restarted

  // Dropout draws from the restored RNG states: only an exact resume ends bitwise equal.
  const std::string params = read_text_file(dir / "straight" / "dump" / "params.0.txt");
  ASSERT_FALSE(params.empty()) << straight.output;
  EXPECT_EQ(read_text_file(dir / "killed" / "dump" / "params.0.txt"), params);
  EXPECT_EQ(read_text_file(dir / "killed" / "dump" / "params.1.txt"), params);
  EXPECT_EQ(read_json_if_exists(dir / "killed" / "dump" / "eval.0.json")["metrics"]["eval_loss"],
            read_json_if_exists(dir / "straight" / "dump" / "eval.0.json")["metrics"]["eval_loss"]);
  const auto losses = logged_losses(dir / "straight" / "out");
  ASSERT_EQ(losses.size(), 6u) << straight.output;
  EXPECT_EQ(logged_losses(dir / "killed" / "out"), losses);
  fs::remove_all(dir);
}

}  // namespace
