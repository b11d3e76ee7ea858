// scaler.json on arbitrary bytes, as a resume reads it: read_json_file, then
// GradScaler::load_state_dict (std::runtime_error on a malformed state), into a scaler of the
// policy the file names (torch or deepspeed), then a few steps of training with it: scale, one
// clean and one overflowing update (the DeepSpeed policy throws std::runtime_error on an
// overflow at the minimum scale, as DeepSpeed does).
// Differential check: a state that loads writes back (state_dict) and loads again.
#include <cstdio>
#include <cstdlib>

#include <ATen/ATen.h>

#include <ctrainer/core/json_file.h>
#include <ctrainer/trainer/precision/grad_scaler.h>

#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ctrainer::fuzz::quiet_logging();
  const auto path =
      ctrainer::fuzz::scratch_file("scaler.json", ctrainer::fuzz::bytes_of(data, size));
  nlohmann::json state;
  try {
    state = ctrainer::read_json_file(path, "checkpoint file");
  } catch (const std::runtime_error&) {
    return 0;
  }
  const bool deepspeed =
      state.is_object() && state.contains("policy") && state["policy"] == "deepspeed";
  ctrainer::GradScaler scaler(deepspeed ? ctrainer::GradScalerOptions::deepspeed()
                                        : ctrainer::GradScalerOptions{});
  try {
    scaler.load_state_dict(state);
  } catch (const std::runtime_error&) {
    return 0;
  }
  try {
    ctrainer::GradScaler again(deepspeed ? ctrainer::GradScalerOptions::deepspeed()
                                         : ctrainer::GradScalerOptions{});
    again.load_state_dict(scaler.state_dict());
  } catch (const std::runtime_error& e) {
    std::fprintf(stderr, "grad_scaler_fuzzer: state_dict() output does not load back: %s\n",
                 e.what());
    std::abort();
  }
  try {
    (void)scaler.scale(at::ones({}));
    at::Tensor weight = at::ones({3});
    weight.mutable_grad() = at::full({3}, 2.0f);
    const at::Tensor found = scaler.unscale_({weight});
    scaler.update(found);
    (void)scaler.get_scale();
    scaler.update(at::ones({1}));
    (void)scaler.get_scale();
    (void)scaler.state_dict();
  } catch (const std::runtime_error&) {
  }
  return 0;
}
