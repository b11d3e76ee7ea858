// trainer_state.json on arbitrary bytes, read as a resume reads it (read_json_file, then
// TrainerState::from_json: std::runtime_error naming the field on bad content), and as
// ctrainer-plot reads it (read_run_history, training_curves_svg: ArgumentError).
// Differential check: a state that reads writes back (to_json) and reads again.
#include <cstdio>
#include <cstdlib>

#include <ctrainer/core/errors.h>
#include <ctrainer/core/json_file.h>
#include <ctrainer/trainer/plot/training_curves.h>
#include <ctrainer/trainer/trainer_state.h>

#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ctrainer::fuzz::quiet_logging();
  const auto path =
      ctrainer::fuzz::scratch_file("trainer_state.json", ctrainer::fuzz::bytes_of(data, size));

  std::optional<ctrainer::TrainerState> state;
  try {
    state = ctrainer::TrainerState::from_json(ctrainer::read_json_file(path, "checkpoint file"));
  } catch (const std::runtime_error&) {
  }
  if (state) {
    ctrainer::TrainerState resumed;
    resumed.continue_from(*state);
    try {
      (void)ctrainer::TrainerState::from_json(state->to_json());
    } catch (const std::runtime_error& e) {
      std::fprintf(stderr, "trainer_state_fuzzer: to_json() output does not read back: %s\n",
                   e.what());
      std::abort();
    }
  }

  try {
    std::vector<ctrainer::RunHistory> runs{ctrainer::read_run_history(path.string())};
    (void)ctrainer::training_curve_keys(runs);
    (void)ctrainer::training_curves_svg(std::move(runs));
  } catch (const ctrainer::ArgumentError&) {
  }
  return 0;
}
