// Cast (to the ONNX dtype in `to`) and CastLike (to input 1's dtype). String tensors are not
// in the IR, so casts from or to string are unsupported.
#include "ops/builtin_ops.h"
#include "ops/elementwise_util.h"
#include "ops/op_helpers.h"

namespace nfuse::ops {
namespace {

constexpr int64_t kOnnxString = 8;

Status verify_cast(const ir::Node& node) {
  auto to = node.attrs.require_int("to");
  if (!to.ok()) return invalid_model(node.label() + ": " + to.status().message());
  if (*to == kOnnxString) return unsupported(node.label() + ": casting to string is not supported");
  if (!dtype_from_onnx(*to)) {
    return unsupported(node.label() + ": cast to ONNX dtype " + std::to_string(*to) + " is not supported");
  }
  return ok_status();
}

Status infer_cast(ir::InferContext& ctx) {
  NFUSE_RETURN_IF_ERROR_PLAIN(require_dtype(ctx, 0, kAllDTypes));
  auto to = dtype_from_onnx(ctx.attrs().get_int("to", 0));
  if (!to) return unsupported(ctx.node.label() + ": the target dtype is not supported");
  ctx.output(0) = {*to, ctx.shape(0)};
  return ok_status();
}

Status infer_cast_like(ir::InferContext& ctx) {
  NFUSE_RETURN_IF_ERROR_PLAIN(require_dtype(ctx, 0, kAllDTypes));
  NFUSE_RETURN_IF_ERROR_PLAIN(require_dtype(ctx, 1, kAllDTypes));
  ctx.output(0) = {ctx.dtype(1), ctx.shape(0)};
  return ok_status();
}

}  // namespace

void register_cast_ops(ir::OpRegistry& registry) {
  registry.add(ir::OpSchema{.op_type = "Cast", .verify = verify_cast, .infer = infer_cast});
  registry.add(ir::OpSchema{.op_type = "CastLike", .min_inputs = 2, .max_inputs = 2, .infer = infer_cast_like});
}

}  // namespace nfuse::ops
