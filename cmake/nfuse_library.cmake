# The installable library: libnfuse.so (versioned SONAME, only the C API exported) and
# libnfuse.a, both from the component libraries; headers, a CMake package and nfuse.pc.
#
# Ops, kernels and backends are registered explicitly (runtime/builtins.h), so the linker keeps
# exactly what the C API reaches. libnfuse.a is one archive holding one relocatable object
# prelinked from every component (`ld -r`), so an application links one file. Internal symbols
# stay global-hidden (all in namespace nfuse): localizing them (objcopy --localize-hidden)
# breaks the C++ template instantiations (COMDAT groups) nfuse shares with the application.
include(GNUInstallDirs)

# Every object of the api component (the exported functions), and what they reach of the rest.
add_library(nfuse_shared SHARED $<TARGET_OBJECTS:nfuse_api>)
target_link_libraries(nfuse_shared PRIVATE nfuse_api)
set_target_properties(nfuse_shared PROPERTIES OUTPUT_NAME nfuse VERSION ${PROJECT_VERSION}
  SOVERSION ${PROJECT_VERSION_MAJOR} LINK_DEPENDS ${PROJECT_SOURCE_DIR}/cmake/libnfuse.map)
target_link_options(nfuse_shared PRIVATE -Wl,--version-script=${PROJECT_SOURCE_DIR}/cmake/libnfuse.map)
if(NOT NFUSE_SANITIZE AND NOT NFUSE_FUZZ)  # sanitizer runtimes resolve in the executable
  target_link_options(nfuse_shared PRIVATE -Wl,--no-undefined)
endif()
target_include_directories(nfuse_shared INTERFACE $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
  $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)

# The static library: component archives -> one prelinked object -> libnfuse.a.
set(NFUSE_PRELINKED ${PROJECT_BINARY_DIR}/nfuse_prelinked.o)
set(NFUSE_STATIC_LIB ${PROJECT_BINARY_DIR}/libnfuse.a)
set(NFUSE_COMPONENT_ARCHIVES "")
foreach(component IN LISTS NFUSE_COMPONENT_TARGETS)
  list(APPEND NFUSE_COMPONENT_ARCHIVES $<TARGET_FILE:${component}>)
endforeach()
add_custom_command(OUTPUT ${NFUSE_STATIC_LIB}
  COMMAND ${CMAKE_LINKER} -r --whole-archive ${NFUSE_COMPONENT_ARCHIVES} -o ${NFUSE_PRELINKED}
  COMMAND ${CMAKE_COMMAND} -E rm -f ${NFUSE_STATIC_LIB}
  COMMAND ${CMAKE_AR} rcs ${NFUSE_STATIC_LIB} ${NFUSE_PRELINKED}
  DEPENDS ${NFUSE_COMPONENT_TARGETS}
  COMMENT "Prelinking libnfuse.a")
add_custom_target(nfuse_static ALL DEPENDS ${NFUSE_STATIC_LIB})

# What a static link needs besides libnfuse.a (nfuse.pc Libs.private, the CMake package).
set(NFUSE_STATIC_DEPS "-lonnx -lonnx_proto -lprotobuf -lstb -lstdc++ -lm -lpthread")
if(TARGET nfuse::cpuinfo)
  string(APPEND NFUSE_STATIC_DEPS " -lcpuinfo")
endif()

install(FILES ${PROJECT_SOURCE_DIR}/include/nfuse/nfuse.h ${PROJECT_SOURCE_DIR}/include/nfuse/nfuse.hpp
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/nfuse)
install(TARGETS nfuse_shared EXPORT nfuseTargets LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${NFUSE_STATIC_LIB} DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(EXPORT nfuseTargets NAMESPACE nfuse:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/nfuse)

include(CMakePackageConfigHelpers)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/nfuseConfig.cmake.in
  ${PROJECT_BINARY_DIR}/nfuseConfig.cmake INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/nfuse)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/nfuseConfigVersion.cmake
  COMPATIBILITY SameMajorVersion)
# nfuse.pc finds the prefix from its own folder, so an installed tree can be moved (or installed
# with `cmake --install --prefix`): ${pcfiledir} is <prefix>/<libdir>/pkgconfig.
file(RELATIVE_PATH NFUSE_PC_TO_PREFIX /${CMAKE_INSTALL_LIBDIR}/pkgconfig /)
string(REGEX REPLACE "/$" "" NFUSE_PC_TO_PREFIX "${NFUSE_PC_TO_PREFIX}")
configure_file(${PROJECT_SOURCE_DIR}/cmake/nfuse.pc.in ${PROJECT_BINARY_DIR}/nfuse.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/nfuseConfig.cmake ${PROJECT_BINARY_DIR}/nfuseConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/nfuse)
install(FILES ${PROJECT_BINARY_DIR}/nfuse.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
