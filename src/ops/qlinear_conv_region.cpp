// nfuse.QLinearConvRegion: an 8-bit QLinearConv whose output runs through an element-wise region
// of float ops before it is quantized, what fuse_qdq_conv_region makes of
//   DQ(x) -> Conv(DQ(w), DQ(b)) -> element-wise ops (HardSwish, the affine after it, ...) -> Q
// where quantization left the convolution's own output in float (quant_plan.h: a Conv absorbs the
// lookup region reading it). The activation then sees the exact accumulator instead of an 8-bit
// rounding of it: a HardSwish input spends most of its 256 codes below -3, where the activation
// is flat.
//
//   QLinearConvRegion(x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point,
//                     B, C0, C1, ...) -> y
//     x .. y_zero_point, B   QLinearConv's (u8 / s8 x and y, s8 w per tensor or per output
//                            channel, f32 scales); B (i32 [M]) is required
//     Cj                     the region's f32 constants, [1] or [M]
//   fuse_qdq_conv_region writes a HardSwish or HardSigmoid as its f32 formula (x * Clip(x + 3, 0, 6) / 6,
//   Clip(alpha * x + beta, 0, 1)), which the kernels run in one or two passes, rather than as the
//   op computed in double: within an f32 ulp of it, before a rounding to 8 bits.
//   attributes               Conv's, and the region's ops / operands / params as
//                            nfuse.QLinearRegion has them (ops/qlinear_region.cpp); slot 0 is
//                            the convolution's output in float
// Arithmetic: acc = B[m] + sum (x - x_zp)(w - w_zp) exact (int32 on the kernels: the cpu
// backend's bound as for QLinearConv); v = f32(acc) * f32(x_scale * w_scale[m]); the steps run
// on v with channel m's constants (kernels/f32-region/f32_region.h); y = saturate(
// round_half_even(result * f32(1 / y_scale)) + y_zero_point): a multiply where QuantizeLinear
// divides (a division per element cost the detector's 32M region outputs ~3 ms; the two differ
// only where the quotient lies within an ulp of a .5 boundary). nfuse-internal: minted by the
// pass, never read from or written to a model file.
#include "ir/op_registry.h"
#include "ops/builtin_ops.h"
#include "ops/op_helpers.h"
#include "ops/qlinear_region.h"

namespace nfuse::ops {
namespace {

bool is_q8(ir::DType t) { return t == ir::DType::kU8 || t == ir::DType::kI8; }

Status infer_qlinear_conv_region(ir::InferContext& ctx) {
  if (!is_q8(ctx.dtype(0)) || ctx.dtype(3) != ir::DType::kI8 || !is_q8(ctx.dtype(7))) {
    return ctx.error("x and y_zero_point must be u8 or i8, w i8");
  }
  for (int s : {1, 4, 6}) {
    if (ctx.dtype(s) != ir::DType::kF32) return ctx.error("scale input " + std::to_string(s) + " must be f32");
  }
  if (ctx.has_input(2) && ctx.dtype(2) != ctx.dtype(0)) return ctx.error("x_zero_point must have x's dtype");
  if (ctx.has_input(5) && ctx.dtype(5) != ctx.dtype(3)) return ctx.error("w_zero_point must have w's dtype");
  if (!ctx.has_input(8) || ctx.dtype(8) != ir::DType::kI32) return ctx.error("B must be present and i32");
  NFUSE_ASSIGN_OR_RETURN(ir::Shape y, conv_output_shape(ctx, 0, 3));
  NFUSE_RETURN_IF_ERROR_PLAIN(check_region_body(ctx, 9, y));
  ctx.output(0) = {ctx.dtype(7), std::move(y)};
  return ok_status();
}

}  // namespace

void register_qlinear_conv_region_ops(ir::OpRegistry& registry) {
  registry.add(ir::OpSchema{.op_type = "QLinearConvRegion",
                            .min_inputs = 9,
                            .max_inputs = 64,
                            .verify = verify_as_conv,
                            .infer = infer_qlinear_conv_region,
                            .domain = "nfuse"});
}

}  // namespace nfuse::ops
