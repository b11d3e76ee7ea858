#include <ctrainer/trainer/logging.h>

#include <utility>

namespace ctrainer::logging {

bool should_log(const TrainingArguments& args, const ProcessInfo& process) {
  return args.log_on_each_node ? process.local_rank == 0 : process.rank == 0;
}

spdlog::level::level_enum process_log_level(const TrainingArguments& args,
                                            const ProcessInfo& process) {
  // Both are parsed, as HF looks both up, so a bad replica level fails on every rank alike.
  const auto main_level = parse_log_level(args.log_level, "log_level");
  const auto replica_level = parse_log_level(args.log_level_replica, "log_level_replica");
  return should_log(args, process) ? main_level : replica_level;
}

void setup(const TrainingArguments& args, const ProcessInfo& process, spdlog::sink_ptr sink) {
  configure(process.rank, process_log_level(args, process), std::move(sink));
}

}  // namespace ctrainer::logging
