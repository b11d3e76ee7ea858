// A sharded checkpoint's model.safetensors.index.json on arbitrary bytes, next to two valid
// shards: load_safetensors_shards (what from_pretrained and a resume read for a sharded model)
// either returns tensors or throws ArgumentError / SafetensorsError naming the file
// (integrations/safetensors_index.h). A shard name that leads out of the folder must be refused
// before anything is read: "outside.safetensors" is a link to a valid file outside the folder.
// The first line of the input is also given to parse_shard_size (the max_shard_size flag).
#include <ctrainer/core/errors.h>
#include <ctrainer/integrations/safetensors.h>
#include <ctrainer/integrations/safetensors_index.h>

#include "fuzz_support.h"

namespace {

namespace fs = std::filesystem;

const fs::path& model_folder() {
  static const fs::path folder = [] {
    const fs::path out = ctrainer::fuzz::fresh_scratch_folder("sharded");
    fs::create_directories(out / "model");
    const at::Tensor a = at::arange(6, at::kFloat).reshape({2, 3});
    const at::Tensor b = at::ones({4}, at::kLong);
    ctrainer::save_safetensors((out / "model" / "model-00001-of-00002.safetensors").string(),
                               {{"a.weight", a}});
    ctrainer::save_safetensors((out / "model" / "model-00002-of-00002.safetensors").string(),
                               {{"b.bias", b}});
    ctrainer::save_safetensors((out / "secret.safetensors").string(), {{"secret", a}});
    fs::create_symlink(out / "secret.safetensors", out / "model" / "outside.safetensors");
    return out / "model";
  }();
  return folder;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ctrainer::fuzz::quiet_logging();
  const std::string_view bytes = ctrainer::fuzz::bytes_of(data, size);
  try {
    const std::int64_t parsed =
        ctrainer::parse_shard_size(std::string(bytes.substr(0, bytes.find('\n'))), "fuzz");
    if (parsed < 1) {
      std::fprintf(stderr, "safetensors_index_fuzzer: parse_shard_size returned %lld\n",
                   static_cast<long long>(parsed));
      std::abort();
    }
  } catch (const ctrainer::ArgumentError&) {
  }
  const fs::path index = model_folder() / ctrainer::kSafetensorsIndexFile;
  ctrainer::fuzz::write_file(index, bytes);
  try {
    const auto tensors = ctrainer::load_safetensors_shards(index);
    if (tensors.count("secret")) {
      std::fprintf(stderr, "safetensors_index_fuzzer: read a shard outside the folder\n");
      std::abort();
    }
  } catch (const ctrainer::ArgumentError&) {
  } catch (const ctrainer::SafetensorsError&) {
  }
  return 0;
}
