# cmake --install: Hive as the CMake package `hive`.
#
#   <prefix>/bin/hive
#   <prefix>/share/hive/{models,configs}/                       bundled models, launch files
#   <prefix>/include/hive/{base,kernels,parallel,moe,runtime,actors}/...hpp
#                           repository layout (runtime/{core,loader,model,engine,text}/)
#   <prefix>/lib/libhive_*.a
#   <prefix>/lib/cmake/hive/hiveConfig.cmake, hiveConfigVersion.cmake,
#                           hiveTargets*.cmake, Find*.cmake
#
# A consumer:  find_package(hive REQUIRED)
#              target_link_libraries(app PRIVATE hive::actors)
# The exported targets carry no warning flags and no sanitizer flags.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(HIVE_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/hive)

# hive_actors is exported as hive::actors, and so on; the same names work
# inside this build.
set(HIVE_LIBRARIES hive_base hive_kernels hive_parallel hive_moe hive_core hive_loader
  hive_model hive_engine hive_text hive_actors)
foreach(library IN LISTS HIVE_LIBRARIES)
  string(REGEX REPLACE "^hive_" "" name ${library})
  set_target_properties(${library} PROPERTIES EXPORT_NAME ${name})
  add_library(hive::${name} ALIAS ${library})
endforeach()

install(TARGETS ${HIVE_LIBRARIES} EXPORT hiveTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS hive RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# The bundled models and launch files: an installed `hive generate "text"`
# finds its default model at <prefix>/share/hive/models (text_prompt.cpp),
# and the configs' ../models paths hold there too.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/models/ DESTINATION ${CMAKE_INSTALL_DATADIR}/hive/models)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/configs/ DESTINATION ${CMAKE_INSTALL_DATADIR}/hive/configs)

# Every header of the libraries: the public ones include their neighbours.
foreach(dir IN ITEMS base kernels parallel moe runtime actors)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${dir}/ DESTINATION include/hive/${dir}
    FILES_MATCHING PATTERN "*.hpp")
endforeach()

install(EXPORT hiveTargets NAMESPACE hive:: DESTINATION ${HIVE_INSTALL_CMAKEDIR})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/hiveConfig.cmake.in
  ${PROJECT_BINARY_DIR}/hiveConfig.cmake
  INSTALL_DESTINATION ${HIVE_INSTALL_CMAKEDIR})
# 0.x: a minor version may break the API.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/hiveConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES
  ${PROJECT_BINARY_DIR}/hiveConfig.cmake
  ${PROJECT_BINARY_DIR}/hiveConfigVersion.cmake
  ${CMAKE_CURRENT_LIST_DIR}/FindCAF.cmake
  ${CMAKE_CURRENT_LIST_DIR}/FindNCCL.cmake
  ${CMAKE_CURRENT_LIST_DIR}/FindPCRE2.cmake
  ${CMAKE_CURRENT_LIST_DIR}/Findutf8proc.cmake
  DESTINATION ${HIVE_INSTALL_CMAKEDIR})
