// The sharded strategy (ZeRO-1/2/3) through the real launcher: ctrainer-run starts N ranks of
// sharded_worker, which train a tiny BERT with dropout, AdamW, clipping and accumulation. Every
// stage, with and without offload, prefetching, gradient checkpointing or overlap, must end with
// the parameters, losses and gradient norms of DDP within 1e-5 (fp32), and hold the memory the
// ZeRO formulas give for its stage.
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "support/parameter_text.h"
#include "support/process.h"

namespace {
namespace fs = std::filesystem;
using ctrainer::testing::parse_parameters;
using ctrainer::testing::read_text_file;

struct LaunchResult {
  std::string out;
  std::string err;
  int code = -1;
  std::string rank0_parameters;
  std::vector<std::string> rank_parameters;
};

/// Runs `nproc` ranks of the worker; with `nnodes` > 1 as that many "nodes" on this host (one
/// ctrainer-run per node, --nnodes/--node-rank on loopback), so LOCAL_WORLD_SIZE is
/// nproc / nnodes. The output is node 0's (rank 0's); a failing node's goes to `err`.
LaunchResult launch(const std::string& tag, int nproc, const std::vector<std::string>& worker_flags,
                    int nnodes = 1) {
  const fs::path dir =
      fs::temp_directory_path() / ("ctrainer_sharded_" + std::to_string(::getpid()) + "_" + tag);
  fs::remove_all(dir);
  fs::create_directories(dir);
  const int port = ctrainer::testing::free_port();
  std::vector<pid_t> nodes;
  for (int node = 0; node < nnodes; ++node) {
    std::vector<std::string> argv{CTRAINER_RUN_BINARY, "--nproc-per-node",
                                  std::to_string(nproc / nnodes)};
    if (nnodes == 1) {
      argv.push_back("--standalone");
    } else {
      argv.insert(argv.end(),
                  {"--nnodes", std::to_string(nnodes), "--node-rank", std::to_string(node),
                   "--master-addr", "127.0.0.1", "--master-port", std::to_string(port)});
    }
    argv.insert(argv.end(), {CTRAINER_SHARDED_WORKER, "--out", dir.string()});
    argv.insert(argv.end(), worker_flags.begin(), worker_flags.end());
    const std::string stem = node == 0 ? "launcher" : "launcher." + std::to_string(node);
    nodes.push_back(
        ctrainer::testing::spawn_process(argv, dir / (stem + ".out"), dir / (stem + ".err")));
  }
  LaunchResult run;
  run.code = 0;
  for (int node = 0; node < nnodes; ++node) {
    const int code = ctrainer::testing::wait_for(nodes[static_cast<std::size_t>(node)]);
    if (code != 0 && run.code == 0) run.code = code;
  }
  run.out = read_text_file(dir / "launcher.out");
  run.err = read_text_file(dir / "launcher.err");
  for (int node = 1; node < nnodes; ++node)
    run.err += read_text_file(dir / ("launcher." + std::to_string(node) + ".err"));
  for (int r = 0; r < nproc; ++r)
    run.rank_parameters.push_back(read_text_file(dir / ("params." + std::to_string(r) + ".txt")));
  run.rank0_parameters = run.rank_parameters.front();
  fs::remove_all(dir);
  return run;
}

/// "step K: loss L grad norm G" lines of rank 0, as (L, G) per step.
std::vector<std::pair<double, double>> steps_of(const std::string& out) {
  std::vector<std::pair<double, double>> steps;
  const std::regex line(R"(step (\d+): loss ([-0-9.e]+) grad norm ([-0-9.e]+))");
  for (auto it = std::sregex_iterator(out.begin(), out.end(), line); it != std::sregex_iterator();
       ++it)
    steps.emplace_back(std::stod((*it)[2]), std::stod((*it)[3]));
  return steps;
}

struct Case {
  std::string name;
  std::string strategy;
  int nproc;
  int accum;
  std::vector<std::string> flags;  ///< for the sharded run
  std::vector<std::string> both;   ///< for both runs (e.g. gradient checkpointing)
  int nnodes = 1;                  ///< "nodes" on this host (HYBRID_SHARD)
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.name;
}

class ShardedVersusDDP : public ::testing::TestWithParam<Case> {};

TEST_P(ShardedVersusDDP, TrainsWhatDDPTrains) {
  const Case& c = GetParam();
  std::vector<std::string> common{"--accum", std::to_string(c.accum), "--steps", "4"};
  common.insert(common.end(), c.both.begin(), c.both.end());
  std::vector<std::string> ddp_flags = common;
  ddp_flags.insert(ddp_flags.end(), {"--strategy", "ddp"});
  std::vector<std::string> sharded_flags = common;
  sharded_flags.insert(sharded_flags.end(), {"--strategy", c.strategy});
  sharded_flags.insert(sharded_flags.end(), c.flags.begin(), c.flags.end());

  const LaunchResult ddp = launch(c.name + "_ddp", c.nproc, ddp_flags, c.nnodes);
  ASSERT_EQ(ddp.code, 0) << ddp.out << ddp.err;
  const LaunchResult sharded = launch(c.name, c.nproc, sharded_flags, c.nnodes);
  ASSERT_EQ(sharded.code, 0) << sharded.out << sharded.err;

  // Every rank ends with the same full parameters.
  ASSERT_FALSE(sharded.rank0_parameters.empty()) << sharded.out << sharded.err;
  for (int r = 1; r < c.nproc; ++r)
    EXPECT_EQ(sharded.rank_parameters[r], sharded.rank0_parameters) << "rank " << r;

  const auto expected = parse_parameters(ddp.rank0_parameters);
  const auto got = parse_parameters(sharded.rank0_parameters);
  ASSERT_EQ(got.size(), expected.size());
  ASSERT_GE(got.size(), 40u);
  double max_diff = 0, max_change = 0;
  const auto initial_unknown = expected.end();
  (void)initial_unknown;
  for (const auto& [name, values] : expected) {
    ASSERT_TRUE(got.count(name)) << name;
    const auto& mine = got.at(name);
    ASSERT_EQ(mine.size(), values.size()) << name;
    for (std::size_t i = 0; i < values.size(); ++i) {
      max_diff = std::max(max_diff, std::abs(mine[i] - values[i]));
      EXPECT_LE(std::abs(mine[i] - values[i]), 1e-5) << name << "[" << i << "]";
    }
  }
  const auto ddp_steps = steps_of(ddp.out);
  const auto sharded_steps = steps_of(sharded.out);
  ASSERT_EQ(ddp_steps.size(), 4u) << ddp.out;
  ASSERT_EQ(sharded_steps.size(), 4u) << sharded.out;
  for (std::size_t s = 0; s < ddp_steps.size(); ++s) {
    EXPECT_NEAR(sharded_steps[s].first, ddp_steps[s].first, 1e-5) << "loss of step " << s;
    EXPECT_NEAR(sharded_steps[s].second, ddp_steps[s].second, 1e-5) << "grad norm of step " << s;
    max_change = std::max(max_change, std::abs(ddp_steps[s].first - ddp_steps[0].first));
  }
  // The run trained (the loss moved) and clipping was active (norms above the worker's 0.05).
  EXPECT_GT(max_change, 1e-3);
  EXPECT_GT(ddp_steps[0].second, 0.05);
  if (std::find(c.both.begin(), c.both.end(), "--overflow-step") != c.both.end()) {
    // Step 1 was skipped on every rank (grad norm printed as -1) and the scale halved.
    EXPECT_EQ(sharded_steps[1].second, -1.0) << sharded.out;
    EXPECT_TRUE(std::regex_search(sharded.out, std::regex(R"(step 1: [^\n]* scale 32768\.0)")))
        << sharded.out;
  }
  std::printf("%s: max |sharded - ddp| = %g\n", c.name.c_str(), max_diff);
}

INSTANTIATE_TEST_SUITE_P(
    Stages, ShardedVersusDDP,
    ::testing::Values(
        Case{"zero1_N2", "zero1", 2, 1, {}, {}}, Case{"zero1_N3_accum2", "zero1", 3, 2, {}, {}},
        Case{"zero1_N2_accum2_offload", "zero1", 2, 2, {"--offload", "1"}, {}},
        Case{"zero2_N2", "zero2", 2, 1, {}, {}}, Case{"zero2_N3_accum2", "zero2", 3, 2, {}, {}},
        Case{"zero2_N2_offload", "zero2", 2, 1, {"--offload", "1"}, {}},
        Case{"zero2_N2_accum2_no_overlap", "zero2", 2, 2, {"--overlap", "0"}, {}},
        Case{"zero3_N2", "zero3", 2, 1, {}, {}}, Case{"zero3_N3_accum2", "zero3", 3, 2, {}, {}},
        Case{"zero3_N2_accum2_offload", "zero3", 2, 2, {"--offload", "1"}, {}},
        Case{"zero3_N2_prefetch_post_forward",
             "zero3",
             2,
             1,
             {"--prefetch", "post", "--forward-prefetch", "1"},
             {}},
        Case{"zero3_N3_no_prefetch", "zero3", 3, 1, {"--prefetch", "none"}, {}},
        Case{"zero3_N2_root_only", "zero3", 2, 1, {"--wrap", ""}, {}},
        Case{"zero3_N2_persistent_small", "zero3", 2, 1, {"--persistence", "20"}, {}},
        Case{"zero3_N2_gradient_checkpointing", "zero3", 2, 2, {}, {"--checkpointing", "1"}},
        Case{"zero2_N2_gradient_checkpointing", "zero2", 2, 1, {}, {"--checkpointing", "1"}},
        // HYBRID_SHARD: 2 "nodes" of 2 ranks shard inside the node and replicate across nodes.
        Case{"hybrid_zero3_2x2", "zero3", 4, 1, {"--hybrid", "1"}, {}, 2},
        Case{"hybrid_zero2_2x2_accum3_offload",
             "zero2",
             4,
             3,
             {"--hybrid", "1", "--offload", "1"},
             {},
             2},
        // Loss scaling: rank 0 overflows one gradient element in step 1. After the
        // reduce-scatter only the rank owning that element sees the inf; every rank must skip.
        Case{"zero1_N2_loss_scale_overflow",
             "zero1",
             2,
             1,
             {},
             {"--loss-scale", "1", "--overflow-step", "1"}},
        Case{"zero2_N3_accum2_loss_scale_overflow",
             "zero2",
             3,
             2,
             {},
             {"--loss-scale", "1", "--overflow-step", "1"}},
        Case{"zero3_N2_loss_scale_overflow",
             "zero3",
             2,
             1,
             {},
             {"--loss-scale", "1", "--overflow-step", "1"}},
        // One node: HYBRID_SHARD is FULL_SHARD.
        Case{"hybrid_zero3_one_node_N2", "zero3", 2, 1, {"--hybrid", "1"}, {}, 1}),
    [](const auto& info) { return info.param.name; });

// ---- sharded state: resume at the same and at other world sizes ----------------------------

double max_difference(const std::string& a, const std::string& b) {
  const auto x = parse_parameters(a), y = parse_parameters(b);
  EXPECT_EQ(x.size(), y.size());
  double worst = x.empty() ? 1e9 : 0;
  for (const auto& [name, values] : x) {
    if (!y.count(name) || y.at(name).size() != values.size()) return 1e9;
    for (std::size_t i = 0; i < values.size(); ++i)
      worst = std::max(worst, std::abs(values[i] - y.at(name)[i]));
  }
  return worst;
}

// 4 steps in one go against 2 steps, save, load, 2 steps: bitwise at the same world size.
TEST(ShardedState, ResumeAtTheSameWorldSizeIsBitwise) {
  const fs::path dir =
      fs::temp_directory_path() / ("ctrainer_sharded_state_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const std::vector<std::string> common{"--strategy", "zero3", "--dropout", "0"};
  auto with = [&](std::vector<std::string> extra) {
    extra.insert(extra.end(), common.begin(), common.end());
    return extra;
  };
  const LaunchResult whole = launch("whole", 2, with({"--steps", "4"}));
  ASSERT_EQ(whole.code, 0) << whole.out << whole.err;
  const LaunchResult first = launch("first", 2, with({"--steps", "2", "--save", dir.string()}));
  ASSERT_EQ(first.code, 0) << first.out << first.err;
  const LaunchResult second = launch("second", 2, with({"--steps", "2", "--load", dir.string()}));
  ASSERT_EQ(second.code, 0) << second.out << second.err;
  EXPECT_EQ(second.rank0_parameters, whole.rank0_parameters);
  EXPECT_GT(max_difference(first.rank0_parameters, whole.rank0_parameters), 1e-4);
  fs::remove_all(dir);
}

// 2 ranks (ZeRO-3) -> 3 ranks (ZeRO-1) -> 1 rank (ZeRO-2), one global batch throughout: the
// parameters and Adam's moments and step carry over exactly, so the run ends where an
// uninterrupted 2-rank run does (up to the order of floating-point sums).
TEST(ShardedState, ResumeAtOtherWorldSizesCarriesParametersAndOptimizerState) {
  const fs::path base =
      fs::temp_directory_path() / ("ctrainer_sharded_reshard_" + std::to_string(::getpid()));
  fs::remove_all(base);
  const std::string a = (base / "a").string(), b = (base / "b").string();
  const LaunchResult whole =
      launch("rs_whole", 2, {"--strategy", "zero3", "--dropout", "0", "--steps", "4"});
  ASSERT_EQ(whole.code, 0) << whole.out << whole.err;
  const LaunchResult first =
      launch("rs_first", 2, {"--strategy", "zero3", "--dropout", "0", "--steps", "2", "--save", a});
  ASSERT_EQ(first.code, 0) << first.out << first.err;
  const LaunchResult second =
      launch("rs_second", 3,
             {"--strategy", "zero1", "--dropout", "0", "--steps", "1", "--load", a, "--save", b});
  ASSERT_EQ(second.code, 0) << second.out << second.err;
  const LaunchResult third =
      launch("rs_third", 1, {"--strategy", "zero2", "--dropout", "0", "--steps", "1", "--load", b});
  ASSERT_EQ(third.code, 0) << third.out << third.err;
  const double diff = max_difference(third.rank0_parameters, whole.rank0_parameters);
  EXPECT_LE(diff, 1e-5);
  std::printf("2 -> 3 -> 1 ranks: max |resharded - uninterrupted| = %g\n", diff);
  fs::remove_all(base);
}

// HYBRID_SHARD over 2 "nodes" of 2: only node 0's ranks write (the other node holds copies), as
// 2 shards; resuming from them at 2 x 2 is bitwise, and so is resuming on one node of 2 ranks
// (FULL_SHARD over the same 2 chunks) up to the order of the cross-node sums.
TEST(ShardedState, HybridWritesOneReplicaAndResumes) {
  const fs::path dir =
      fs::temp_directory_path() / ("ctrainer_sharded_hybrid_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const std::vector<std::string> common{"--strategy", "zero3", "--dropout", "0", "--hybrid", "1"};
  auto with = [&](std::vector<std::string> extra) {
    extra.insert(extra.end(), common.begin(), common.end());
    return extra;
  };
  const LaunchResult whole = launch("h_whole", 4, with({"--steps", "4"}), 2);
  ASSERT_EQ(whole.code, 0) << whole.out << whole.err;
  const LaunchResult first =
      launch("h_first", 4, with({"--steps", "2", "--save", dir.string()}), 2);
  ASSERT_EQ(first.code, 0) << first.out << first.err;
  EXPECT_TRUE(fs::exists(dir / "zero" / "rank_0.safetensors"));
  EXPECT_TRUE(fs::exists(dir / "zero" / "rank_1.safetensors"));
  EXPECT_FALSE(fs::exists(dir / "zero" / "rank_2.safetensors"));
  const std::string manifest = read_text_file(dir / "zero" / "manifest.json");
  EXPECT_TRUE(std::regex_search(manifest, std::regex(R"("world_size"\s*:\s*2\b)"))) << manifest;
  const LaunchResult second =
      launch("h_second", 4, with({"--steps", "2", "--load", dir.string()}), 2);
  ASSERT_EQ(second.code, 0) << second.out << second.err;
  EXPECT_EQ(second.rank0_parameters, whole.rank0_parameters);
  EXPECT_GT(max_difference(first.rank0_parameters, whole.rank0_parameters), 1e-4);
  fs::remove_all(dir);
}

// ---- 16-bit parameters with fp32 masters (DeepSpeed's bf16 mode) ----------------------------

// The model runs in bf16; the optimizer steps fp32 master shards. On one process ZeRO-2 equals
// a hand-written fp32-master loop, and at 2 ranks ZeRO-1, -2 and -3 equal each other (a sum of
// two bf16 gradients is the same whoever adds it); the bf16 run stays near the fp32 one.
TEST(ShardedBf16Parameters, StepFp32MastersLikeAHandWrittenLoop) {
  const std::vector<std::string> common{"--steps", "4", "--param-dtype", "bf16"};
  auto with = [&](std::vector<std::string> extra) {
    extra.insert(extra.end(), common.begin(), common.end());
    return extra;
  };
  const LaunchResult manual = launch("bf16_manual", 1, with({"--strategy", "manual"}));
  ASSERT_EQ(manual.code, 0) << manual.out << manual.err;
  const LaunchResult zero2_alone = launch("bf16_zero2_N1", 1, with({"--strategy", "zero2"}));
  ASSERT_EQ(zero2_alone.code, 0) << zero2_alone.out << zero2_alone.err;
  EXPECT_LE(max_difference(zero2_alone.rank0_parameters, manual.rank0_parameters), 1e-6);
  const auto manual_steps = steps_of(manual.out), alone_steps = steps_of(zero2_alone.out);
  ASSERT_EQ(manual_steps.size(), 4u) << manual.out;
  ASSERT_EQ(alone_steps.size(), 4u) << zero2_alone.out;
  for (std::size_t k = 0; k < 4; ++k) {
    EXPECT_NEAR(alone_steps[k].first, manual_steps[k].first, 1e-6) << "step " << k;
    EXPECT_NEAR(alone_steps[k].second, manual_steps[k].second, 1e-6) << "step " << k;
  }

  std::map<std::string, LaunchResult> pair;
  for (const std::string stage : {"zero1", "zero2", "zero3"}) {
    pair[stage] = launch("bf16_" + stage, 2, with({"--strategy", stage}));
    ASSERT_EQ(pair[stage].code, 0) << pair[stage].out << pair[stage].err;
    EXPECT_EQ(pair[stage].rank_parameters[1], pair[stage].rank0_parameters) << stage;
  }
  EXPECT_LE(max_difference(pair["zero1"].rank0_parameters, pair["zero2"].rank0_parameters), 1e-6);
  EXPECT_LE(max_difference(pair["zero3"].rank0_parameters, pair["zero2"].rank0_parameters), 1e-6);
  // Every parameter holds a bf16 value, and the run trained.
  for (const auto& [name, values] : parse_parameters(pair["zero3"].rank0_parameters))
    for (double v : values) {
      const float f = static_cast<float>(v);
      uint32_t bits = 0;
      std::memcpy(&bits, &f, sizeof bits);
      ASSERT_EQ(bits & 0xffffu, 0u) << name << " holds " << v << ", not a bf16 value";
    }
  const LaunchResult fp32 = launch("fp32_zero2", 2, {"--strategy", "zero2", "--steps", "4"});
  ASSERT_EQ(fp32.code, 0) << fp32.out << fp32.err;
  const auto bf16_steps = steps_of(pair["zero2"].out), fp32_steps = steps_of(fp32.out);
  ASSERT_EQ(bf16_steps.size(), 4u);
  ASSERT_EQ(fp32_steps.size(), 4u);
  for (std::size_t k = 0; k < 4; ++k)
    EXPECT_NEAR(bf16_steps[k].first, fp32_steps[k].first, 2e-2) << "step " << k;
  EXPECT_GT(std::abs(bf16_steps[3].first - bf16_steps[0].first), 1e-3);
}

// ---- a failing rank -------------------------------------------------------------------------

struct FailureCase {
  std::string strategy;
  std::string mode;  ///< kill: SIGKILL; hang: the rank stops answering
  int timeout_seconds;
};

void PrintTo(const FailureCase& c, std::ostream* os) {
  *os << c.strategy << " " << c.mode;
}

class ShardedFailure : public ::testing::TestWithParam<FailureCase> {};

// Two ranks started directly (torchrun's environment, no launcher to stop the survivor): rank 1
// dies or stalls in step 1 between forward and backward, while rank 0 is inside the step's
// reduce-scatters (ZeRO-1/2) or all-gathers (ZeRO-3). Rank 0 must leave with an error naming
// the failed collective: at once when the peer's sockets close, within --ddp_timeout (plus
// teardown) when it hangs.
TEST_P(ShardedFailure, TheOtherRanksExitWithinTheTimeout) {
  const FailureCase& c = GetParam();
  const fs::path dir =
      fs::temp_directory_path() /
      ("ctrainer_sharded_fail_" + std::to_string(::getpid()) + "_" + c.strategy + "_" + c.mode);
  fs::remove_all(dir);
  fs::create_directories(dir);
  const int port = ctrainer::testing::free_port();
  std::vector<pid_t> pids;
  const auto start = std::chrono::steady_clock::now();
  for (int rank = 0; rank < 2; ++rank) {
    const auto env = ctrainer::testing::torchrun_environment(rank, 2, port);
    const std::vector<std::string> argv{CTRAINER_SHARDED_WORKER,
                                        "--out",
                                        dir.string(),
                                        "--strategy",
                                        c.strategy,
                                        "--steps",
                                        "3",
                                        "--timeout",
                                        std::to_string(c.timeout_seconds),
                                        "--fail-rank",
                                        "1",
                                        "--fail-step",
                                        "1",
                                        "--fail-mode",
                                        c.mode};
    const fs::path log = dir / ("rank" + std::to_string(rank) + ".log");
    pids.push_back(ctrainer::testing::spawn_process(argv, log, log, env));
  }
  const int rank0_code = ctrainer::testing::wait_for(pids[0]);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ::kill(pids[1], SIGKILL);  // the hanging one is still there
  ctrainer::testing::wait_for(pids[1]);
  const std::string output = read_text_file(dir / "rank0.log");
  const std::string rank1 = read_text_file(dir / "rank1.log");
  EXPECT_NE(rank1.find("rank 1: failing (" + c.mode + ") in step 1"), std::string::npos) << rank1;
  EXPECT_EQ(rank0_code, 3) << output;
  // The collective that failed, on which rank, and what to look at.
  const std::string collective = c.strategy == "zero3" ? "all-gather" : "reduce-scatter";
  EXPECT_NE(output.find(collective + " failed on rank 0 of 2"), std::string::npos) << output;
  EXPECT_NE(output.find("A peer crashed or hung past --ddp_timeout"), std::string::npos) << output;
  // Step 0 completed before the failure, step 1 never did.
  EXPECT_NE(output.find("step 0: loss"), std::string::npos) << output;
  EXPECT_EQ(output.find("step 1: loss"), std::string::npos) << output;
  if (c.mode == "kill") {
    EXPECT_LT(seconds, 30) << output;
  } else {
    EXPECT_GE(seconds, c.timeout_seconds) << output;
    EXPECT_LT(seconds, c.timeout_seconds + 20) << output;
  }
  std::printf("%s %s: rank 0 exited with %d after %.1f s\n", c.strategy.c_str(), c.mode.c_str(),
              rank0_code, seconds);
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(
    Stages, ShardedFailure,
    ::testing::Values(FailureCase{"zero1", "kill", 60}, FailureCase{"zero2", "kill", 60},
                      FailureCase{"zero3", "kill", 60}, FailureCase{"zero2", "hang", 5},
                      FailureCase{"zero3", "hang", 5}),
    [](const auto& info) { return info.param.strategy + "_" + info.param.mode; });

// ---- memory -------------------------------------------------------------------------------

struct Memory {
  double parameters, gradients, master, optimizer_state, psi, padded;
};

Memory memory_of(const std::string& out) {
  const std::regex line(
      R"(memory: parameters (\d+) gradients (\d+) master (\d+) optimizer_state (\d+) psi (\d+) padded (\d+))");
  std::smatch m;
  if (!std::regex_search(out, m, line)) return {-1, -1, -1, -1, -1, -1};
  return {std::stod(m[1]), std::stod(m[2]), std::stod(m[3]),
          std::stod(m[4]), std::stod(m[5]), std::stod(m[6])};
}

struct MemoryCase {
  std::string strategy;
  int nproc;
  bool offload;
  int nnodes = 1;     ///< > 1: HYBRID_SHARD over that many "nodes" (sharded over nproc / nnodes)
  bool bf16 = false;  ///< bf16 parameters and gradients, fp32 master shards
};

void PrintTo(const MemoryCase& c, std::ostream* os) {
  *os << c.strategy << " N=" << c.nproc << (c.offload ? " offload" : "")
      << (c.nnodes > 1 ? " hybrid" : "") << (c.bf16 ? " bf16" : "");
}

class ShardedMemory : public ::testing::TestWithParam<MemoryCase> {};

// fp32 parameters and AdamW (two moments): DDP holds 4Psi + 4Psi + 8Psi bytes. ZeRO-1 shards the
// optimizer state, ZeRO-2 also the gradients, ZeRO-3 also the parameters; offload adds an fp32
// master shard on the CPU (and ZeRO-1 a gradient shard there).
TEST_P(ShardedMemory, HoldsWhatTheZeroFormulasGive) {
  const auto& c = GetParam();
  std::vector<std::string> flags{"--strategy", c.strategy,  "--steps",
                                 "1",          "--offload", c.offload ? "1" : "0"};
  if (c.nnodes > 1) flags.insert(flags.end(), {"--hybrid", "1"});
  if (c.bf16) flags.insert(flags.end(), {"--param-dtype", "bf16"});
  const LaunchResult run = launch(c.strategy + std::to_string(c.nproc) + (c.offload ? "o" : "") +
                                      (c.nnodes > 1 ? "h" : "") + (c.bf16 ? "b" : "") + "_mem",
                                  c.nproc, flags, c.nnodes);
  ASSERT_EQ(run.code, 0) << run.out << run.err;
  const Memory m = memory_of(run.out);
  ASSERT_GT(m.psi, 5000) << run.out;
  // HYBRID_SHARD shards over the ranks of one node.
  const double n = c.nproc / c.nnodes;
  // What the formulas give for the padded layout; padding is a few elements per segment.
  const double p = m.padded;
  EXPECT_LT(p - m.psi, 0.01 * m.psi);
  double parameters = 4 * p, gradients = 4 * p / n, master = 0, state = 8 * p / n;
  if (c.strategy == "zero1") gradients = 4 * p;
  if (c.strategy == "zero3") parameters = 4 * p / n;
  if (c.offload) {
    master = 4 * p / n;
    if (c.strategy == "zero1") gradients += 4 * p / n;
  }
  if (c.bf16) {
    // 2-byte parameters (and ZeRO-1's full gradients); the master and gradient shards are fp32.
    parameters /= 2;
    master = 4 * p / n;
    if (c.strategy == "zero1") gradients = 2 * p + 4 * p / n;
  }
  auto within = [](double got, double want) { return std::abs(got - want) <= 0.05 * want + 1; };
  EXPECT_TRUE(within(m.parameters, parameters)) << m.parameters << " vs " << parameters;
  EXPECT_TRUE(within(m.gradients, gradients)) << m.gradients << " vs " << gradients;
  EXPECT_TRUE(within(m.master, master)) << m.master << " vs " << master;
  EXPECT_TRUE(within(m.optimizer_state, state)) << m.optimizer_state << " vs " << state;
  std::printf("%s N=%d offload=%d: %.0f %.0f %.0f %.0f bytes (psi %.0f)\n", c.strategy.c_str(),
              c.nproc, c.offload, m.parameters, m.gradients, m.master, m.optimizer_state, m.psi);
}

INSTANTIATE_TEST_SUITE_P(
    Stages, ShardedMemory,
    ::testing::Values(MemoryCase{"zero1", 2, false}, MemoryCase{"zero1", 3, true},
                      MemoryCase{"zero2", 2, false}, MemoryCase{"zero2", 3, false},
                      MemoryCase{"zero2", 2, true}, MemoryCase{"zero3", 2, false},
                      MemoryCase{"zero3", 3, false}, MemoryCase{"zero3", 2, true},
                      MemoryCase{"zero3", 4, false, 2}, MemoryCase{"zero1", 2, false, 1, true},
                      MemoryCase{"zero2", 2, false, 1, true},
                      MemoryCase{"zero3", 3, false, 1, true}),
    [](const auto& info) {
      return info.param.strategy + "_N" + std::to_string(info.param.nproc) +
             (info.param.offload ? "_offload" : "") + (info.param.nnodes > 1 ? "_hybrid" : "") +
             (info.param.bf16 ? "_bf16" : "");
    });

}  // namespace
