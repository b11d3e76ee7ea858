# Finds libtorch and decides whether CUDA code paths are built.
#
# The supported libtorch is the one inside the pinned torch wheel (scripts/requirements.txt),
# which scripts/install-deps.sh installs into a virtual environment outside the clone:
#   cmake -DCTRAINER_PYTHON=$(scripts/install-deps.sh --print-venv)/bin/python ...
# takes libtorch from that environment and from nowhere else. Without CTRAINER_PYTHON the usual
# find_package(Torch) search applies (Torch_DIR or CMAKE_PREFIX_PATH, e.g. an unpacked libtorch
# archive). Either way a libtorch older than CTRAINER_TORCH_MIN_VERSION is refused.
#
# Sets: CTRAINER_CUDA_ENABLED, CTRAINER_TORCH_LIBRARY_DIR (torch/lib of the wheel),
#       CTRAINER_TORCH_RUNTIME_DIRS (folders our binaries find libtorch and its CUDA libraries in),
#       CTRAINER_TORCH_CPU_LIBRARIES (what the library and programs link: libtorch_cpu, c10, and
#       c10_cuda in a CUDA build; never libtorch_cuda, which only the CUDA module links).

# The oldest torch ctrainer is built and tested against (2.15 on the dev machines and CI, 2.11 on
# the GPU machine); C++ APIs we use changed between 2.x releases (e.g. autograd Node handles
# became intrusive_ptr in 2.12+), so older releases are refused rather than half supported.
set(CTRAINER_TORCH_MIN_VERSION 2.11)

set(CTRAINER_PYTHON "" CACHE FILEPATH
  "Python of the environment holding the pinned torch wheel (scripts/install-deps.sh --print-venv)/bin/python; libtorch is taken from it")

set(_ctrainer_fix "Run scripts/install-deps.sh (or `make`) and configure with -DCTRAINER_PYTHON=$(scripts/install-deps.sh --print-venv)/bin/python")

if(CTRAINER_PYTHON)
  # Where the wheel is, without importing torch (that takes seconds and loads CUDA libraries).
  execute_process(
    COMMAND "${CTRAINER_PYTHON}" -c
      "import importlib.util as u; s = u.find_spec('torch'); print(s.submodule_search_locations[0] if s else '')"
    OUTPUT_VARIABLE _torch_package OUTPUT_STRIP_TRAILING_WHITESPACE
    ERROR_VARIABLE _torch_error RESULT_VARIABLE _torch_rc)
  if(NOT _torch_rc EQUAL 0 OR _torch_package STREQUAL "" OR NOT EXISTS "${_torch_package}/share/cmake/Torch/TorchConfig.cmake")
    message(FATAL_ERROR "CTRAINER_PYTHON=${CTRAINER_PYTHON} has no torch wheel with a CMake config "
                        "(${_torch_error}${_torch_package}). ${_ctrainer_fix}.")
  endif()
  # FORCE: a Torch_DIR cached from an earlier configure must not win over the pinned wheel.
  set(Torch_DIR "${_torch_package}/share/cmake/Torch" CACHE PATH "libtorch's CMake config" FORCE)
endif()

# The wheel is a CUDA build, and its CMake config always looks for the CUDA toolkit (it ends in
# a FATAL_ERROR without one). Say what is missing before it does.
set(_torch_root_guess "")
if(Torch_DIR)
  get_filename_component(_torch_root_guess "${Torch_DIR}/../../.." ABSOLUTE)
endif()
if(_torch_root_guess AND EXISTS "${_torch_root_guess}/lib/libtorch_cuda.so")
  find_program(CTRAINER_NVCC nvcc HINTS ENV CUDA_HOME ENV CUDA_PATH PATHS /usr/local/cuda PATH_SUFFIXES bin)
  if(NOT CTRAINER_NVCC AND NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX})
    message(FATAL_ERROR "libtorch at ${_torch_root_guess} is a CUDA build, and its CMake config needs the "
                        "CUDA toolkit (nvcc, headers, cudart) even to build CPU code: install a CUDA "
                        "13 toolkit (nvcc on PATH, or CUDA_HOME/CUDACXX set), then configure again.")
  endif()
  # Torch's config would otherwise compile and run a program to find the GPUs' architectures
  # (it fails on GPU-less machines). ctrainer has no CUDA kernels of its own, so the list only
  # matters to users who add .cu files; this is the wheel's own list.
  if(NOT DEFINED TORCH_CUDA_ARCH_LIST AND NOT DEFINED ENV{TORCH_CUDA_ARCH_LIST})
    set(TORCH_CUDA_ARCH_LIST "7.5;8.0;8.6;9.0;10.0;12.0")
  endif()
endif()

find_package(Torch QUIET)
if(NOT Torch_FOUND)
  message(FATAL_ERROR "libtorch not found. ${_ctrainer_fix}, or point Torch_DIR at an unpacked "
                      "libtorch >= ${CTRAINER_TORCH_MIN_VERSION}.")
endif()
if(NOT Torch_VERSION OR Torch_VERSION VERSION_LESS CTRAINER_TORCH_MIN_VERSION)
  message(FATAL_ERROR "libtorch ${Torch_VERSION} (${Torch_DIR}) is too old: ctrainer needs torch >= "
                      "${CTRAINER_TORCH_MIN_VERSION}. ${_ctrainer_fix}.")
endif()
if(CTRAINER_PYTHON AND NOT Torch_DIR STREQUAL "${_torch_package}/share/cmake/Torch")
  message(FATAL_ERROR "CMake found libtorch at ${Torch_DIR}, not the wheel of CTRAINER_PYTHON "
                      "(${_torch_package}). Remove the other Torch_DIR from the cache (delete the build folder).")
endif()
set(CTRAINER_TORCH_LIBRARY_DIR "${TORCH_INSTALL_PREFIX}/lib")
message(STATUS "ctrainer: libtorch ${Torch_VERSION} (${TORCH_INSTALL_PREFIX})")

set(CTRAINER_CUDA_ENABLED OFF)
if(CTRAINER_WITH_CUDA STREQUAL "AUTO")
  if(TARGET torch_cuda)
    set(CTRAINER_CUDA_ENABLED ON)
  endif()
elseif(CTRAINER_WITH_CUDA)
  if(NOT TARGET torch_cuda)
    message(FATAL_ERROR "CTRAINER_WITH_CUDA=ON but this libtorch has no CUDA (torch_cuda not found). "
                        "Use the pinned CUDA wheel (scripts/install-deps.sh) or -DCTRAINER_WITH_CUDA=AUTO.")
  endif()
  set(CTRAINER_CUDA_ENABLED ON)
endif()
message(STATUS "ctrainer: CUDA code paths ${CTRAINER_CUDA_ENABLED}")

# libtorch_cuda and the CUDA libraries it loads (cuBLASLt, cuSPARSELt, NVRTC, NCCL, ...) take
# ~370 MB of resident memory before main() even on a CPU run, so the library and the programs
# link libtorch_cpu only, with --no-as-needed as TorchConfig does (its operators register from
# static initialisers), and c10_cuda (cudart, no measurable cost: the caching allocator's stats,
# set_device). libctrainer_cuda.so, the module dlopen()ed when a GPU can be used, links all of
# libtorch (distributed/cuda_support.h).
set(CTRAINER_TORCH_CPU_LIBRARIES torch_cpu_library c10)
if(CTRAINER_CUDA_ENABLED)
  list(APPEND CTRAINER_TORCH_CPU_LIBRARIES c10_cuda)
endif()

# Where our binaries find libtorch at run time: torch/lib of the wheel. Its CUDA libraries
# (cudart, cuBLAS, cuDNN, NCCL, ...) are found by libtorch_cuda's own RPATH
# ($ORIGIN/../../nvidia/...), so they come from the wheel too, never from the system toolkit.
set(CTRAINER_TORCH_RUNTIME_DIRS "${CTRAINER_TORCH_LIBRARY_DIR}")
if(CTRAINER_CUDA_ENABLED OR TARGET torch_cuda)
  get_filename_component(_site_packages "${TORCH_INSTALL_PREFIX}/.." ABSOLUTE)
  file(GLOB _nvidia_lib_dirs LIST_DIRECTORIES true "${_site_packages}/nvidia/*/lib")
  list(APPEND CTRAINER_TORCH_RUNTIME_DIRS ${_nvidia_lib_dirs})
endif()

# The wheel ships fmt 12 in torch/include, which would shadow Debian's fmt 9 that Debian's spdlog
# is built against (spdlog's headers then fail to compile). A build-tree folder holding only a
# link to Debian's fmt, added with -I (searched before every -isystem folder such as torch's),
# gives every translation unit one fmt: 9. Both can live in one process because fmt versions its
# inline namespace (fmt::v9 and fmt::v12 symbols never collide).
function(ctrainer_fmt_include_shim out_var)
  set(${out_var} "" PARENT_SCOPE)
  if(NOT EXISTS "${TORCH_INSTALL_PREFIX}/include/fmt")
    return()
  endif()
  get_target_property(_fmt_dirs fmt::fmt INTERFACE_INCLUDE_DIRECTORIES)
  foreach(dir ${_fmt_dirs})
    if(EXISTS "${dir}/fmt/core.h")
      set(_shim "${CMAKE_BINARY_DIR}/fmt-shim")
      file(MAKE_DIRECTORY "${_shim}")
      file(CREATE_LINK "${dir}/fmt" "${_shim}/fmt" SYMBOLIC)
      set(${out_var} "${_shim}" PARENT_SCOPE)
      return()
    endif()
  endforeach()
  message(FATAL_ERROR "libtorch ships its own fmt, and Debian's fmt headers (libfmt-dev) were not found "
                      "in '${_fmt_dirs}': install libfmt-dev (scripts/install-deps.sh).")
endfunction()
