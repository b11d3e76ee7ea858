#pragma once
/// \file The c10d headers, included only by the distributed/ sources that talk to c10d (they pull
/// in Gloo's and NCCL's declarations, which the rest of the library should not compile).
///
/// ProcessGroupGloo.hpp includes five gloo headers (gloo/context.h, ...) that the torch wheel
/// does not ship; they come from Debian's libgloo-dev as declarations only: the Gloo code that
/// runs is the copy compiled into libtorch_cpu (Debian's libgloo is never linked), and ctrainer
/// only passes gloo objects back to it through shared_ptr, so no gloo layout is compiled here.
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#if defined(CTRAINER_WITH_CUDA) && defined(USE_C10D_NCCL)
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#define CTRAINER_HAS_NCCL 1
#endif

namespace ctrainer::compat {

/// The common base of ProcessGroupGloo and ProcessGroupNCCL.
using CollectiveBackend = c10d::Backend;

}  // namespace ctrainer::compat
