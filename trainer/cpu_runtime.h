#pragma once
/// \file CPU runtime set-up: intra-op threads and a check of which BLAS libtorch will use.
#include <cstdint>
#include <string>

namespace ctrainer {

/// Path of the libblas.so.3 mapped into this process ("" if none is mapped).
std::string mapped_blas_library();

/// Warns (once) when libtorch's GEMMs go through Netlib's reference BLAS, which is 10-25x slower
/// than OpenBLAS; the warning says how to switch.
void warn_if_reference_blas();

/// Uses all cores available to this process, shared among the processes of this node, unless
/// OMP_NUM_THREADS was set by the user (libtorch 1.13 here otherwise starts with 1 thread).
void configure_intra_op_threads(int64_t local_world_size);

}  // namespace ctrainer
