#pragma once
/// \file The machine a benchmark ran on, recorded in every result JSON ("environment") so that a
/// number can be read with its context: date, CPU, cores, threads, torch and BLAS.
#include <string>

#include <nlohmann/json.hpp>

namespace ctrainer::bench {

/// {"date_utc" (ISO 8601), "cpu_model" (/proc/cpuinfo), "nproc" (CPUs this process may use),
/// "intra_op_threads" (at::get_num_threads() now), "torch_version", "blas" (libtorch's BLAS_INFO),
/// "load_average_1min"}. Fields that cannot be read are left out rather than guessed.
nlohmann::json collect_environment();

/// The "model name" line of /proc/cpuinfo ("" when there is none, e.g. on some ARM kernels).
std::string cpu_model();

}  // namespace ctrainer::bench
