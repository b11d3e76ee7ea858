#include "bench_environment.h"

#include <sched.h>

#include <chrono>
#include <ctime>
#include <fstream>

#include <ATen/Parallel.h>
#include <torch/version.h>

#include <ctrainer/trainer/runtime/cpu_runtime.h>

#include "bench_workers.h"

namespace ctrainer::bench {

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const auto start = line.find_first_not_of(" \t", colon + 1);
    return start == std::string::npos ? "" : line.substr(start);
  }
  return "";
}

nlohmann::json collect_environment() {
  nlohmann::json env = nlohmann::json::object();
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm utc{};
  gmtime_r(&now, &utc);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", &utc);
  env["date_utc"] = date;
  if (const std::string cpu = cpu_model(); !cpu.empty()) env["cpu_model"] = cpu;
  // The CPUs this process may run on (taskset / cgroup cpusets), as nproc prints.
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) env["nproc"] = CPU_COUNT(&set);
  env["intra_op_threads"] = at::get_num_threads();
  env["torch_version"] = std::to_string(TORCH_VERSION_MAJOR) + "." +
                         std::to_string(TORCH_VERSION_MINOR) + "." +
                         std::to_string(TORCH_VERSION_PATCH);
  if (const std::string blas = libtorch_blas_info(); !blas.empty()) env["blas"] = blas;
  if (const double load = load_average(); load >= 0) env["load_average_1min"] = load;
  return env;
}

}  // namespace ctrainer::bench
