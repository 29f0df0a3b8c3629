// fuse_dynamic_quant: ONNX Runtime's dynamically quantized MatMul and Conv (quantize_dynamic's
//   DynamicQuantizeLinear(x) -> MatMulInteger|ConvInteger(xq, W, xzp, W_zp) -> Cast(float) ->
//   Mul(., Mul(x_scale, W_scale)) [-> Add(., bias)])
// becomes one nfuse.DynamicQuantMatMul (ops/dynamic_quant_matmul.cpp) or nfuse.DynamicQuantConv
// (ops/conv.cpp, ConvInteger's attributes) of (x, W, W_zp, W_scale[, bias]) that quantizes x on
// the fly, multiplies on the int8 GEMM and applies the scales and bias in its float epilogue: one
// pass over the output instead of four, and no integer intermediate. W, W_zp and W_scale must be
// constants, W_scale and bias one element or one per output channel on the axis the graph's
// broadcasting puts them (N last for MatMul, M at axis 1 for Conv); the DynamicQuantizeLinear
// and the scale product are dropped once nothing else reads them.
#pragma once

#include "ir/graph.h"
#include "nfuse/status.h"
#include "passes/pass_log.h"

namespace nfuse::passes {

Status fuse_dynamic_quant(ir::Graph& graph, PassLog& log);

}  // namespace nfuse::passes
