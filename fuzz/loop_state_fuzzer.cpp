// loop_state.json on arbitrary bytes, as CheckpointManager::load reads it: read_json_file
// (std::runtime_error), LoopState::from_json, then require_resumable_by (ArgumentError) and
// resume_position (std::runtime_error) against a run's shape.
#include <ctrainer/core/errors.h>
#include <ctrainer/core/json_file.h>
#include <ctrainer/trainer/checkpoint/loop_state.h>

#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ctrainer::fuzz::quiet_logging();
  const auto path =
      ctrainer::fuzz::scratch_file("loop_state.json", ctrainer::fuzz::bytes_of(data, size));
  try {
    const ctrainer::LoopState loop = ctrainer::LoopState::from_json(
        ctrainer::read_json_file(path, "checkpoint file"), "checkpoint-4");
    (void)loop.to_json();
    // The shape of the seeds' run (ctrainer-train-classifier's defaults), the same on another
    // world size (transformers' position from global_step), and another one.
    for (const ctrainer::LoopShape& now :
         {ctrainer::LoopShape{1, 8, 1, 3000}, ctrainer::LoopShape{3, 8, 1, 3000},
          ctrainer::LoopShape{2, 4, 3, 100}}) {
      try {
        loop.require_resumable_by(now, "checkpoint-4");
      } catch (const ctrainer::ArgumentError&) {
        continue;
      }
      for (const bool ignore_data_skip : {false, true})
        (void)loop.resume_position(now, /*batches_per_epoch=*/375, /*global_step=*/4,
                                   ignore_data_skip, "checkpoint-4");
    }
  } catch (const std::runtime_error&) {
  }
  return 0;
}
