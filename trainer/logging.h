#pragma once
/// \file Per-rank logging with spdlog, following Hugging Face's log_level / log_level_replica /
/// log_on_each_node semantics (TrainingArguments.should_log and get_process_log_level).
#include <memory>
#include <string>

#include <spdlog/common.h>
#include <spdlog/logger.h>

#include <ctrainer/distributed/process_info.h>
#include <ctrainer/trainer/training_args.h>

namespace ctrainer::logging {

/// The library's default verbosity, used when a level is "passive" (HF: transformers'
/// verbosity, default warning). Also applied to the library logger while setup() has not been
/// called.
void set_verbosity(spdlog::level::level_enum level);
spdlog::level::level_enum get_verbosity();

/// Parses a log level name as TrainingArguments spells it: debug | info | warning | error |
/// critical (and HF's "detail", which is debug). "passive" yields get_verbosity(). Throws
/// ArgumentError naming `flag` for anything else.
spdlog::level::level_enum parse_log_level(const std::string& name,
                                          const std::string& flag = "log_level");

/// HF TrainingArguments.should_log: log_on_each_node ? local_rank == 0 : rank == 0.
bool should_log(const TrainingArguments& args, const ProcessInfo& process);

/// HF get_process_log_level: (should_log ? log_level : log_level_replica), with "passive"
/// replaced by get_verbosity().
spdlog::level::level_enum process_log_level(const TrainingArguments& args,
                                            const ProcessInfo& process);

/// (Re)creates the "ctrainer" logger writing to stderr (or to `sink` when given, e.g. for tests)
/// with every line tagged by the rank, e.g.
/// "[2026-11-21 10:00:00.123] [rank 1] [warning] message", at process_log_level(). The logger is
/// also registered in spdlog's registry as "ctrainer" (replacing any previous one). Thread-safe.
void setup(const TrainingArguments& args, const ProcessInfo& process,
           spdlog::sink_ptr sink = nullptr);

/// The library logger (created on first use at get_verbosity() as rank 0, writing to stderr, if
/// setup() was never called). Thread-safe; keep the returned pointer or call again, both work.
std::shared_ptr<spdlog::logger> logger();

}  // namespace ctrainer::logging
