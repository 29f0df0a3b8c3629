// nfuse.QLinearConv16 and nfuse.QLinearMatMul16: convolution and matmul with 16-bit activations
// and 8-bit weights (W8A16), what fuse_qdq_conv / fuse_qdq_matmul make of a QDQ layer that
// mixed-precision quantization promoted to int16. nfuse-internal (domain "nfuse"; the exporter
// refuses them: export before optimization and the QDQ form is written instead).
//
//   QLinearConv16(x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, B?)
//   QLinearMatMul16(a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point)
//
// Inputs, attributes and shapes are ONNX QLinearConv's / QLinearMatMul's, with these types:
//   x / a and their zero point        i16 or u16 (per tensor)
//   w / b and their zero point        i8, per tensor or per output channel (w: axis 0, b: axis 1)
//   y_zero_point (and so y)           i16 or u16, per tensor (independent of x's signedness)
//   scales                            f32; B (conv only) i32 [M]
// Arithmetic (kernels/quant_arithmetic.h): the accumulator of (x - x_zp)(w - w_zp) products
// plus B is exact in int64 (int16 x int8 products reach 2^22, so an int32 sum can overflow after
// 512 of them), then y = saturate(round_half_even(f32(acc) * multiplier) + y_zp) to y's type with
// multiplier = (x_scale * w_scale) / y_scale in f32: ref's requantize_value with 16-bit storage.
// Attributes y_min, y_max (optional ints, defaults y's type range): the quantized output is
// clamped to [y_min, y_max] after that, which is what a Relu or Clip fused into the op leaves of
// it when the output's range does not imply it (symmetric s16: Relu is y >= y_zp).
// Names: the ONNX op names would collide with the int8 ops' kernels, which are keyed by op type.
#include "ir/op_registry.h"
#include "ops/builtin_ops.h"
#include "ops/matmul_geometry.h"
#include "ops/op_helpers.h"

namespace nfuse::ops {
namespace {

bool is_q16(ir::DType t) { return t == ir::DType::kI16 || t == ir::DType::kU16; }

// Scales f32, zero points of their data's dtype (x / a: input 2 of input 0; w / b: 5 of 3), x and
// y_zero_point 16-bit, w 8-bit signed.
Status check_w8a16(const ir::InferContext& ctx) {
  if (!is_q16(ctx.dtype(0)) || ctx.dtype(3) != ir::DType::kI8 || !is_q16(ctx.dtype(7))) {
    return ctx.error("x / a and y_zero_point must be i16 or u16, w / b i8");
  }
  for (int s : {1, 4, 6}) {
    if (ctx.dtype(s) != ir::DType::kF32) return ctx.error("scale input " + std::to_string(s) + " must be f32");
  }
  if (ctx.has_input(2) && ctx.dtype(2) != ctx.dtype(0)) return ctx.error("input 2 must have input 0's dtype");
  if (ctx.has_input(5) && ctx.dtype(5) != ctx.dtype(3)) return ctx.error("input 5 must have input 3's dtype");
  const bool u16 = ctx.dtype(7) == ir::DType::kU16;
  const int64_t lo = u16 ? 0 : -32768, hi = u16 ? 65535 : 32767;
  const int64_t y_min = ctx.node.attrs.get_int("y_min", lo), y_max = ctx.node.attrs.get_int("y_max", hi);
  if (y_min < lo || y_max > hi || y_min > y_max) {
    return ctx.error("y_min " + std::to_string(y_min) + " and y_max " + std::to_string(y_max) + " must satisfy " +
                     std::to_string(lo) + " <= y_min <= y_max <= " + std::to_string(hi));
  }
  return ok_status();
}

// Output shape: that of a Conv of x and w (the Conv schema's inference on inputs 0 and 3).
Status infer_qlinear_conv16(ir::InferContext& ctx) {
  NFUSE_RETURN_IF_ERROR_PLAIN(check_w8a16(ctx));
  if (ctx.has_input(8) && ctx.dtype(8) != ir::DType::kI32) return ctx.error("B must be i32");
  NFUSE_ASSIGN_OR_RETURN(ir::Shape y, conv_output_shape(ctx, 0, 3));
  ctx.output(0) = {ctx.dtype(7), std::move(y)};
  return ok_status();
}

Status infer_qlinear_matmul16(ir::InferContext& ctx) {
  NFUSE_RETURN_IF_ERROR_PLAIN(check_w8a16(ctx));
  auto shape = matmul_shape(ctx.shape(0), ctx.shape(3));
  if (!shape.ok()) return ctx.error(shape.status().message());
  ctx.output(0) = {ctx.dtype(7), *shape};
  return ok_status();
}

}  // namespace

void register_qlinear16_ops(ir::OpRegistry& registry) {
  registry.add(ir::OpSchema{.op_type = "QLinearConv16",
                            .min_inputs = 8,
                            .max_inputs = 9,
                            .verify = verify_as_conv,
                            .infer = infer_qlinear_conv16,
                            .domain = "nfuse"});
  registry.add(ir::OpSchema{.op_type = "QLinearMatMul16",
                            .min_inputs = 8,
                            .max_inputs = 8,
                            .infer = infer_qlinear_matmul16,
                            .domain = "nfuse"});
}

}  // namespace nfuse::ops
