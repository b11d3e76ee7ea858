#include <ctrainer/distributed/process_info.h>

#include <cstdlib>
#include <string>

#include <ctrainer/trainer/errors.h>

namespace ctrainer {
namespace {

int64_t read_int_env(const char* name, int64_t fallback) {
  const char* raw = std::getenv(name);
  if (raw == nullptr || *raw == '\0') return fallback;
  try {
    size_t used = 0;
    int64_t value = std::stoll(raw, &used);
    if (used != std::string(raw).size()) throw std::invalid_argument(raw);
    return value;
  } catch (const std::exception&) {
    throw ArgumentError(std::string("environment variable ") + name + "='" + raw +
                        "' is not an integer; unset it or set it to the process's rank/size");
  }
}

}  // namespace

ProcessInfo ProcessInfo::from_environment() {
  ProcessInfo info;
  info.world_size = read_int_env("WORLD_SIZE", 1);
  info.rank = read_int_env("RANK", 0);
  info.local_rank = read_int_env("LOCAL_RANK", info.rank);
  info.local_world_size = read_int_env("LOCAL_WORLD_SIZE", info.world_size);
  if (info.world_size < 1 || info.rank < 0 || info.rank >= info.world_size)
    throw ArgumentError("RANK=" + std::to_string(info.rank) +
                        " / WORLD_SIZE=" + std::to_string(info.world_size) +
                        " is inconsistent: need 0 <= RANK < WORLD_SIZE");
  if (info.local_world_size < 1 || info.local_rank < 0 || info.local_rank >= info.local_world_size)
    throw ArgumentError("LOCAL_RANK=" + std::to_string(info.local_rank) +
                        " / LOCAL_WORLD_SIZE=" + std::to_string(info.local_world_size) +
                        " is inconsistent: need 0 <= LOCAL_RANK < LOCAL_WORLD_SIZE");
  return info;
}

}  // namespace ctrainer
