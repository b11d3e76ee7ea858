#pragma once
/// \file The library logger: one spdlog logger named "ctrainer" whose lines carry the process's
/// rank, and the verbosity it has until the Trainer configures it (HF: transformers' verbosity).
/// Which level each rank logs at is the Trainer's business (trainer/runtime/logging.h).
#include <cstdint>
#include <memory>

#include <spdlog/common.h>
#include <spdlog/logger.h>

namespace ctrainer::logging {

/// The library's default verbosity, used when a level is "passive" (HF: transformers'
/// verbosity, default warning). Also applied to the library logger while setup() has not been
/// called.
void set_verbosity(spdlog::level::level_enum level);
spdlog::level::level_enum get_verbosity();

/// (Re)creates the "ctrainer" logger writing to stderr (or to `sink` when given, e.g. for tests)
/// at `level`, with every line tagged by `rank`, e.g.
/// "[2026-11-21 10:00:00.123] [rank 1] [warning] message". The logger is also registered in
/// spdlog's registry as "ctrainer" (replacing any previous one). Thread-safe.
void configure(int64_t rank, spdlog::level::level_enum level, spdlog::sink_ptr sink = nullptr);

/// The library logger (created on first use at get_verbosity() as rank 0, writing to stderr, if
/// setup() was never called). Thread-safe; keep the returned pointer or call again, both work.
std::shared_ptr<spdlog::logger> logger();

}  // namespace ctrainer::logging
