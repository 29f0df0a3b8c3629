# One static library per component of src/ (DESIGN.md, docs/architecture.md). Each component's
# headers are reachable only through an include root of its own in the build tree
# (include_roots/<name>/<dir> -> src/<dir>, symlinks), and a target sees the roots of exactly
# the components it links: an #include across an edge that target_link_libraries does not
# declare fails to compile.
#
#   nfuse_component(<name> [DIR <dir under src/>] [RECURSE] [EXPOSE <dir under src/>]
#                   [HEADERS <files under src/ or include/>...] [SOURCES <sources>...]
#                   [DEPS <targets>...])
# defines target nfuse_<name> from DIR's *.cpp (RECURSE: of its subfolders too) and SOURCES,
# and exposes the headers of DIR and EXPOSE (whose sources it does not glob), and HEADERS one
# by one, at their usual paths ("ir/graph.h").
set(NFUSE_INCLUDE_ROOTS ${PROJECT_BINARY_DIR}/include_roots)

function(nfuse_expose root relative target_path)
  get_filename_component(parent ${root}/${relative} DIRECTORY)
  file(MAKE_DIRECTORY ${parent})
  if(NOT IS_SYMLINK ${root}/${relative})
    file(CREATE_LINK ${target_path} ${root}/${relative} SYMBOLIC)
  endif()
endfunction()

function(nfuse_component name)
  cmake_parse_arguments(C "RECURSE" "DIR;EXPOSE" "HEADERS;SOURCES;DEPS" ${ARGN})
  set(target nfuse_${name})
  set(root ${NFUSE_INCLUDE_ROOTS}/${name})
  set(sources ${C_SOURCES})
  if(C_DIR)
    if(C_RECURSE)
      file(GLOB_RECURSE dir_sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/${C_DIR}/*.cpp)
    else()
      file(GLOB dir_sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/${C_DIR}/*.cpp)
    endif()
    list(APPEND sources ${dir_sources})
    nfuse_expose(${root} ${C_DIR} ${PROJECT_SOURCE_DIR}/src/${C_DIR})
  endif()
  if(C_EXPOSE)
    nfuse_expose(${root} ${C_EXPOSE} ${PROJECT_SOURCE_DIR}/src/${C_EXPOSE})
  endif()
  foreach(header IN LISTS C_HEADERS)
    if(EXISTS ${PROJECT_SOURCE_DIR}/src/${header})
      nfuse_expose(${root} ${header} ${PROJECT_SOURCE_DIR}/src/${header})
    else()
      nfuse_expose(${root} ${header} ${PROJECT_SOURCE_DIR}/include/${header})
    endif()
  endforeach()
  add_library(${target} STATIC ${sources})
  target_include_directories(${target} PUBLIC ${root})
  target_link_libraries(${target} PUBLIC ${C_DEPS})
  target_compile_options(${target} PRIVATE ${NFUSE_WARNINGS})
  # Hidden by default: libnfuse.so exports only the C API (NFUSE_API, and cmake/libnfuse.map).
  set_target_properties(${target} PROPERTIES POSITION_INDEPENDENT_CODE ON CXX_VISIBILITY_PRESET hidden
    C_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON)
  set_property(GLOBAL APPEND PROPERTY NFUSE_COMPONENTS ${target})
endfunction()
