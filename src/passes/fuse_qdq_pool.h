// fuse_qdq_pool: keeps pooling between quantized layers in int8.
//
//   DequantizeLinear(x_q, x_scale, x_zp) -> GlobalAveragePool | AveragePool -> QuantizeLinear(y_scale, y_zp)
//     -> com.microsoft QLinearGlobalAveragePool | QLinearAveragePool(x_q, x_scale, x_zp, y_scale, y_zp)
//   DequantizeLinear(x_q, s, zp) -> MaxPool -> QuantizeLinear(s, zp)   (identical parameters)
//     -> MaxPool(x_q)                                                   (opset >= 12 takes u8 / i8)
//
// Quantizations per tensor with constant parameters and one dtype (u8 or i8); the pool's output
// feeds only the QuantizeLinear and is not a graph output; MaxPool's Indices output unused;
// AveragePool without dilations (QLinearAveragePool has none). A DequantizeLinear with other
// readers stays.
// Numerics: MaxPool is exact (quantization is monotone and quantize(dequantize(v)) = v with equal
// parameters). The average pools sum (x - x_zp) exactly in int32 and requantize once
// (kernels/quant_arithmetic.h) where the QDQ graph averages in f32: outputs can differ by one step at .5
// boundaries.
#pragma once

#include "ir/graph.h"
#include "nfuse/status.h"
#include "passes/pass_log.h"

namespace nfuse::passes {

Status fuse_qdq_pool(ir::Graph& graph, PassLog& log);

}  // namespace nfuse::passes
