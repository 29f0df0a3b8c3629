// ONNX Runtime's quantized activations in its contrib domain "com.microsoft", as quantized models
// exported for ORT carry them:
//
//   QLinearSigmoid(X, X_scale, X_zero_point?, Y_scale, Y_zero_point?) -> Y
//   QLinearLeakyRelu(X, X_scale, X_zero_point?, Y_scale, Y_zero_point?), attribute alpha (0.01)
//
//   Y = QuantizeLinear(f(DequantizeLinear(X, X_scale, X_zp)), Y_scale, Y_zp)
//
// X u8 or s8, scales f32 scalars, zero points scalars of X's type (absent: 0); Y has X's type and
// shape. nfuse defines the arithmetic as its own Q/DQ (kernels/quant_arithmetic.h) around the
// ref Sigmoid / LeakyRelu (computed in double, rounded to f32); ORT's own float kernels may
// differ in the last bit of f(x), so a code can differ by one where f(x) / Y_scale lies within
// an ulp of a rounding boundary. fuse_qdq_lookup turns both into nfuse.QLinearLookup.
#include "ops/builtin_ops.h"
#include "ops/elementwise_util.h"
#include "ops/op_helpers.h"

namespace nfuse::ops {
namespace {

constexpr uint32_t kQ8 = dtype_bit(ir::DType::kU8) | dtype_bit(ir::DType::kI8);

Status infer_qlinear_unary(ir::InferContext& ctx) {
  NFUSE_RETURN_IF_ERROR_PLAIN(require_dtype(ctx, 0, kQ8));
  for (int i : {1, 3}) {
    if (!ctx.has_input(i)) return ctx.error("input " + std::to_string(i) + " (a scale) is required");
    NFUSE_RETURN_IF_ERROR_PLAIN(require_dtype(ctx, i, dtype_bit(ir::DType::kF32)));
  }
  for (int i : {2, 4}) {
    if (ctx.has_input(i) && ctx.dtype(i) != ctx.dtype(0)) return ctx.error("zero points must have X's dtype");
  }
  for (int i = 1; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) continue;
    auto n = ctx.shape(i).static_numel();
    if (n && *n != 1) return ctx.error("scales and zero points must be scalars (per tensor)");
  }
  ctx.output(0) = {ctx.dtype(0), ctx.shape(0)};
  return ok_status();
}

}  // namespace

void register_qlinear_contrib_ops(ir::OpRegistry& registry) {
  registry.add(ir::OpSchema{.op_type = "QLinearSigmoid",
                            .min_inputs = 4,
                            .max_inputs = 5,
                            .infer = infer_qlinear_unary,
                            .domain = "com.microsoft"});
  registry.add(ir::OpSchema{.op_type = "QLinearLeakyRelu",
                            .min_inputs = 4,
                            .max_inputs = 5,
                            .infer = infer_qlinear_unary,
                            .domain = "com.microsoft"});
}

}  // namespace nfuse::ops
