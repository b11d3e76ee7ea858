# Finds libtorch (Debian's libtorch-dev here; the torch wheel's TorchConfig on the GPU machine,
# found through CMAKE_PREFIX_PATH=$(python -c 'import torch.utils; print(torch.utils.cmake_prefix_path)'))
# and decides whether CUDA code paths are built.
find_package(Torch REQUIRED)
message(STATUS "ctrainer: libtorch ${Torch_VERSION} (${TORCH_INSTALL_PREFIX})")

set(CTRAINER_CUDA_ENABLED OFF)
if(CTRAINER_WITH_CUDA STREQUAL "AUTO")
  if(TARGET torch_cuda OR TORCH_CUDA_LIBRARIES)
    set(CTRAINER_CUDA_ENABLED ON)
  endif()
elseif(CTRAINER_WITH_CUDA)
  if(NOT (TARGET torch_cuda OR TORCH_CUDA_LIBRARIES))
    message(FATAL_ERROR "CTRAINER_WITH_CUDA=ON but this libtorch has no CUDA (torch_cuda not found). "
                        "Point CMAKE_PREFIX_PATH at a CUDA build of libtorch or use -DCTRAINER_WITH_CUDA=AUTO.")
  endif()
  set(CTRAINER_CUDA_ENABLED ON)
endif()
message(STATUS "ctrainer: CUDA code paths ${CTRAINER_CUDA_ENABLED}")
