#pragma once
/// \file Gathering tensors whose shapes differ between ranks (evaluation outputs: each rank's
/// predictions have its own row count and, for token-level outputs, its own padded width).
#include <vector>

#include <ATen/ATen.h>

#include <ctrainer/distributed/process_group.h>

namespace ctrainer {

/// Every rank's `tensor`, indexed by rank, each with its own shape. The tensors must agree in
/// dtype and number of dimensions (a DistributedError names the ranks otherwise); an undefined
/// tensor on a rank comes back undefined for that rank. Three collectives: the shapes, then the
/// data padded to the largest shape, then the padding is cut off again.
std::vector<at::Tensor> all_gather_variable(ProcessGroup& group, const at::Tensor& tensor);

}  // namespace ctrainer
