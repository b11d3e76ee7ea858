#pragma once
/// \file CPU runtime set-up: intra-op threads and a check of which BLAS libtorch will use.
#include <cstdint>
#include <string>

namespace ctrainer {

/// The BLAS libtorch was built with: BLAS_INFO of at::show_config() ("mkl" for the PyPI wheel on
/// x86-64, where MKL is linked into libtorch_cpu; "open" for OpenBLAS; "generic" when libtorch
/// calls whatever libblas.so.3 the system provides, as Debian's libtorch does). "" if unknown.
std::string libtorch_blas_info();

/// Path of the libblas.so.3 (or libopenblas) mapped into this process ("" if none is mapped).
std::string mapped_blas_library();

/// Whether GEMMs go through Netlib's reference BLAS: only possible when libtorch was built
/// against a generic BLAS (`blas_info` "generic" or unknown) and the library mapped for it
/// (`mapped_blas`) is not an optimised one (OpenBLAS, MKL, BLIS).
bool uses_reference_blas(const std::string& blas_info, const std::string& mapped_blas);

/// Warns (once) when uses_reference_blas() for this process: the reference BLAS is 10-25x slower
/// than OpenBLAS for training; the warning says how to switch.
void warn_if_reference_blas();

/// Sets the intra-op thread count explicitly: all cores available to this process, shared among
/// the processes of this node, unless OMP_NUM_THREADS was set by the user (libtorch's own default
/// depends on its build and on which BLAS / OpenMP runtime initialises first).
void configure_intra_op_threads(int64_t local_world_size);

/// The glibc malloc settings keep_freed_memory() applies (see there).
struct MallocSettings {
  int mmap_threshold = 32 << 20;  ///< glibc's maximum: buffers up to 32 MiB come from the heap
  int trim_threshold = 1 << 30;   ///< free heap kept before giving memory back to the kernel
  int top_pad = 64 << 20;         ///< extra heap obtained per sbrk
};

/// Makes glibc keep the memory a training step frees for the next step instead of returning it
/// to the kernel and page-faulting it back in (each step allocates and frees the same large
/// activation and gradient buffers; with glibc's defaults a small BERT step spent a sizeable
/// share of its time in page faults). Process-wide and once; the resident memory then stays at
/// its peak (the peak itself does not grow). Skipped when CTRAINER_MALLOC_DEFAULTS=1 or when the
/// user tuned malloc through MALLOC_MMAP_THRESHOLD_ / MALLOC_TRIM_THRESHOLD_ / MALLOC_TOP_PAD_.
/// Returns whether the settings were applied.
bool keep_freed_memory(const MallocSettings& settings = {});

/// Gives the free memory glibc kept (keep_freed_memory) and the buffers the large-buffer cache
/// kept (large_buffer_cache.h) back to the kernel (malloc_trim), at a
/// change of phase whose buffers differ from the last one's: before an evaluation loop, the
/// heap holds the training step's freed buffers, which the evaluation's differently sized ones
/// mostly cannot reuse, so without it the peak grows (BERT-base at eval batch 128: +300 MB).
/// A no-op when neither keep_freed_memory() nor install_large_buffer_cache() applied.
void release_freed_memory();

}  // namespace ctrainer
