#pragma once
/// \file The c10d headers, included only by the distributed/ sources that talk to c10d (they pull
/// in Gloo's declarations, which the rest of the library should not compile).
///
/// ProcessGroupGloo.hpp includes five gloo headers (gloo/context.h, ...) that the torch wheel
/// does not ship; they come from Debian's libgloo-dev as declarations only: the Gloo code that
/// runs is the copy compiled into libtorch_cpu (Debian's libgloo is never linked), and ctrainer
/// only passes gloo objects back to it through shared_ptr, so no gloo layout is compiled here.
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

namespace ctrainer::compat {

/// The common base of ProcessGroupGloo and ProcessGroupNCCL (created by the CUDA module,
/// cuda_support.h).
using CollectiveBackend = c10d::Backend;

}  // namespace ctrainer::compat
