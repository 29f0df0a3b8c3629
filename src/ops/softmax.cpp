// Softmax, LogSoftmax and Hardmax. Before opset 13 they act on the input coerced to 2-D at
// `axis` (default 1); from opset 13 along the single `axis` (default -1). See softmax_geometry.
#include "ops/builtin_ops.h"
#include "ops/elementwise_util.h"
#include "ops/op_helpers.h"

namespace nfuse::ops {
namespace {

Status infer_softmax(ir::InferContext& ctx) {
  NFUSE_RETURN_IF_ERROR_PLAIN(require_dtype(ctx, 0, kFloatDTypes));
  if (ctx.shape(0).rank_known()) NFUSE_RETURN_IF_ERROR_PLAIN(check_softmax_axis(ctx.node, ctx.shape(0).rank()));
  return infer_same_as_input0(ctx);
}

}  // namespace

void register_softmax_ops(ir::OpRegistry& registry) {
  for (const char* op : {"Softmax", "LogSoftmax", "Hardmax"}) {
    registry.add(ir::OpSchema{.op_type = op, .infer = infer_softmax});
  }
}

}  // namespace nfuse::ops
