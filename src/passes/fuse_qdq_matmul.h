// fuse_qdq_matmul: turns a QDQ-quantized MatMul with constant 2-D weights into one
// QLinearMatMul, as fuse_qdq_conv does for Conv:
//
//   DequantizeLinear(a_q u8|s8, a_scale, a_zp) -> MatMul(a, DequantizeLinear(b_q s8 const [K, N],
//   b_scale per-tensor | per-axis 1, b_zp = 0)) -> QuantizeLinear(y_scale, y_zp)
//   -> QLinearMatMul(a_q, a_scale, a_zp, b_q, b_scale, b_zp, y_scale, y_zp)
//
// Only a MatMul feeding the QuantizeLinear directly (QLinearMatMul has no bias; a MatMul -> Add
// -> QuantizeLinear chain stays as it is). Numerics as fuse_qdq_conv: the integer path can
// differ from the f32 QDQ path by one output quantization step where the f32 value lies within
// rounding error of a .5 boundary.
#pragma once

#include "ir/graph.h"
#include "nfuse/status.h"
#include "passes/pass_log.h"

namespace nfuse::passes {

Status fuse_qdq_matmul(ir::Graph& graph, PassLog& log);

}  // namespace nfuse::passes
