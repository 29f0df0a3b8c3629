// Element-wise unary math: Sqrt, Exp, Log, trig, rounding, Abs/Neg/Sign, IsNaN/IsInf.
// The output has the input's shape; only the accepted dtypes differ between ops.
#include "ops/builtin_ops.h"
#include "ops/elementwise_util.h"
#include "ops/op_helpers.h"

namespace nfuse::ops {
namespace {

template <uint32_t kAllowed>
Status infer_unary(ir::InferContext& ctx) {
  NFUSE_RETURN_IF_ERROR_PLAIN(require_dtype(ctx, 0, kAllowed));
  return infer_same_as_input0(ctx);
}

Status infer_float_to_bool(ir::InferContext& ctx) {
  NFUSE_RETURN_IF_ERROR_PLAIN(require_dtype(ctx, 0, kFloatDTypes));
  ctx.output(0) = {ir::DType::kBool, ctx.shape(0)};
  return ok_status();
}

ir::OpSchema unary_schema(const char* op, ir::InferFn infer) {
  return ir::OpSchema{.op_type = op, .infer = infer};
}

}  // namespace

void register_unary_ops(ir::OpRegistry& registry) {
  for (const char* op : {"Sqrt", "Exp", "Log", "Reciprocal", "Floor", "Ceil", "Round", "Sin", "Cos", "Tan",
                         "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh"}) {
    registry.add(unary_schema(op, infer_unary<kFloatDTypes>));
  }
  registry.add(unary_schema("Erf", infer_unary<kNumericDTypes>));
  registry.add(unary_schema("Abs", infer_unary<kNumericDTypes>));
  registry.add(unary_schema("Sign", infer_unary<kNumericDTypes>));
  registry.add(unary_schema("Neg", infer_unary<kSignedDTypes>));
  registry.add(unary_schema("IsNaN", infer_float_to_bool));
  registry.add(unary_schema("IsInf", infer_float_to_bool));
}

}  // namespace nfuse::ops
