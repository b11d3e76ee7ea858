# Runs at install time (install(SCRIPT), see CtrainerInstall.cmake) with:
#   _ctrainer_site       the wheel's site-packages folder
#   _ctrainer_roots      libtorch's libraries, and the libraries it dlopen()s (cuDNN's engines,
#                        NVRTC's builtins), which no ELF dependency names
#   _ctrainer_runtime    where the copies go: <prefix>/<libdir>/ctrainer
# Copies the roots and every library they load from the wheel, keeping the wheel's layout
# (torch/lib, nvidia/<package>/lib) so libtorch_cuda's own RPATH ($ORIGIN/../../nvidia/...) finds
# them there. System libraries (libc, libstdc++, the driver's libcuda) are not copied.
file(GET_RUNTIME_DEPENDENCIES
  LIBRARIES ${_ctrainer_roots}
  RESOLVED_DEPENDENCIES_VAR _resolved
  UNRESOLVED_DEPENDENCIES_VAR _unresolved)
set(_copies ${_ctrainer_roots})
foreach(dep IN LISTS _resolved)
  string(FIND "${dep}" "${_ctrainer_site}/" _at)
  if(_at EQUAL 0)
    list(APPEND _copies "${dep}")
  endif()
endforeach()
list(REMOVE_DUPLICATES _copies)
foreach(lib IN LISTS _copies)
  file(RELATIVE_PATH _relative "${_ctrainer_site}" "${lib}")
  get_filename_component(_folder "${_relative}" DIRECTORY)
  file(INSTALL DESTINATION "${_ctrainer_runtime}/${_folder}" TYPE SHARED_LIBRARY FILES "${lib}")
endforeach()
# libcuda.so.1 belongs to the GPU driver: present on GPU machines, absent (and unneeded until a
# GPU is used) elsewhere. Anything else unresolved would fail at run time.
list(FILTER _unresolved EXCLUDE REGEX "^libcuda\\.so")
if(_unresolved)
  message(WARNING "ctrainer: libraries that libtorch needs and no folder provides: ${_unresolved}")
endif()
