// fuse_qdq_conv: turns the standard QDQ-quantized convolution (as ONNX Runtime's quantizer and
// the TensorFlow/PyTorch QDQ exporters write it) into one QLinearConv, so backends with integer
// kernels run it in int8 instead of dequantizing, convolving in f32 and quantizing again:
//
//   DequantizeLinear(x_q u8|s8, x_scale, x_zp) -> Conv(x, DequantizeLinear(w_q s8 const,
//   w_scale per-tensor | per-axis 0, w_zp = 0), bias?) [-> Relu | Clip] -> QuantizeLinear(y_scale, y_zp)
//   -> QLinearConv(x_q, x_scale, x_zp, w_q, w_scale, w_zp, y_scale, y_zp, B_int32)
//
// Bias: DequantizeLinear(int32 const, scale == x_scale * w_scale exactly, zp 0) gives B as is;
// a float constant bias (or any other DequantizeLinear of a constant) becomes
// saturate_int32(round_half_even(b / (x_scale * w_scale[c]))) in f32, as ORT's QDQ transformer
// quantizes biases. A Relu / Clip between Conv and QuantizeLinear is fused only when the output
// quantization already implies it (quantization is monotone, so Q(max(v, lo)) = max(Q(v), Q(lo)):
// the activation is a no-op when Q(lo) is the type minimum and Q(hi) the maximum, e.g. Relu with
// a u8 y_zp of 0); otherwise it becomes a one-step nfuse.QLinearConvRegion (below).
//
// W8A16: the same chain with 16-bit x_q and y_q (i16/u16; Q/DQ of the default domain, opset 21,
// or ONNX Runtime's "com.microsoft" ones, which it writes below opset 21) becomes
// nfuse.QLinearConv16 (src/ops/qlinear16.cpp): the layers mixed-precision quantization promoted
// to int16 activations run on the int16 x int8 kernels instead of in f32.
//
// fuse_qdq_conv_region: a Conv whose float output only an element-wise region reads (HardSwish,
// the affine after it, equalization's per-channel Mul...), the region ending in an 8-bit
// QuantizeLinear, becomes nfuse.QLinearConvRegion (src/ops/qlinear_conv_region.cpp): the region runs on the exact
// accumulator, scaled to float, before the one quantization. This is what `nfuse quantize`
// writes for such a Conv (quant_plan.h).
//
// Numerics: the QDQ graph computes in f32 (dequantized operands, f32 accumulation, f32 bias, one
// quantize); QLinearConv accumulates exactly in int32 and requantizes with (x_scale * w_scale) /
// y_scale. The two round differently, so an output can differ by one quantization step where
// the f32 value lies within rounding error of a .5 boundary (rare; most outputs are identical).
#pragma once

#include "ir/graph.h"
#include "nfuse/status.h"
#include "passes/pass_log.h"

namespace nfuse::passes {

Status fuse_qdq_conv(ir::Graph& graph, PassLog& log);

// The nfuse.QLinearConvRegion fusion described above, a pass of its own because its result is
// not standard ONNX (nonstandard_pass_names): run after fuse_qdq_conv, which keeps the chains it
// can write as QLinearConv.
Status fuse_qdq_conv_region(ir::Graph& graph, PassLog& log);

}  // namespace nfuse::passes
