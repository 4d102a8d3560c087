# FindCAF: the C++ Actor Framework 0.17, which ships no CMake package.
# Defines CAF::core and CAF::io (the network layer: the middleman; the names
# CAF's own package uses from 0.18 on), their headers being SYSTEM includes
# for whoever links them, and CAF_VERSION.
find_path(CAF_INCLUDE_DIR caf/all.hpp)
find_library(CAF_CORE_LIBRARY caf_core)
find_library(CAF_IO_LIBRARY caf_io)

if(CAF_INCLUDE_DIR AND EXISTS "${CAF_INCLUDE_DIR}/caf/config.hpp")
  # #define CAF_VERSION 1706  ->  0.17.6
  file(STRINGS "${CAF_INCLUDE_DIR}/caf/config.hpp" _caf_version_line
    REGEX "^#define CAF_VERSION [0-9]+")
  string(REGEX REPLACE "^#define CAF_VERSION ([0-9]+).*" "\\1" _caf_version "${_caf_version_line}")
  math(EXPR _caf_major "${_caf_version} / 10000")
  math(EXPR _caf_minor "(${_caf_version} / 100) % 100")
  math(EXPR _caf_patch "${_caf_version} % 100")
  set(CAF_VERSION "${_caf_major}.${_caf_minor}.${_caf_patch}")
  unset(_caf_version_line)
  unset(_caf_version)
  unset(_caf_major)
  unset(_caf_minor)
  unset(_caf_patch)
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(CAF
  REQUIRED_VARS CAF_CORE_LIBRARY CAF_IO_LIBRARY CAF_INCLUDE_DIR
  VERSION_VAR CAF_VERSION)

if(CAF_FOUND AND NOT TARGET CAF::core)
  add_library(CAF::core UNKNOWN IMPORTED)
  set_target_properties(CAF::core PROPERTIES
    IMPORTED_LOCATION "${CAF_CORE_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${CAF_INCLUDE_DIR}")
endif()
if(CAF_FOUND AND NOT TARGET CAF::io)
  add_library(CAF::io UNKNOWN IMPORTED)
  set_target_properties(CAF::io PROPERTIES
    IMPORTED_LOCATION "${CAF_IO_LIBRARY}"
    INTERFACE_LINK_LIBRARIES CAF::core)
endif()
mark_as_advanced(CAF_INCLUDE_DIR CAF_CORE_LIBRARY CAF_IO_LIBRARY)
