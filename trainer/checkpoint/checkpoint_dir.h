#pragma once
/// \file Checkpoint folders on disk: atomic creation (temporary folder, fsync, rename), a manifest
/// of every file's size and CRC-32 written last, verification, discovery of the newest complete
/// checkpoint, and Hugging Face's rotation rule (save_total_limit, never the best checkpoint).
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace ctrainer {

/// Name of the manifest inside a checkpoint folder; its presence marks the folder complete.
inline constexpr const char* kCheckpointManifest = "manifest.json";
/// Version of the checkpoint layout (docs/checkpoint-format.md).
inline constexpr int kCheckpointFormatVersion = 1;

/// output_dir/checkpoint-<step>.
std::filesystem::path checkpoint_path(const std::filesystem::path& output_dir, int64_t step);

/// The step of a folder named checkpoint-<step>, or nothing for other names.
std::optional<int64_t> checkpoint_step(const std::filesystem::path& folder);

/// Creates output_dir/checkpoint-<step> atomically: `write_files` fills a temporary sibling
/// folder; then every file gets its size and CRC-32 recorded in manifest.json, all files and the
/// folder are fsynced, and the folder is renamed into place (an existing checkpoint of the same
/// step is replaced only after the new one is complete). A crash at any point leaves either the
/// old state or the complete new folder, never a half-written checkpoint-<step>.
std::filesystem::path write_checkpoint_atomically(
    const std::filesystem::path& output_dir, int64_t step,
    const std::function<void(const std::filesystem::path& folder)>& write_files);

/// What a save killed midway leaves in output_dir, put right before the next save: temporary
/// folders of dead processes (.tmp-checkpoint-<step>-<pid>) are deleted; a checkpoint moved
/// aside to be replaced (.old-checkpoint-<step>-<pid>) goes back to its name when nothing took
/// its place and it is complete, else it is deleted; other ranks' staged files of another step
/// (.rank-files-checkpoint-<step>) are deleted. Folders of live processes other than this one
/// are left alone. Returns one line per folder handled, for the log.
std::vector<std::string> clean_stale_checkpoint_temporaries(const std::filesystem::path& output_dir,
                                                            int64_t current_step);

/// Checks a checkpoint folder against its manifest: every listed file present with the recorded
/// size and CRC-32. Returns nothing when complete, else what is wrong, naming the file.
std::optional<std::string> verify_checkpoint(const std::filesystem::path& folder);

/// checkpoint-<step> folders of output_dir (complete or not), sorted by step.
std::vector<std::filesystem::path> list_checkpoints(const std::filesystem::path& output_dir);

/// The highest-numbered checkpoint that passes verify_checkpoint. Incomplete or corrupted newer
/// ones are passed to `report` (the trainer logs them as warnings) and skipped.
std::optional<std::filesystem::path> latest_complete_checkpoint(
    const std::filesystem::path& output_dir,
    const std::function<void(const std::filesystem::path&, const std::string&)>& report = {});

/// HF's _rotate_checkpoints: keeps the newest `save_total_limit` checkpoints by step, never deletes
/// `best_checkpoint` (it is ranked as the second newest), and keeps 2 when the limit is 1 and the
/// best is not the newest (so the run stays resumable). Returns the deleted folders.
std::vector<std::filesystem::path> rotate_checkpoints(
    const std::filesystem::path& output_dir, int64_t save_total_limit,
    const std::optional<std::filesystem::path>& best_checkpoint);

/// CRC-32 (zlib) of a file, read in large blocks.
uint32_t file_crc32(const std::filesystem::path& file);

}  // namespace ctrainer
