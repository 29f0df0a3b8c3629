# The components of libnfuse and their layering: each DEPS list is what that component may
# include and call (docs/architecture.md draws this graph). Kernels: cmake/nfuse_kernels.cmake.
#
#   api ─► quant ─► runtime ─► compile ─► partition ─► backends ─► kernels
#    │       │         │          └─► backend_ref      ▲    └─► ir ─► core
#    │       │         ├─► passes ─► ops ─► ir         │
#    │       │         └─► backends_builtin ─► backend_{ref,cpu,fusion}
#    │       └─► frontend ─► ir
#    └─► frontend

nfuse_component(core DIR core HEADERS nfuse/status.h DEPS Threads::Threads)
target_compile_definitions(nfuse_core PUBLIC ONNX_ML=1 ONNX_NAMESPACE=onnx NFUSE_VERSION="${PROJECT_VERSION}")

nfuse_component(ir DIR ir DEPS nfuse_core)
nfuse_component(ops DIR ops DEPS nfuse_ir)
include(${PROJECT_SOURCE_DIR}/src/compile/context/context.cmake)
nfuse_component(frontend DIR frontend RECURSE DEPS nfuse_ir onnx onnx_proto protobuf::libprotobuf)
nfuse_component(passes DIR passes DEPS nfuse_ops)

include(${PROJECT_SOURCE_DIR}/src/backends/backends.cmake)

nfuse_component(partition DIR partition DEPS nfuse_backends)
nfuse_component(compile DIR compile DEPS nfuse_partition nfuse_backend_ref)
nfuse_component(runtime DIR runtime DEPS nfuse_compile nfuse_context nfuse_passes nfuse_backends_builtin)
nfuse_component(quant DIR quant DEPS nfuse_runtime nfuse_frontend)
target_include_directories(nfuse_quant PRIVATE ${NFUSE_STB_INCLUDE_DIR})
target_link_libraries(nfuse_quant PRIVATE ${NFUSE_STB_LIBRARY})
nfuse_component(api DIR api HEADERS nfuse/nfuse.h nfuse/nfuse.hpp DEPS nfuse_quant nfuse_runtime nfuse_frontend)
