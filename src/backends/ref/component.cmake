# The reference backend: every op on plain kernels, and the interpreter that planning, constant
# folding, quantization and export evaluate nodes with.
nfuse_component(backend_ref DIR backends/ref DEPS nfuse_backends nfuse_ops)
