# Install rules and the CMake package config: consumers use find_package(ctrainer) and link
# ctrainer::ctrainer. The installed programs carry their own copy of libtorch and of the CUDA
# libraries it loads (CTRAINER_INSTALL_TORCH_RUNTIME, see CMAKE_INSTALL_RPATH in the top-level
# CMakeLists.txt), so they run without the Python environment the build took libtorch from.
include(CMakePackageConfigHelpers)

get_property(_ctrainer_layers GLOBAL PROPERTY CTRAINER_LAYER_TARGETS)
install(TARGETS ctrainer ${_ctrainer_layers} EXPORT ctrainerTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
foreach(dir core trainer distributed integrations models)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${dir}/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/ctrainer/${dir}
    FILES_MATCHING PATTERN "*.h")
endforeach()
# The launcher (distributed/CMakeLists.txt); the example binaries install themselves.
install(TARGETS ctrainer-run ctrainer-run-elastic RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(EXPORT ctrainerTargets NAMESPACE ctrainer:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ctrainer)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/ctrainerConfig.cmake.in
  ${PROJECT_BINARY_DIR}/ctrainerConfig.cmake INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ctrainer)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/ctrainerConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/ctrainerConfig.cmake ${PROJECT_BINARY_DIR}/ctrainerConfigVersion.cmake
  ${PROJECT_SOURCE_DIR}/cmake/FindUtf8proc.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ctrainer)

if(CTRAINER_INSTALL_TORCH_RUNTIME)
  get_filename_component(_site "${TORCH_INSTALL_PREFIX}/.." ABSOLUTE)
  file(GLOB _roots "${CTRAINER_TORCH_LIBRARY_DIR}/*.so*")
  list(FILTER _roots EXCLUDE REGEX "/libtorch_python\\.so$")  # the Python extension module
  file(GLOB _dlopened "${_site}/nvidia/cudnn/lib/*.so*" "${_site}/nvidia/cu13/lib/libnvrtc-builtins*.so*")
  list(APPEND _roots ${_dlopened})
  install(CODE "
    set(_ctrainer_site \"${_site}\")
    set(_ctrainer_roots \"${_roots}\")
    set(_ctrainer_runtime \"\${CMAKE_INSTALL_PREFIX}/${CTRAINER_INSTALL_RUNTIME_DIR}\")")
  install(SCRIPT "${PROJECT_SOURCE_DIR}/cmake/CtrainerInstallRuntime.cmake")
endif()
