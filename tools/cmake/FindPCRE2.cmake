# FindPCRE2: the 8-bit PCRE2 library, found by header and library (Debian's
# libpcre2-dev ships no CMake package). Defines PCRE2::8BIT, the name PCRE2's
# own CMake package uses.
find_path(PCRE2_INCLUDE_DIR pcre2.h)
find_library(PCRE2_8BIT_LIBRARY pcre2-8)

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(PCRE2 REQUIRED_VARS PCRE2_8BIT_LIBRARY PCRE2_INCLUDE_DIR)

if(PCRE2_FOUND AND NOT TARGET PCRE2::8BIT)
  add_library(PCRE2::8BIT UNKNOWN IMPORTED)
  set_target_properties(PCRE2::8BIT PROPERTIES
    IMPORTED_LOCATION "${PCRE2_8BIT_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${PCRE2_INCLUDE_DIR}")
endif()
mark_as_advanced(PCRE2_INCLUDE_DIR PCRE2_8BIT_LIBRARY)
