// fuse_qdq_resize: keeps nearest Resizes between quantized layers in int8.
//
//   DequantizeLinear(x_q, s, zp) -> Resize(mode nearest) -> QuantizeLinear(s, zp)   (identical parameters)
//     -> Resize(x_q, roi, scales, sizes)                                           (opset >= 11 takes u8 / i8)
//   DequantizeLinear(x_q, s, zp) -> Resize(mode nearest) -> QuantizeLinear(s', zp')  (other parameters)
//     -> DequantizeLinear(x_q, s, zp) -> QuantizeLinear(s', zp') -> Resize(...)
//
// The second form requantizes before the copy instead of after it: the same bytes (a nearest
// Resize copies values, so quantizing before or after it is one function of each value), on the
// Resize's input, a quarter of its output for a 2x upsampling, and the DequantizeLinear ->
// QuantizeLinear pair is what fuse_qdq_lookup makes one table of.
//
// An FPN's upsampling: in a QDQ graph each one otherwise dequantizes a map, copies it 4x to 64x
// larger in f32 and quantizes that back. Quantized per tensor with constant parameters (u8 / i8,
// or u16 / i16 in W8A16 graphs); the Resize's output feeds only the QuantizeLinear and is not a
// graph output; not tf_crop_and_resize (its extrapolation value is no copied value). Exact: a
// nearest Resize copies values, and quantize(dequantize(v)) = v with equal parameters. A
// DequantizeLinear with other readers stays.
#pragma once

#include "ir/graph.h"
#include "nfuse/status.h"
#include "passes/pass_log.h"

namespace nfuse::passes {

Status fuse_qdq_resize(ir::Graph& graph, PassLog& log);

}  // namespace nfuse::passes
