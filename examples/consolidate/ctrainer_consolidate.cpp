// ctrainer-consolidate: the full weights of a sharded checkpoint (--deepspeed ZeRO / --fsdp) as
// one HF model folder, from the ranks' zero/ files alone (DeepSpeed's zero_to_fp32.py):
//   ctrainer-consolidate [--max_shard_size SIZE] CHECKPOINT_DIR OUTPUT_DIR
// writes OUTPUT_DIR/model.safetensors (the fp32 masters, every trainable parameter under its
// HF name; past --max_shard_size, default transformers' 50GB, shards in name order and
// model.safetensors.index.json, as save_pretrained writes them) and copies config.json when the
// checkpoint has one. The checkpoint must pass its manifest's checks (every file's size and
// CRC-32). Exit code 0 on success, 2 on bad input (named), 1 on any other error.
#include <cstdio>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <ctrainer/core/errors.h>
#include <ctrainer/distributed/sharded_state.h>
#include <ctrainer/integrations/safetensors.h>
#include <ctrainer/integrations/safetensors_index.h>
#include <ctrainer/trainer/checkpoint/checkpoint_dir.h>

namespace {
constexpr const char* kUsage =
    "usage: ctrainer-consolidate [--max_shard_size SIZE] CHECKPOINT_DIR OUTPUT_DIR\n";
}  // namespace

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() == 1 && args[0] == "--help") {
    std::fprintf(stdout, "%s", kUsage);
    return 0;
  }
  std::string max_shard_size;
  if (args.size() == 4 && args[0] == "--max_shard_size") {
    max_shard_size = args[1];
    args.erase(args.begin(), args.begin() + 2);
  }
  if (args.size() != 2 || args[0].starts_with("-") || args[1].starts_with("-")) {
    std::fprintf(stderr, "%s", kUsage);
    return 2;
  }
  const fs::path checkpoint = args[0], output = args[1];
  try {
    const int64_t max_shard_bytes =
        max_shard_size.empty() ? ctrainer::kDefaultMaxShardBytes
                               : ctrainer::parse_shard_size(max_shard_size, "--max_shard_size");
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
    for (const char* name : {"model.safetensors", ctrainer::kSafetensorsIndexFile})
      if (fs::exists(output / name))
        throw ctrainer::ArgumentError((output / name).string() +
                                      " exists; give an empty or new output folder");
    const auto weights = ctrainer::consolidate_sharded_state(checkpoint);
    std::vector<std::pair<std::string, at::Tensor>> ordered(weights.begin(), weights.end());
    int64_t total_parameters = 0;
    for (const auto& [name, tensor] : ordered) total_parameters += tensor.numel();
    fs::create_directories(output);
    const ctrainer::SafetensorsSplit split = ctrainer::save_safetensors_shards(
        output, ordered, max_shard_bytes, total_parameters, {{"format", "pt"}});
    if (fs::exists(checkpoint / "config.json"))
      fs::copy_file(checkpoint / "config.json", output / "config.json",
                    fs::copy_options::overwrite_existing);
    std::printf("wrote %zu tensors to %s\n", weights.size(),
                (output / (split.sharded() ? ctrainer::kSafetensorsIndexFile : "model.safetensors"))
                    .string()
                    .c_str());
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
