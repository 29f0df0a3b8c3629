# The cpu backend: optimized kernels for every op it covers, the reference kernels for the rest.
nfuse_component(backend_cpu DIR backends/cpu DEPS nfuse_backend_ref nfuse_kernels)
# Row kernels written for auto-vectorisation: without -fno-trapping-math GCC keeps the float
# compares of their clamps and maxima as branches and leaves the loops scalar. Nothing in nfuse
# reads floating-point exception flags.
if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
  set_source_files_properties(${CMAKE_CURRENT_LIST_DIR}/cpu_softmax.cpp ${CMAKE_CURRENT_LIST_DIR}/cpu_layer_norm.cpp
    ${CMAKE_CURRENT_LIST_DIR}/cpu_activation.cpp ${CMAKE_CURRENT_LIST_DIR}/cpu_pool.cpp
    ${CMAKE_CURRENT_LIST_DIR}/cpu_reduce.cpp
    PROPERTIES COMPILE_OPTIONS "-fno-trapping-math")
endif()
