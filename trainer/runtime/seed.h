#pragma once
/// \file Seeding and determinism (HF's set_seed / enable_full_determinism).
#include <cstdint>

namespace ctrainer {

/// Seeds the global CPU generator and every CUDA generator (initialisation and dropout).
void set_seed(int64_t seed);

/// set_seed plus deterministic algorithms everywhere (an op without a deterministic
/// implementation then raises), cuDNN deterministic and benchmark off, and the cuBLAS workspace
/// setting CUDA needs for deterministic GEMMs.
void enable_full_determinism(int64_t seed);

}  // namespace ctrainer
