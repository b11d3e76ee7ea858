// A checkpoint folder's manifest.json on arbitrary bytes: verify_checkpoint (run before every
// resume, by latest_complete_checkpoint and by the best-model load) must never throw, whatever
// the manifest says; it returns a problem string naming the file (trainer/checkpoint/
// checkpoint_dir.h). Names in the manifest must not lead out of the folder.
// The folder holds a few fixed files the seeds list with their real size and CRC-32:
//   model.safetensors "0123456789" (10 bytes, CRC-32 0xa684c7c6), trainer_state.json "{}\n",
//   zero/rank_0.json "[]", and a link "outside" to a file outside the folder.
#include <ctrainer/trainer/checkpoint/checkpoint_dir.h>

#include "fuzz_support.h"

namespace {

namespace fs = std::filesystem;

struct Folders {
  fs::path output_dir;
  fs::path checkpoint;
};

const Folders& folders() {
  static const Folders f = [] {
    Folders out;
    out.output_dir = ctrainer::fuzz::fresh_scratch_folder("output");
    out.checkpoint = out.output_dir / "checkpoint-7";
    fs::create_directories(out.checkpoint / "zero");
    ctrainer::fuzz::write_file(out.checkpoint / "model.safetensors", "0123456789");
    ctrainer::fuzz::write_file(out.checkpoint / "trainer_state.json", "{}\n");
    ctrainer::fuzz::write_file(out.checkpoint / "zero" / "rank_0.json", "[]");
    ctrainer::fuzz::write_file(out.output_dir / "secret.txt", "not part of the checkpoint");
    fs::create_symlink(out.output_dir / "secret.txt", out.checkpoint / "outside");
    return out;
  }();
  return f;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ctrainer::fuzz::quiet_logging();
  const Folders& f = folders();
  ctrainer::fuzz::write_file(f.checkpoint / ctrainer::kCheckpointManifest,
                             ctrainer::fuzz::bytes_of(data, size));
  // No try: verify_checkpoint reports problems, it never throws.
  const std::optional<std::string> problem = ctrainer::verify_checkpoint(f.checkpoint);
  const auto latest = ctrainer::latest_complete_checkpoint(f.output_dir);
  if (latest.has_value() == problem.has_value()) {
    std::fprintf(stderr,
                 "checkpoint_manifest_fuzzer: latest_complete_checkpoint disagrees with "
                 "verify_checkpoint\n");
    std::abort();
  }
  return 0;
}
