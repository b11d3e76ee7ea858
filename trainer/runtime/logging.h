#pragma once
/// \file Per-rank logging with spdlog, following Hugging Face's log_level / log_level_replica /
/// log_on_each_node semantics (TrainingArguments.should_log and get_process_log_level), on top of
/// the library logger of core/logging.h.
#include <string>

#include <spdlog/common.h>

#include <ctrainer/core/logging.h>
#include <ctrainer/distributed/process_info.h>
#include <ctrainer/trainer/args/training_args.h>

namespace ctrainer::logging {

/// HF TrainingArguments.should_log: log_on_each_node ? local_rank == 0 : rank == 0.
bool should_log(const TrainingArguments& args, const ProcessInfo& process);

/// The spdlog level of `level`; kPassive gives get_verbosity(). Throws ChoiceError naming
/// `--<flag>` for a value outside LogLevel's table (an integer cast to it).
spdlog::level::level_enum to_spdlog_level(LogLevel level, const std::string& flag = "log_level");

/// HF get_process_log_level: (should_log ? log_level : log_level_replica), with kPassive
/// replaced by get_verbosity().
spdlog::level::level_enum process_log_level(const TrainingArguments& args,
                                            const ProcessInfo& process);

/// (Re)creates the library logger (core/logging.h's configure()) for this process: tagged with
/// its rank, at process_log_level().
void setup(const TrainingArguments& args, const ProcessInfo& process,
           spdlog::sink_ptr sink = nullptr);

}  // namespace ctrainer::logging
