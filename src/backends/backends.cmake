# The backend interface (backend.h, the registry, device profiles) and the backends built into
# libnfuse. A backend is a folder with a component.cmake defining nfuse_backend_<name> and
# nfuse::backends::<name>::register_backend(BackendRegistry&); adding one is that folder and
# its name in NFUSE_BUILTIN_BACKENDS (order: registration order).
set(NFUSE_BUILTIN_BACKENDS ref cpu fusion)

nfuse_component(backends SOURCES ${PROJECT_SOURCE_DIR}/src/backends/backend_registry.cpp
  ${PROJECT_SOURCE_DIR}/src/backends/device_profile.cpp ${PROJECT_SOURCE_DIR}/src/backends/pack_store.cpp
  HEADERS backends/backend.h backends/device_profile.h backends/pack_store.h backends/qlinear_region_program.h
    backends/run_profile.h
    backends/subgraph_runner.h
  DEPS nfuse_ir nfuse_kernels nlohmann_json::nlohmann_json)

set(NFUSE_BACKEND_DECLARATIONS "")
set(NFUSE_BACKEND_CALLS "")
set(NFUSE_BACKEND_TARGETS "")
foreach(backend IN LISTS NFUSE_BUILTIN_BACKENDS)
  include(${PROJECT_SOURCE_DIR}/src/backends/${backend}/component.cmake)
  string(APPEND NFUSE_BACKEND_DECLARATIONS "namespace ${backend} {\nvoid register_backend(BackendRegistry& registry);\n}\n")
  string(APPEND NFUSE_BACKEND_CALLS "  ${backend}::register_backend(registry);\n")
  list(APPEND NFUSE_BACKEND_TARGETS nfuse_backend_${backend})
endforeach()
configure_file(${PROJECT_SOURCE_DIR}/src/backends/builtin_backends.cpp.in
  ${PROJECT_BINARY_DIR}/generated/builtin_backends.cpp @ONLY)
nfuse_component(backends_builtin SOURCES ${PROJECT_BINARY_DIR}/generated/builtin_backends.cpp
  HEADERS backends/builtin_backends.h DEPS ${NFUSE_BACKEND_TARGETS})
