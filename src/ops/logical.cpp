// Comparisons (Equal, Less, Greater, LessOrEqual, GreaterOrEqual), boolean logic (And, Or,
// Xor, Not) and Where. Comparisons and logic broadcast and produce bool.
#include "ops/builtin_ops.h"
#include "ops/elementwise_util.h"
#include "ops/op_helpers.h"

namespace nfuse::ops {
namespace {

template <uint32_t kAllowed>
Status infer_compare(ir::InferContext& ctx) {
  NFUSE_RETURN_IF_ERROR_PLAIN(require_dtype(ctx, 0, kAllowed));
  NFUSE_RETURN_IF_ERROR_PLAIN(check_same_dtype(ctx, 0, 1));
  NFUSE_RETURN_IF_ERROR_PLAIN(infer_binary_broadcast(ctx));
  ctx.output(0).dtype = ir::DType::kBool;
  return ok_status();
}

Status infer_not(ir::InferContext& ctx) {
  NFUSE_RETURN_IF_ERROR_PLAIN(require_dtype(ctx, 0, kBoolDTypes));
  return infer_same_as_input0(ctx);
}

// Output: dtype of X (input 1), broadcast shape of condition, X and Y.
Status infer_where(ir::InferContext& ctx) {
  NFUSE_RETURN_IF_ERROR_PLAIN(require_dtype(ctx, 0, kBoolDTypes));
  if (ctx.dtype(1) != ctx.dtype(2)) return ctx.error("X and Y differ in dtype");
  auto shape = broadcast_shapes({&ctx.shape(0), &ctx.shape(1), &ctx.shape(2)});
  if (!shape.ok()) return ctx.error(shape.status().message());
  ctx.output(0) = {ctx.dtype(1), std::move(shape).value()};
  return ok_status();
}

ir::OpSchema binary_schema(const char* op, ir::InferFn infer) {
  return ir::OpSchema{.op_type = op, .min_inputs = 2, .max_inputs = 2, .infer = infer};
}

}  // namespace

void register_logical_ops(ir::OpRegistry& registry) {
  registry.add(binary_schema("Equal", infer_compare<kAllDTypes>));
  for (const char* op : {"Less", "Greater", "LessOrEqual", "GreaterOrEqual"}) {
    registry.add(binary_schema(op, infer_compare<kNumericDTypes>));
  }
  for (const char* op : {"And", "Or", "Xor"}) registry.add(binary_schema(op, infer_compare<kBoolDTypes>));
  registry.add(ir::OpSchema{.op_type = "Not", .infer = infer_not});
  registry.add(ir::OpSchema{.op_type = "Where", .min_inputs = 3, .max_inputs = 3, .infer = infer_where});
}

}  // namespace nfuse::ops
