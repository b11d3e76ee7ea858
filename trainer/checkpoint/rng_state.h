#pragma once
/// \file Capture and restore of every random source a rank owns (the global CPU generator and
/// each CUDA device's generator), with a JSON form that stores the raw generator bytes base64-
/// encoded, so resumed runs draw the same dropout masks and noise as uninterrupted ones.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace ctrainer {

/// The format written into rng_state_to_json()["format_version"].
inline constexpr int kRngStateFormatVersion = 1;

/// Every random source a rank owns: the global CPU generator, each CUDA device's generator (only
/// in builds with CTRAINER_WITH_CUDA and when CUDA is available; the vector's size is the device
/// count), plus free-form sampler state (JSON, filled by the caller: seed, epoch, position).
struct RngState {
  /// The CPU generator's state bytes (5056: mt19937 state plus the cached normal samples; the
  /// same layout in torch 2.11-2.15 as in 1.13, see rng_state_test).
  std::vector<uint8_t> cpu;
  /// One entry per CUDA device, in device order (16 bytes each: seed and Philox offset).
  std::vector<std::vector<uint8_t>> cuda;
  nlohmann::json sampler = nlohmann::json::object();
};

/// Snapshots the global CPU generator and, in CUDA builds with CUDA available, every CUDA
/// device's default generator (each read under its generator's mutex). `sampler` is left empty.
RngState capture_rng_state();

/// Sets the generators back to `state`. Validates before changing anything and throws
/// ArgumentError when the CPU state is empty, its size differs from this libtorch's generator
/// state size or libtorch refuses its contents (an mt19937 position out of range), or a CUDA
/// state has the wrong size. When the number of saved CUDA states differs
/// from the CUDA devices available now (0 in a CPU-only build: a GPU checkpoint resumed on a CPU
/// machine), only the CPU generator is restored and a warning is logged. A state without CUDA
/// entries leaves the CUDA generators untouched. `sampler` is not interpreted.
void restore_rng_state(const RngState& state);

/// {"format_version": 1, "cpu": "<base64>", "cuda": ["<base64>", ...], "cuda_device_count": n,
///  "sampler": {...}}.
nlohmann::json rng_state_to_json(const RngState& state);

/// The inverse of rng_state_to_json. Throws ArgumentError naming the key on a missing or
/// ill-typed key, an unsupported format_version, invalid base64, a cuda_device_count that does
/// not match the "cuda" array, or a CPU state whose size differs from this libtorch's.
RngState rng_state_from_json(const nlohmann::json& json);

}  // namespace ctrainer
