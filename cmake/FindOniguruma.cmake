# FindOniguruma: locates Oniguruma (Debian libonig-dev), the regular-expression engine of the
# tokenizer.json pipeline (the one HF's Rust tokenizers use, so GPT-2's lookahead and Llama 3's
# Unicode classes match the same way), and provides the IMPORTED target Oniguruma::onig.
#
# Result variables: Oniguruma_FOUND, Oniguruma_INCLUDE_DIR, Oniguruma_LIBRARY, Oniguruma_VERSION.
find_path(Oniguruma_INCLUDE_DIR NAMES oniguruma.h)
find_library(Oniguruma_LIBRARY NAMES onig)

if(Oniguruma_INCLUDE_DIR AND EXISTS "${Oniguruma_INCLUDE_DIR}/oniguruma.h")
  file(STRINGS "${Oniguruma_INCLUDE_DIR}/oniguruma.h" _onig_version_lines
       REGEX "^#define ONIGURUMA_VERSION_(MAJOR|MINOR|TEENY) +[0-9]+")
  foreach(_part MAJOR MINOR TEENY)
    string(REGEX REPLACE ".*#define ONIGURUMA_VERSION_${_part} +([0-9]+).*" "\\1" _onig_${_part}
           "${_onig_version_lines}")
  endforeach()
  set(Oniguruma_VERSION "${_onig_MAJOR}.${_onig_MINOR}.${_onig_TEENY}")
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(Oniguruma
  REQUIRED_VARS Oniguruma_LIBRARY Oniguruma_INCLUDE_DIR
  VERSION_VAR Oniguruma_VERSION)

if(Oniguruma_FOUND AND NOT TARGET Oniguruma::onig)
  add_library(Oniguruma::onig UNKNOWN IMPORTED)
  set_target_properties(Oniguruma::onig PROPERTIES
    IMPORTED_LOCATION "${Oniguruma_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${Oniguruma_INCLUDE_DIR}")
endif()
mark_as_advanced(Oniguruma_INCLUDE_DIR Oniguruma_LIBRARY)
