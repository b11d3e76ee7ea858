#include <ctrainer/trainer/runtime/logging.h>

#include <string>
#include <utility>

namespace ctrainer::logging {

bool should_log(const TrainingArguments& args, const ProcessInfo& process) {
  return args.log_on_each_node ? process.local_rank == 0 : process.rank == 0;
}

spdlog::level::level_enum to_spdlog_level(LogLevel level, const std::string& flag) {
  // HF's trainer_log_levels: transformers.utils.logging.log_levels plus passive=-1.
  switch (level) {
    case LogLevel::kPassive:
      return get_verbosity();
    case LogLevel::kDebug:
      return spdlog::level::debug;
    case LogLevel::kInfo:
      return spdlog::level::info;
    case LogLevel::kWarning:
      return spdlog::level::warn;
    case LogLevel::kError:
      return spdlog::level::err;
    case LogLevel::kCritical:
      return spdlog::level::critical;
  }
  throw ChoiceError("--" + flag + " must be one of " + choices_text<LogLevel>() +
                    " (got the value " + std::to_string(static_cast<int>(level)) + ")");
}

spdlog::level::level_enum process_log_level(const TrainingArguments& args,
                                            const ProcessInfo& process) {
  // Both are converted, as HF looks both up, so a bad replica level fails on every rank alike.
  const auto main_level = to_spdlog_level(args.log_level, "log_level");
  const auto replica_level = to_spdlog_level(args.log_level_replica, "log_level_replica");
  return should_log(args, process) ? main_level : replica_level;
}

void setup(const TrainingArguments& args, const ProcessInfo& process, spdlog::sink_ptr sink) {
  configure(process.rank, process_log_level(args, process), std::move(sink));
}

}  // namespace ctrainer::logging
