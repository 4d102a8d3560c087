# cmake -P: Hive's build tree installed into a fresh prefix, then the program
# in consumer/ configured against it with find_package(hive), built and run.
# Any failing step fails the test. Set by tests/install/CMakeLists.txt:
# HIVE_BUILD_TREE, HIVE_SOURCE_TREE, CONSUMER_SOURCE_DIR, WORK_DIR, GENERATOR,
# MAKE_PROGRAM, CXX_COMPILER, BUILD_TYPE, MODEL_DIR.
cmake_minimum_required(VERSION 3.25)
foreach(var IN ITEMS HIVE_BUILD_TREE HIVE_SOURCE_TREE CONSUMER_SOURCE_DIR WORK_DIR GENERATOR
    MAKE_PROGRAM CXX_COMPILER BUILD_TYPE MODEL_DIR)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "install_test.cmake: -D${var}=... missing")
  endif()
endforeach()

set(prefix ${WORK_DIR}/prefix)
set(consumer_build ${WORK_DIR}/consumer-build)
file(REMOVE_RECURSE ${WORK_DIR})

function(step what)
  message(STATUS "install test: ${what}")
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE status)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "install test: ${what} failed (${status})")
  endif()
endfunction()

step("cmake --install" ${CMAKE_COMMAND} --install ${HIVE_BUILD_TREE} --prefix ${prefix})

# The exported targets carry neither our warning flags (-Werror) nor the
# sanitizers, and no path into the source or build tree.
file(GLOB_RECURSE package_files ${prefix}/lib*/cmake/hive/hive*.cmake)
if(NOT package_files)
  message(FATAL_ERROR "install test: no hive*.cmake installed under ${prefix}")
endif()
foreach(file IN LISTS package_files)
  file(READ ${file} text)
  foreach(forbidden IN ITEMS -Werror -fsanitize ${HIVE_SOURCE_TREE}/ ${HIVE_BUILD_TREE}/)
    string(FIND "${text}" "${forbidden}" at)
    if(NOT at EQUAL -1)
      message(FATAL_ERROR "install test: ${file} contains '${forbidden}'")
    endif()
  endforeach()
endforeach()

step("configure the consumer" ${CMAKE_COMMAND} -S ${CONSUMER_SOURCE_DIR} -B ${consumer_build}
  -G ${GENERATOR} -DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM} -DCMAKE_CXX_COMPILER=${CXX_COMPILER}
  -DCMAKE_BUILD_TYPE=${BUILD_TYPE} -DCMAKE_PREFIX_PATH=${prefix})
# The package found must be the one just installed.
file(STRINGS ${consumer_build}/CMakeCache.txt hive_dir REGEX "^hive_DIR:")
string(FIND "${hive_dir}" "=${prefix}/" at)
if(at EQUAL -1)
  message(FATAL_ERROR "install test: found ${hive_dir}, not the package under ${prefix}")
endif()
step("build the consumer" ${CMAKE_COMMAND} --build ${consumer_build})
step("run the consumer" ${consumer_build}/hive_install_consumer ${MODEL_DIR})

# The installed CLI finds the bundled model under <prefix>/share/hive.
execute_process(COMMAND ${CMAKE_COMMAND} -E env --unset=HIVE_MODEL
  ${prefix}/bin/hive generate "Once upon a time" --max-tokens 8 --device cpu
  RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
string(FIND "${out}" "Once upon a time" at)
if(NOT status EQUAL 0 OR at EQUAL -1)
  message(FATAL_ERROR "install test: installed hive generate failed (${status}): ${out}${err}")
endif()
