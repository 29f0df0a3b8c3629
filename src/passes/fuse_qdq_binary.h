// fuse_qdq_binary: turns the QDQ form of an element-wise Add or Mul into ONNX Runtime's
// com.microsoft QLinearAdd / QLinearMul, so residual joins stay in int8 between quantized layers:
//
//   DequantizeLinear(a_q, a_scale, a_zp) -> a, DequantizeLinear(b_q, b_scale, b_zp) -> b
//   Add | Mul(a, b) -> c -> QuantizeLinear(c_scale, c_zp) -> c_q
//     -> QLinearAdd | QLinearMul(a_q, a_scale, a_zp, b_q, b_scale, b_zp, c_scale, c_zp) -> c_q
//
// All three quantizations are per tensor with constant scales and zero points of one dtype: u8
// or i8 (as ORT's kernels require, Q/DQ of the default domain), or u16 or i16 (W8A16 graphs, Q/DQ
// of the default domain or "com.microsoft"; nfuse's own 16-bit form of the ops). Numpy
// broadcasting carries over (not the pre-opset-7 broadcast attribute). c must feed only the
// QuantizeLinear and not be a graph output; a DequantizeLinear with other readers stays for them.
//
// Numerics: the QDQ graph dequantizes, adds (multiplies) in f32 and quantizes c / c_scale. The
// fused 8-bit op computes (a - a_zp) * (a_scale / c_scale) + (b - b_zp) * (b_scale / c_scale) with
// one FMA (kernels/quant_arithmetic.h): the two differ only in f32 rounding, so an output can move
// by one step where the value lies within rounding error of a .5 boundary. The 16-bit form
// computes exactly what the QDQ graph does, so there the fusion changes no bit.
#pragma once

#include "ir/graph.h"
#include "nfuse/status.h"
#include "passes/pass_log.h"

namespace nfuse::passes {

Status fuse_qdq_binary(ir::Graph& graph, PassLog& log);

}  // namespace nfuse::passes
