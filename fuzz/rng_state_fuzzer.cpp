// rng_state.json on arbitrary bytes, as a resume reads it (CheckpointManager::restore_rng):
// read_json_file (std::runtime_error), rng_state_from_json and restore_rng_state
// (ArgumentError), then one random draw from the restored generator.
// Differential check: a state that reads writes back (rng_state_to_json) and reads again.
#include <cstdio>
#include <cstdlib>

#include <ATen/ATen.h>

#include <ctrainer/core/errors.h>
#include <ctrainer/core/json_file.h>
#include <ctrainer/trainer/checkpoint/rng_state.h>

#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ctrainer::fuzz::quiet_logging();
  const auto path =
      ctrainer::fuzz::scratch_file("rng_state.json", ctrainer::fuzz::bytes_of(data, size));
  ctrainer::RngState state;
  try {
    state = ctrainer::rng_state_from_json(ctrainer::read_json_file(path, "checkpoint file"));
  } catch (const std::runtime_error&) {  // ArgumentError, or read_json_file's error
    return 0;
  }
  try {
    (void)ctrainer::rng_state_from_json(ctrainer::rng_state_to_json(state));
  } catch (const ctrainer::ArgumentError& e) {
    std::fprintf(stderr, "rng_state_fuzzer: rng_state_to_json() output does not read back: %s\n",
                 e.what());
    std::abort();
  }
  try {
    ctrainer::restore_rng_state(state);
  } catch (const ctrainer::ArgumentError&) {
    return 0;
  }
  (void)at::rand({4});
  (void)at::randn({3});
  return 0;
}
