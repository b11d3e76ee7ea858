# Fails when a committed generated document differs from what its program prints now.
#   cmake -DPROGRAM=<binary> -DARGS=<arg;...> -DDOC=<committed file> -DFIX=<command> -P this
execute_process(COMMAND "${PROGRAM}" ${ARGS} OUTPUT_VARIABLE generated RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${PROGRAM} ${ARGS} failed (${rc})")
endif()
file(READ "${DOC}" committed)
if(NOT generated STREQUAL committed)
  get_filename_component(name "${DOC}" NAME)
  set(fresh "${CMAKE_CURRENT_BINARY_DIR}/${name}.generated")  # the test's working folder
  file(WRITE "${fresh}" "${generated}")
  message(FATAL_ERROR "${DOC} is stale: it differs from `${PROGRAM} ${ARGS}` (written to "
                      "${fresh}; diff them). Regenerate it with `${FIX}` and commit it.")
endif()
message(STATUS "${DOC} matches ${PROGRAM} ${ARGS}")
