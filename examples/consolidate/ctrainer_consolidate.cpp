// ctrainer-consolidate: the full weights of a sharded checkpoint (--deepspeed ZeRO / --fsdp) as
// one HF model folder, from the ranks' zero/ files alone (DeepSpeed's zero_to_fp32.py):
//   ctrainer-consolidate CHECKPOINT_DIR OUTPUT_DIR
// writes OUTPUT_DIR/model.safetensors (the fp32 masters, every trainable parameter under its
// HF name) and copies config.json when the checkpoint has one. The checkpoint must pass its
// manifest's checks (every file's size and CRC-32). Exit code 0 on success, 2 on bad input
// (named), 1 on any other error.
#include <cstdio>
#include <filesystem>
#include <string>

#include <ctrainer/core/errors.h>
#include <ctrainer/distributed/sharded_state.h>
#include <ctrainer/integrations/safetensors.h>
#include <ctrainer/trainer/checkpoint/checkpoint_dir.h>

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  if (argc != 3 || std::string(argv[1]) == "--help") {
    std::fprintf(stderr, "usage: ctrainer-consolidate CHECKPOINT_DIR OUTPUT_DIR\n");
    return argc == 2 && std::string(argv[1]) == "--help" ? 0 : 2;
  }
  const fs::path checkpoint = argv[1], output = argv[2];
  try {
    std::error_code missing;
    if (!fs::is_directory(checkpoint, missing))
      throw ctrainer::ArgumentError(checkpoint.string() +
                                    ": no such folder; give a checkpoint-N folder written by a "
                                    "--deepspeed / --fsdp run");
    if (!ctrainer::has_sharded_state(checkpoint))
      throw ctrainer::ArgumentError(checkpoint.string() +
                                    " holds no sharded state (zero/manifest.json): give a "
                                    "checkpoint-N folder written by a --deepspeed / --fsdp run");
    // The manifest vouches for every file (size, CRC-32): a checkpoint whose save did not
    // finish, or a damaged file, must not become a model.
    if (const auto problem = ctrainer::verify_checkpoint(checkpoint))
      throw ctrainer::ArgumentError(
          "checkpoint " + checkpoint.string() + " is incomplete or damaged: " + *problem +
          "; consolidate a complete checkpoint (an earlier checkpoint-N)");
    if (fs::exists(output / "model.safetensors"))
      throw ctrainer::ArgumentError((output / "model.safetensors").string() +
                                    " exists; give an empty or new output folder");
    const auto weights = ctrainer::consolidate_sharded_state(checkpoint);
    fs::create_directories(output);
    ctrainer::save_safetensors((output / "model.safetensors").string(), weights,
                               {{"format", "pt"}});
    if (fs::exists(checkpoint / "config.json"))
      fs::copy_file(checkpoint / "config.json", output / "config.json",
                    fs::copy_options::overwrite_existing);
    std::printf("wrote %zu tensors to %s\n", weights.size(),
                (output / "model.safetensors").string().c_str());
    return 0;
  } catch (const ctrainer::ArgumentError& error) {
    std::fprintf(stderr, "error: %s\n", error.what());
    return 2;
  } catch (const ctrainer::SafetensorsError& error) {  // a damaged rank file: bad input too
    std::fprintf(stderr, "error: %s\n", error.what());
    return 2;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "error: %s\n", error.what());
    return 1;
  }
}
