// The ref backend's fused epilogue (ops/fused_epilogue.h): applied after any kernel whose node
// carries nfuse.* epilogue attributes, so fused Conv/ConvTranspose/Gemm/MatMul nodes run on ref
// without their kernels knowing about fusion.
#pragma once

#include "backends/ref/ref_kernel.h"

namespace nfuse::backends::ref {

// Adds the bias (nfuse.bias: the last implicit input, broadcast over the last dim), then the
// residual (args.implicit_inputs[0]) to output 0 and applies the fused activation, in double, rounding once per step into the output dtype. A no-op for nodes without an epilogue;
// kInvalidModel for malformed attributes, kUnsupported for a non-float output or a residual
// whose dtype or dims differ from output 0's.
Status apply_fused_epilogue(KernelArgs& args);

}  // namespace nfuse::backends::ref
