# Context binaries (`nfuse compile`): the format, its writer and its validating reader. The
# FlatBuffers schema is compiled by flatc (a host tool, also in cross builds); the generated
# header stays private to this component.
find_program(NFUSE_FLATC flatc REQUIRED)
find_path(NFUSE_FLATBUFFERS_INCLUDE_DIR flatbuffers/flatbuffers.h REQUIRED)
set(schema ${PROJECT_SOURCE_DIR}/src/compile/context/context.fbs)
set(generated ${PROJECT_BINARY_DIR}/generated/context)
add_custom_command(OUTPUT ${generated}/context_generated.h
  COMMAND ${NFUSE_FLATC} --cpp -o ${generated} ${schema}
  DEPENDS ${schema}
  COMMENT "flatc context.fbs")

nfuse_component(context DIR compile/context SOURCES ${generated}/context_generated.h DEPS nfuse_compile nfuse_kernels)
target_include_directories(nfuse_context PRIVATE ${generated} ${NFUSE_FLATBUFFERS_INCLUDE_DIR})
