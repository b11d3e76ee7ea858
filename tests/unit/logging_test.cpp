// Per-rank logging: HF's should_log / get_process_log_level semantics and the rank-tagged format.
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <ctrainer/core/errors.h>
#include <ctrainer/distributed/process_info.h>
#include <ctrainer/trainer/args/training_args.h>
#include <ctrainer/trainer/runtime/logging.h>

namespace ctrainer {
namespace logging_test {

namespace lg = ctrainer::logging;

// Must stay the first test of this file: it needs a process where setup() was never called.
TEST(Logging, DefaultLoggerBeforeSetup) {
  auto l = lg::logger();
  ASSERT_NE(l, nullptr);
  EXPECT_EQ(l->name(), "ctrainer");
  EXPECT_EQ(spdlog::get("ctrainer"), l);
  EXPECT_EQ(lg::get_verbosity(), spdlog::level::warn);  // HF's default verbosity
  EXPECT_EQ(l->level(), spdlog::level::warn);
  // Before setup() the library logger follows set_verbosity, like HF's library logger.
  lg::set_verbosity(spdlog::level::err);
  EXPECT_EQ(l->level(), spdlog::level::err);
  lg::set_verbosity(spdlog::level::warn);
  EXPECT_EQ(l->level(), spdlog::level::warn);
}

ProcessInfo proc(int64_t rank, int64_t world, int64_t local_rank, int64_t local_world) {
  ProcessInfo p;
  p.rank = rank;
  p.world_size = world;
  p.local_rank = local_rank;
  p.local_world_size = local_world;
  return p;
}
// One node, two processes.
ProcessInfo one_node(int64_t rank) {
  return proc(rank, 2, rank, 2);
}
// Two nodes, one process each: every rank is its node's local rank 0.
ProcessInfo two_nodes(int64_t rank) {
  return proc(rank, 2, 0, 1);
}

TrainingArguments args_with(LogLevel level, LogLevel replica, bool each_node = true) {
  TrainingArguments a;
  a.log_level = level;
  a.log_level_replica = replica;
  a.log_on_each_node = each_node;
  return a;
}

// Sets up the logger for (args, process), logs one message per level and returns the lines.
std::vector<std::string> emitted(const TrainingArguments& args, const ProcessInfo& process) {
  std::ostringstream out;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out);
  lg::setup(args, process, sink);
  auto l = lg::logger();
  l->trace("t");
  l->debug("d");
  l->info("i");
  l->warn("w");
  l->error("e");
  l->critical("c");
  l->flush();
  std::vector<std::string> lines;
  std::istringstream in(out.str());
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The level names and messages emitted, checking the full format and the rank tag per line.
std::vector<std::string> levels(const TrainingArguments& args, const ProcessInfo& process) {
  static const std::regex line_re(
      R"(^\[\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{3}\] \[rank (\d+)\] \[([a-z]+)\] ([a-z])$)");
  std::vector<std::string> out;
  for (const auto& line : emitted(args, process)) {
    std::smatch m;
    EXPECT_TRUE(std::regex_match(line, m, line_re)) << "bad line: " << line;
    if (m.empty()) continue;
    EXPECT_EQ(m[1].str(), std::to_string(process.rank)) << line;
    EXPECT_EQ(m[2].str().substr(0, 1), m[3].str()) << line;  // level name matches message
    out.push_back(m[2].str());
  }
  return out;
}

const std::vector<std::string> kFromDebug = {"debug", "info", "warning", "error", "critical"};
const std::vector<std::string> kFromInfo = {"info", "warning", "error", "critical"};
const std::vector<std::string> kFromWarning = {"warning", "error", "critical"};
const std::vector<std::string> kFromError = {"error", "critical"};

TEST(Logging, ExactLineFormat) {
  std::ostringstream out;
  lg::setup(args_with(LogLevel::kInfo, LogLevel::kWarning), one_node(1),
            std::make_shared<spdlog::sinks::ostream_sink_mt>(out));
  lg::logger()->warn("step {} of {}", 3, 10);
  lg::logger()->flush();
  const std::regex re(
      R"(^\[\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{3}\] \[rank 1\] \[warning\] step 3 of 10\n$)");
  EXPECT_TRUE(std::regex_match(out.str(), re)) << out.str();
}

TEST(Logging, OneNodeMainAndReplica) {
  const auto a = args_with(LogLevel::kInfo, LogLevel::kError);
  EXPECT_EQ(levels(a, one_node(0)), kFromInfo);   // main process: log_level
  EXPECT_EQ(levels(a, one_node(1)), kFromError);  // replica: log_level_replica
  const auto b = args_with(LogLevel::kDebug, LogLevel::kWarning);
  EXPECT_EQ(levels(b, one_node(0)), kFromDebug);
  EXPECT_EQ(levels(b, one_node(1)), kFromWarning);
  const auto c = args_with(LogLevel::kError,
                           LogLevel::kInfo);  // a replica may be more verbose than the main one
  EXPECT_EQ(levels(c, one_node(0)), kFromError);
  EXPECT_EQ(levels(c, one_node(1)), kFromInfo);
}

TEST(Logging, OneNodeLogOnEachNodeMakesNoDifference) {
  // On one node local_rank == rank, so both settings select the same processes.
  for (bool each : {true, false}) {
    const auto a = args_with(LogLevel::kDebug, LogLevel::kError, each);
    EXPECT_EQ(levels(a, one_node(0)), kFromDebug) << each;
    EXPECT_EQ(levels(a, one_node(1)), kFromError) << each;
  }
}

TEST(Logging, TwoNodesLogOnEachNode) {
  // Rank 1 is local rank 0 of the second node.
  const auto each = args_with(LogLevel::kDebug, LogLevel::kError, /*each_node=*/true);
  EXPECT_EQ(levels(each, two_nodes(0)), kFromDebug);
  EXPECT_EQ(levels(each, two_nodes(1)), kFromDebug);  // its node's main process: log_level
  const auto global = args_with(LogLevel::kDebug, LogLevel::kError, /*each_node=*/false);
  EXPECT_EQ(levels(global, two_nodes(0)), kFromDebug);
  EXPECT_EQ(levels(global, two_nodes(1)), kFromError);  // only rank 0 is main: replica level
}

TEST(Logging, PassiveUsesVerbosity) {
  // Defaults: log_level passive, log_level_replica warning, verbosity warning.
  const TrainingArguments defaults;
  EXPECT_EQ(levels(defaults, one_node(0)), kFromWarning);
  EXPECT_EQ(levels(defaults, one_node(1)), kFromWarning);

  lg::set_verbosity(spdlog::level::info);
  EXPECT_EQ(levels(defaults, one_node(0)), kFromInfo);
  EXPECT_EQ(levels(defaults, one_node(1)), kFromWarning);  // replica level is explicit
  EXPECT_EQ(levels(args_with(LogLevel::kError, LogLevel::kPassive), one_node(1)), kFromInfo);
  EXPECT_EQ(levels(args_with(LogLevel::kPassive, LogLevel::kPassive), one_node(0)), kFromInfo);

  lg::set_verbosity(spdlog::level::debug);
  EXPECT_EQ(levels(args_with(LogLevel::kPassive, LogLevel::kError), two_nodes(1)), kFromDebug);
  EXPECT_EQ(levels(args_with(LogLevel::kPassive, LogLevel::kError, false), two_nodes(1)),
            kFromError);
  lg::set_verbosity(spdlog::level::warn);
}

TEST(Logging, SetupLevelIsNotMovedByLaterSetVerbosity) {
  lg::setup(args_with(LogLevel::kInfo, LogLevel::kWarning), one_node(0));
  lg::set_verbosity(spdlog::level::err);
  EXPECT_EQ(lg::logger()->level(), spdlog::level::info);
  lg::set_verbosity(spdlog::level::warn);
}

TEST(Logging, ShouldLogAndProcessLogLevel) {
  const auto a = args_with(LogLevel::kDebug, LogLevel::kError, true);
  EXPECT_TRUE(lg::should_log(a, one_node(0)));
  EXPECT_FALSE(lg::should_log(a, one_node(1)));
  EXPECT_TRUE(lg::should_log(a, two_nodes(1)));
  EXPECT_FALSE(lg::should_log(args_with(LogLevel::kDebug, LogLevel::kError, false), two_nodes(1)));
  EXPECT_EQ(lg::process_log_level(a, one_node(0)), spdlog::level::debug);
  EXPECT_EQ(lg::process_log_level(a, one_node(1)), spdlog::level::err);
  EXPECT_EQ(lg::process_log_level(args_with(LogLevel::kCritical, LogLevel::kDebug), one_node(1)),
            spdlog::level::debug);
  EXPECT_EQ(lg::process_log_level(args_with(LogLevel::kCritical, LogLevel::kDebug), one_node(0)),
            spdlog::level::critical);
  // HF's "detail" (debug) has no LogLevel: it is refused when parsed, as validate() refused it
  // before the levels were an enum.
  EXPECT_THROW(parse_choice<LogLevel>("detail", "log_level_replica"), NotSupportedYet);
}

TEST(Logging, SetupRegistersTheLogger) {
  lg::setup(args_with(LogLevel::kInfo, LogLevel::kWarning), one_node(0));
  EXPECT_EQ(spdlog::get("ctrainer"), lg::logger());
}

TEST(Logging, UnknownLevelIsAnArgumentError) {
  try {
    lg::process_log_level(
        args_with(parse_choice<LogLevel>("verbose", "log_level"), LogLevel::kWarning), one_node(0));
    FAIL() << "expected ArgumentError";
  } catch (const ArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("--log_level"), std::string::npos) << e.what();
  }
  try {
    lg::setup(args_with(LogLevel::kInfo, parse_choice<LogLevel>("WARN", "log_level_replica")),
              one_node(0));
    FAIL() << "expected ArgumentError";
  } catch (const ArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("--log_level_replica"), std::string::npos) << e.what();
  }
  // A level cast from an integer fails in the conversion, naming the flag, on every rank.
  try {
    lg::process_log_level(args_with(LogLevel::kInfo, static_cast<LogLevel>(42)), one_node(0));
    FAIL() << "expected ArgumentError";
  } catch (const ArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("--log_level_replica must be one of"), std::string::npos)
        << e.what();
  }
}

}  // namespace logging_test
}  // namespace ctrainer
