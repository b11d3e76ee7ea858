# Runs as `cmake -P`: installs the build tree, checks that the installed programs load libtorch
# and its CUDA libraries from the prefix (not from the Python environment the build used) and
# train, then builds the consumer project against the installed package and runs it.
# The prefix is kept between runs: re-installing skips the unchanged ~3.6 GB of libraries.
# LD_LIBRARY_PATH is unset for the installed programs: it would override their RUNPATH (some GPU
# images point it at a torch of their own), and a user's machine need not have it.
set(clean_env ${CMAKE_COMMAND} -E env --unset=LD_LIBRARY_PATH)
set(prefix "${WORK_DIR}/prefix")
file(REMOVE_RECURSE "${WORK_DIR}/build" "${WORK_DIR}/run")
execute_process(COMMAND ${CMAKE_COMMAND} --install "${BUILD_DIR}" --prefix "${prefix}"
  RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install failed (${rc}):\n${err}")
endif()

# 1. Every torch / CUDA library the installed program loads resolves inside the prefix.
set(program "${prefix}/bin/ctrainer-train-classifier")
execute_process(COMMAND ${clean_env} ldd "${program}" RESULT_VARIABLE rc OUTPUT_VARIABLE libraries)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "ldd ${program} failed (${rc})")
endif()
string(REPLACE "\n" ";" lines "${libraries}")
set(from_prefix 0)
foreach(line IN LISTS lines)
  if(line MATCHES "not found")
    message(FATAL_ERROR "the installed program misses a library: ${line}")
  endif()
  if(line MATCHES "(libtorch|libc10|libcudart|libcublas|libcudnn|libnccl)[^ ]* => ([^ ]+)")
    set(path "${CMAKE_MATCH_2}")
    string(FIND "${path}" "${prefix}/" at)
    if(NOT at EQUAL 0)
      message(FATAL_ERROR "the installed program loads ${path} from outside the prefix ${prefix}")
    endif()
    math(EXPR from_prefix "${from_prefix} + 1")
  endif()
endforeach()
if(from_prefix LESS 3)
  message(FATAL_ERROR "expected libtorch's libraries under ${prefix}, ldd says:\n${libraries}")
endif()

# 2. It trains (a few steps of the spirals MLP) with what the prefix holds.
file(MAKE_DIRECTORY "${WORK_DIR}/run")
execute_process(COMMAND ${clean_env} "${program}" --output_dir "${WORK_DIR}/run/out" --do_train --max_steps 5
    --logging_steps 5 --save_strategy no --report_to none --disable_tqdm true
  WORKING_DIRECTORY "${WORK_DIR}/run" RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT EXISTS "${WORK_DIR}/run/out/train_results.json")
  message(FATAL_ERROR "the installed ctrainer-train-classifier failed (${rc}):\n${out}\n${err}")
endif()
message("installed program: ${from_prefix} torch/CUDA libraries from the prefix, trained 5 steps")

# 3. An out-of-tree project builds against the installed package and trains.
execute_process(COMMAND ${CMAKE_COMMAND} -S "${SOURCE_DIR}" -B "${WORK_DIR}/build" -G "${GENERATOR}"
  -DCMAKE_BUILD_TYPE=Release "-DCMAKE_PREFIX_PATH=${prefix}"
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "configuring the consumer failed:\n${out}\n${err}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build "${WORK_DIR}/build"
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "building the consumer failed:\n${out}\n${err}")
endif()
execute_process(COMMAND ${clean_env} "${WORK_DIR}/build/consumer" RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the consumer failed (${rc}):\n${err}")
endif()
