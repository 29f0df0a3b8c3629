// CumSum: running sums along the axis given by input 1 (a scalar), optionally exclusive
// and/or reversed. The output has the input's shape and dtype.
#include "ops/builtin_ops.h"
#include "ops/elementwise_util.h"
#include "ops/op_helpers.h"

namespace nfuse::ops {
namespace {

Status infer_cumsum(ir::InferContext& ctx) {
  NFUSE_RETURN_IF_ERROR_PLAIN(require_dtype(ctx, 0, kNumericDTypes));
  NFUSE_RETURN_IF_ERROR_PLAIN(require_dtype(ctx, 1, dtype_bit(ir::DType::kI64) | dtype_bit(ir::DType::kI32)));
  if (const ir::Tensor* axis = ctx.value(1)) {
    if (axis->numel() != 1) return ctx.error("axis must be a scalar");
    if (ctx.shape(0).rank_known() && !normalize_axis(axis->get_int(0), ctx.shape(0).rank())) {
      return ctx.error("axis " + std::to_string(axis->get_int(0)) + " is out of range");
    }
  }
  return infer_same_as_input0(ctx);
}

}  // namespace

void register_cumsum_ops(ir::OpRegistry& registry) {
  registry.add(ir::OpSchema{.op_type = "CumSum", .min_inputs = 2, .max_inputs = 2, .infer = infer_cumsum});
}

}  // namespace nfuse::ops
