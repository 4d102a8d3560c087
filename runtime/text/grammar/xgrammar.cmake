# xgrammar's C++ core as a static library, from the sources tools/setup
# unpacks into .deps/ (its pinned PyPI sdist; the Python bindings and their
# tvm-ffi are left out). Built with Hive's toolchain flags but not Hive's
# warnings: its headers are SYSTEM includes, so our -Werror does not judge
# them. In the sanitizer tree it is not instrumented, as CAF, Boost and the
# other libraries from packages are not: the tree checks Hive's code (and
# Hive's side of every call), and instrumenting xgrammar would add to the
# slowest stage of the suite. Its own CMakeLists is
# not used: it adds -Werror -flto=auto and forces the Python bindings on.
set(HIVE_XGRAMMAR_VERSION 0.2.9)
set(HIVE_XGRAMMAR_DIR ${PROJECT_SOURCE_DIR}/.deps/xgrammar-${HIVE_XGRAMMAR_VERSION})
if(NOT EXISTS ${HIVE_XGRAMMAR_DIR}/.complete)
  message(FATAL_ERROR "hive: xgrammar ${HIVE_XGRAMMAR_VERSION}'s sources are missing from "
    "${HIVE_XGRAMMAR_DIR}: run tools/setup")
endif()
file(GLOB_RECURSE HIVE_XGRAMMAR_SOURCES CONFIGURE_DEPENDS ${HIVE_XGRAMMAR_DIR}/cpp/*.cc)
list(FILTER HIVE_XGRAMMAR_SOURCES EXCLUDE REGEX "/cpp/tvm_ffi/")
add_library(hive_xgrammar STATIC ${HIVE_XGRAMMAR_SOURCES})
target_include_directories(hive_xgrammar SYSTEM PUBLIC ${HIVE_XGRAMMAR_DIR}/include
  ${HIVE_XGRAMMAR_DIR}/3rdparty/picojson ${HIVE_XGRAMMAR_DIR}/3rdparty/dlpack/include)
target_compile_definitions(hive_xgrammar PUBLIC XGRAMMAR_ENABLE_CPPTRACE=0)
set_target_properties(hive_xgrammar PROPERTIES CXX_STANDARD 17 POSITION_INDEPENDENT_CODE ON)
target_compile_options(hive_xgrammar PRIVATE -w)
if(HIVE_SANITIZE)
  target_compile_options(hive_xgrammar PRIVATE -fno-sanitize=all)
endif()
target_link_libraries(hive_xgrammar PUBLIC Threads::Threads)
