// fuse_qdq_resize: keeps nearest Resizes between quantized layers in int8.
//
//   DequantizeLinear(x_q, s, zp) -> Resize(mode nearest) -> QuantizeLinear(s, zp)   (identical parameters)
//     -> Resize(x_q, roi, scales, sizes)                                           (opset >= 11 takes u8 / i8)
//
// An FPN's upsampling: in a QDQ graph each one otherwise dequantizes a map, copies it 4x to 64x
// larger in f32 and quantizes that back (the PaddleOCR detector at 960: 3.6 ms of 48). Quantized
// per tensor with constant parameters and one dtype (u8 or i8); the Resize's output feeds only
// the QuantizeLinear and is not a graph output; not tf_crop_and_resize (its extrapolation value
// is no copied value). Exact: a nearest Resize copies values, and
// quantize(dequantize(v)) = v with equal parameters. A DequantizeLinear with other readers stays.
#pragma once

#include "ir/graph.h"
#include "nfuse/status.h"
#include "passes/pass_log.h"

namespace nfuse::passes {

Status fuse_qdq_resize(ir::Graph& graph, PassLog& log);

}  // namespace nfuse::passes
