// fuse_dynamic_quant: ONNX Runtime's dynamically quantized MatMul (quantize_dynamic's
//   DynamicQuantizeLinear(x) -> MatMulInteger(xq, W, xzp, W_zp) -> Cast(float) ->
//   Mul(., Mul(x_scale, W_scale)) [-> Add(., bias)])
// becomes one nfuse.DynamicQuantMatMul(x, W, W_zp, W_scale[, bias]) (ops/dynamic_quant_matmul.cpp)
// that quantizes x on the fly, multiplies on the int8 GEMM and applies the scales and bias in
// its float epilogue: one pass over the output instead of four, and no integer intermediate.
// W, W_zp and W_scale must be constants (W_scale 1 or N elements, bias N); the
// DynamicQuantizeLinear and the scale product are dropped once nothing else reads them.
#pragma once

#include "ir/graph.h"
#include "nfuse/status.h"
#include "passes/pass_log.h"

namespace nfuse::passes {

Status fuse_dynamic_quant(ir::Graph& graph, PassLog& log);

}  // namespace nfuse::passes
