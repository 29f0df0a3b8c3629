// fuse_qdq_concat: turns the QDQ form of Concat into ONNX Runtime's com.microsoft QLinearConcat:
//
//   DequantizeLinear(x_i, x_i_scale, x_i_zp) -> x_i (i = 1..n)
//   Concat(x_1, ..., x_n; axis) -> c -> QuantizeLinear(y_scale, y_zp) -> y_q
//     -> QLinearConcat(y_scale, y_zp, x_1, x_1_scale, x_1_zp, ...; axis) -> y_q
//
// Every quantization is per tensor with constant parameters and one dtype (u8 or i8). c must feed
// only the QuantizeLinear and not be a graph output; a DequantizeLinear with other readers stays.
// Numerics: identical, element for element, to the QDQ graph (QLinearConcat is defined as
// quantize(dequantize(x)), kernels/quant_arithmetic.h).
#pragma once

#include "ir/graph.h"
#include "nfuse/status.h"
#include "passes/pass_log.h"

namespace nfuse::passes {

Status fuse_qdq_concat(ir::Graph& graph, PassLog& log);

}  // namespace nfuse::passes
