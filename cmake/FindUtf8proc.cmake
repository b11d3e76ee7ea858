# FindUtf8proc: locates utf8proc (Debian libutf8proc-dev), the Unicode library behind the BERT
# tokenizer's normalisation, and provides the IMPORTED target utf8proc::utf8proc.
#
# Result variables: Utf8proc_FOUND, Utf8proc_INCLUDE_DIR, Utf8proc_LIBRARY, Utf8proc_VERSION.
find_path(Utf8proc_INCLUDE_DIR NAMES utf8proc.h)
find_library(Utf8proc_LIBRARY NAMES utf8proc libutf8proc)

if(Utf8proc_INCLUDE_DIR AND EXISTS "${Utf8proc_INCLUDE_DIR}/utf8proc.h")
  file(STRINGS "${Utf8proc_INCLUDE_DIR}/utf8proc.h" _utf8proc_version_lines
       REGEX "^#define UTF8PROC_VERSION_(MAJOR|MINOR|PATCH) [0-9]+")
  foreach(_part MAJOR MINOR PATCH)
    string(REGEX REPLACE ".*#define UTF8PROC_VERSION_${_part} ([0-9]+).*" "\\1" _utf8proc_${_part}
           "${_utf8proc_version_lines}")
  endforeach()
  set(Utf8proc_VERSION "${_utf8proc_MAJOR}.${_utf8proc_MINOR}.${_utf8proc_PATCH}")
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(Utf8proc
  REQUIRED_VARS Utf8proc_LIBRARY Utf8proc_INCLUDE_DIR
  VERSION_VAR Utf8proc_VERSION)

if(Utf8proc_FOUND AND NOT TARGET utf8proc::utf8proc)
  add_library(utf8proc::utf8proc UNKNOWN IMPORTED)
  set_target_properties(utf8proc::utf8proc PROPERTIES
    IMPORTED_LOCATION "${Utf8proc_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${Utf8proc_INCLUDE_DIR}")
endif()
mark_as_advanced(Utf8proc_INCLUDE_DIR Utf8proc_LIBRARY)
