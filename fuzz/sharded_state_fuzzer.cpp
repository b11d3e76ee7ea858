// A sharded checkpoint's zero/ folder on arbitrary bytes: up to five parts separated by lines
// "@@": zero/manifest.json, zero/rank_0.json, zero/rank_0.safetensors, zero/rank_1.json,
// zero/rank_1.safetensors (a part not given is not written), read by consolidate_sharded_state
// (ctrainer-consolidate, zero_to_fp32). Bad files throw ArgumentError naming the checkpoint, or
// the file readers' errors naming the file (read_json_file: std::runtime_error;
// load_safetensors: SafetensorsError); both are std::runtime_error.
#include <ctrainer/distributed/sharded_state.h>

#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ctrainer::fuzz::quiet_logging();
  static const char* const kFiles[] = {"manifest.json", "rank_0.json", "rank_0.safetensors",
                                       "rank_1.json", "rank_1.safetensors"};
  const auto parts = ctrainer::fuzz::split_parts(ctrainer::fuzz::bytes_of(data, size), 5);
  const auto checkpoint = ctrainer::fuzz::fresh_scratch_folder("checkpoint-3");
  const auto zero = checkpoint / ctrainer::kShardedStateFolder;
  std::filesystem::create_directories(zero);
  for (size_t i = 0; i < parts.size(); ++i) ctrainer::fuzz::write_file(zero / kFiles[i], parts[i]);
  if (!ctrainer::has_sharded_state(checkpoint)) return 0;
  try {
    const auto weights = ctrainer::consolidate_sharded_state(checkpoint);
    for (const auto& [name, tensor] : weights) (void)tensor.sum();
  } catch (const std::runtime_error&) {
  }
  return 0;
}
