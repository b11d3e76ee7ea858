# The layers of the library, one static library each, lowest first (docs/architecture.md):
#
#   ctrainer_core          core/          basics: errors, torch compat, logger, Batch, JSON, files
#   ctrainer_integrations  integrations/  file formats and outside tools            (core)
#   ctrainer_models        models/        modules, configs, registries, tokenizers  (core, integrations)
#   ctrainer_distributed   distributed/   process groups, strategies, their state       (core, integrations)
#   ctrainer_trainer       trainer/       the Trainer and everything it runs        (all of the above)
#   ctrainer               (interface)    what programs link: ctrainer_trainer and everything below
#
# The build enforces the direction twice:
# - Compiling: a layer sees only its own headers and those of the layers it links. Its include
#   folder, build/include/layers/<layer>/ctrainer/<folder>/, mirrors the source folder with one
#   link per header (real folders, not a link to the folder, so that `..` inside an include
#   cannot climb back into the source tree): <ctrainer/trainer/trainer.h> written in models/ is
#   "No such file or directory".
# - Linking: ctrainer_<layer>_link_check, a shared object made of every object of the layer
#   (--whole-archive) and the layers below, linked with --no-undefined: a call into a layer
#   above (reached through a relative "../../trainer/x.h" include, or a declaration written by
#   hand) is an undefined reference. Off in sanitizer builds (their runtime is not linked into
#   shared objects): CTRAINER_LAYER_LINK_CHECK.
# Programs above the layers (examples, benchmarks, tests, fuzz) include the whole tree through
# CTRAINER_BUILD_INCLUDE_DIR. scripts/check_layers.py checks the same rule on the sources.
option(CTRAINER_LAYER_LINK_CHECK "Link each layer alone with --no-undefined (upward calls fail)" ON)
# Unity batches: each layer compiles its torch-using sources CTRAINER_UNITY_BATCH at a time, as one
# translation unit. Loading the precompiled header costs about 5 s of every such file's ~12 s, and
# the torch inline code each file instantiates is compiled once per batch instead of once per
# file. A file therefore compiles together with its neighbours: names local to a .cpp (anonymous
# namespaces, statics) must not repeat within a layer's folder, which the build reports as a
# redefinition. Off (-DCTRAINER_UNITY_BUILD=OFF) compiles file by file, as an editor's checks do.
option(CTRAINER_UNITY_BUILD "Compile each layer's torch sources in unity batches" ON)
set(CTRAINER_UNITY_BATCH 8 CACHE STRING "Sources per unity batch (CTRAINER_UNITY_BUILD)")

set(CTRAINER_LAYER_INCLUDE_ROOT "${PROJECT_BINARY_DIR}/include/layers")

# The compile definitions Boost::program_options adds (linked by the trainer layer): every target
# that reuses the precompiled header must compile with the same macros as the one that made it.
get_target_property(CTRAINER_BOOST_DEFINITIONS Boost::program_options INTERFACE_COMPILE_DEFINITIONS)
if(NOT CTRAINER_BOOST_DEFINITIONS)
  set(CTRAINER_BOOST_DEFINITIONS "")
endif()

# The PCH is only reused when every target compiles with identical code-generation flags, so the
# libraries and all executables use the same explicit -fPIC (-Winvalid-pch reports a mismatch).
set(CTRAINER_PCH_FLAGS -fPIC -Winvalid-pch)

# Compiles `target`'s sources in unity batches (CTRAINER_UNITY_BUILD); sources marked
# SKIP_UNITY_BUILD_INCLUSION (those without torch) stay on their own.
function(ctrainer_unity_build target)
  if(CTRAINER_UNITY_BUILD)
    set_target_properties(${target} PROPERTIES UNITY_BUILD ON
                          UNITY_BUILD_BATCH_SIZE ${CTRAINER_UNITY_BATCH})
  endif()
endfunction()

# Mirrors source folder `folder` into `include_dir`/ctrainer/`folder`/ as one link per header.
# Headers added later re-run the configure step (CONFIGURE_DEPENDS) and get their link then.
function(ctrainer_mirror_headers folder include_dir)
  file(GLOB_RECURSE _headers CONFIGURE_DEPENDS RELATIVE "${PROJECT_SOURCE_DIR}/${folder}"
       "${PROJECT_SOURCE_DIR}/${folder}/*.h")
  set(_mirror "${include_dir}/ctrainer/${folder}")
  file(REMOVE_RECURSE "${_mirror}")  # drops links to headers that were moved or deleted
  foreach(_header ${_headers})
    get_filename_component(_parent "${_mirror}/${_header}" DIRECTORY)
    file(MAKE_DIRECTORY "${_parent}")
    file(CREATE_LINK "${PROJECT_SOURCE_DIR}/${folder}/${_header}" "${_mirror}/${_header}" SYMBOLIC)
  endforeach()
endfunction()

# Whether `file` includes a torch header (torch/, ATen/, c10/), directly or through the
# project's headers; the answer is cached per file for the configure run. Project includes are
# found as <ctrainer/folder/x.h> (the source tree's folder/x.h) or relative to the including file;
# a cycle (headers under #pragma once) counts as torch-free while it is being scanned.
function(ctrainer_includes_torch file out_var)
  string(MAKE_C_IDENTIFIER "${file}" _key)
  get_property(_known GLOBAL PROPERTY "CTRAINER_TORCH_SCAN_${_key}" SET)
  if(_known)
    get_property(_answer GLOBAL PROPERTY "CTRAINER_TORCH_SCAN_${_key}")
    set(${out_var} ${_answer} PARENT_SCOPE)
    return()
  endif()
  set_property(GLOBAL PROPERTY "CTRAINER_TORCH_SCAN_${_key}" FALSE)
  file(STRINGS "${file}" _includes REGEX "^[ \t]*#[ \t]*include[ \t]*[<\"]")
  get_filename_component(_dir "${file}" DIRECTORY)
  set(_answer FALSE)
  foreach(_line IN LISTS _includes)
    string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*[<\"]([^>\"]+)[>\"].*$" "\\1" _name "${_line}")
    if(_name MATCHES "^(torch|ATen|c10)/")
      set(_answer TRUE)
      break()
    endif()
    set(_header "")
    if(_name MATCHES "^ctrainer/(.+)$" AND EXISTS "${PROJECT_SOURCE_DIR}/${CMAKE_MATCH_1}")
      set(_header "${PROJECT_SOURCE_DIR}/${CMAKE_MATCH_1}")
    elseif(EXISTS "${_dir}/${_name}" AND NOT IS_DIRECTORY "${_dir}/${_name}")
      get_filename_component(_header "${_dir}/${_name}" ABSOLUTE)
    endif()
    if(_header)
      ctrainer_includes_torch("${_header}" _nested)
      if(_nested)
        set(_answer TRUE)
        break()
      endif()
    endif()
  endforeach()
  set_property(GLOBAL PROPERTY "CTRAINER_TORCH_SCAN_${_key}" ${_answer})
  set(${out_var} ${_answer} PARENT_SCOPE)
endfunction()

# Sources that include no torch header compile without the precompiled header: loading its
# ~750 MB costs about 6 s a file, several times what they take to parse their own headers
# (about 80 files: the tokenizers, the argument parser, the file formats). A file that later
# reaches torch through a header still compiles, only slower, until the next configure rescans.
function(ctrainer_skip_pch_without_torch)
  foreach(_source ${ARGN})
    ctrainer_includes_torch("${_source}" _uses_torch)
    if(NOT _uses_torch)
      # Kept out of the unity batches too: a batch is compiled with the precompiled header.
      set_source_files_properties("${_source}" PROPERTIES SKIP_PRECOMPILE_HEADERS ON
                                  SKIP_UNITY_BUILD_INCLUSION ON)
    endif()
  endforeach()
endfunction()

# ctrainer_add_layer(NAME [DEPENDS LAYER...]): the static library ctrainer_NAME of every .cpp
# under the folder NAME/ (EXCLUDE_REGEX drops some), seeing the headers of NAME and DEPENDS.
# Called from the folder's own CMakeLists.txt, so source properties set there apply as usual.
function(ctrainer_add_layer name)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "" "EXCLUDE_REGEX" "DEPENDS")
  set(target ctrainer_${name})
  file(GLOB_RECURSE _sources CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/${name}/*.cpp")
  if(ARG_EXCLUDE_REGEX)
    list(FILTER _sources EXCLUDE REGEX "${ARG_EXCLUDE_REGEX}")
  endif()
  add_library(${target} STATIC ${_sources})
  set(_include_dir "${CTRAINER_LAYER_INCLUDE_ROOT}/${name}")
  ctrainer_mirror_headers(${name} "${_include_dir}")
  target_include_directories(${target} PUBLIC
    $<BUILD_INTERFACE:${_include_dir}> $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  foreach(_layer ${ARG_DEPENDS})
    target_link_libraries(${target} PUBLIC ctrainer_${_layer})
  endforeach()
  target_compile_options(${target} PRIVATE ${CTRAINER_PCH_FLAGS})
  target_compile_definitions(${target} PRIVATE ${CTRAINER_BOOST_DEFINITIONS})
  if(NOT name STREQUAL "core")
    target_precompile_headers(${target} REUSE_FROM ctrainer_core)
  endif()
  ctrainer_skip_pch_without_torch(${_sources})
  ctrainer_unity_build(${target})
  # The layer libraries, lowest first (install rules, fuzz instrumentation).
  set_property(GLOBAL APPEND PROPERTY CTRAINER_LAYER_TARGETS ${target})

  if(CTRAINER_LAYER_LINK_CHECK AND NOT CTRAINER_FUZZ)
    # A source file of its own keeps CMake happy; the objects come from --whole-archive.
    set(_stub "${PROJECT_BINARY_DIR}/layer_link_check/${name}.cpp")
    file(WRITE "${_stub}" "// ${target}_link_check: every object of ${target}, nothing above it.\n")
    add_library(${target}_link_check SHARED "${_stub}")
    # The layer's archive whole, then the layer again for what it links (torch, the layers below).
    target_link_libraries(${target}_link_check PRIVATE
      -Wl,--whole-archive $<TARGET_FILE:${target}> -Wl,--no-whole-archive ${target})
    target_link_options(${target}_link_check PRIVATE "LINKER:--no-undefined")
    set_target_properties(${target}_link_check PROPERTIES
      LIBRARY_OUTPUT_DIRECTORY "${PROJECT_BINARY_DIR}/layer_link_check")
  endif()
endfunction()

# Test programs (tests/ and the fuzz harnesses) compile at -Og: a test file's time goes into
# optimising gtest's and torch's inline code, and -Og compiles it in about 60% of -O3's time
# (tests/unit/training_args_parsing_test.cpp: 29 s -> 17 s). What they run stays fast: the
# library they link and libtorch are -O3. They reuse a precompiled header of their own, made
# with the same flags (one more 0.7 GB .gch, built once).
set(CTRAINER_TEST_OPT_FLAGS -Og)
function(ctrainer_test_pch_target)
  if(TARGET ctrainer_test_pch)
    return()
  endif()
  set(_stub "${PROJECT_BINARY_DIR}/test_pch/test_pch.cpp")
  file(CONFIGURE OUTPUT "${_stub}" CONTENT "// Makes the test programs' precompiled header.\n")
  add_library(ctrainer_test_pch STATIC "${_stub}")
  target_link_libraries(ctrainer_test_pch PUBLIC ctrainer::ctrainer)
  target_precompile_headers(ctrainer_test_pch PRIVATE "${PROJECT_SOURCE_DIR}/cmake/ctrainer_pch.h")
  target_compile_options(ctrainer_test_pch PRIVATE ${CTRAINER_PCH_FLAGS} ${CTRAINER_TEST_OPT_FLAGS})
  target_compile_definitions(ctrainer_test_pch PRIVATE ${CTRAINER_BOOST_DEFINITIONS})
endfunction()

# Programs and libraries above the layers: link everything and reuse the precompiled header.
# In a folder that sets CTRAINER_TEST_PROGRAMS (tests/, fuzz/), the test programs' flags and PCH.
function(ctrainer_link_and_reuse_pch name)
  target_link_libraries(${name} PUBLIC ctrainer::ctrainer)
  target_include_directories(${name} PRIVATE "${CTRAINER_BUILD_INCLUDE_DIR}")
  if(CTRAINER_TEST_PROGRAMS)
    ctrainer_test_pch_target()
    target_precompile_headers(${name} REUSE_FROM ctrainer_test_pch)
    target_compile_options(${name} PRIVATE ${CTRAINER_PCH_FLAGS} ${CTRAINER_TEST_OPT_FLAGS})
  else()
    target_precompile_headers(${name} REUSE_FROM ctrainer_core)
    target_compile_options(${name} PRIVATE ${CTRAINER_PCH_FLAGS})
  endif()
  target_compile_definitions(${name} PRIVATE ${CTRAINER_BOOST_DEFINITIONS})
endfunction()

function(ctrainer_add_executable name)
  add_executable(${name} ${ARGN})
  ctrainer_link_and_reuse_pch(${name})
endfunction()

function(ctrainer_add_library name)
  add_library(${name} STATIC ${ARGN})
  ctrainer_link_and_reuse_pch(${name})
endfunction()
