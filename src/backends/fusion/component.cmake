# The fusion backend: regular ops executed depth-first in strips, on the cpu backend's row
# helpers and the kernels.
nfuse_component(backend_fusion DIR backends/fusion DEPS nfuse_backend_cpu)
