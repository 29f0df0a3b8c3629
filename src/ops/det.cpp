// Det: the determinant of each trailing [M, M] matrix of X [*, M, M]; output [*].
#include <vector>

#include "ops/builtin_ops.h"
#include "ops/elementwise_util.h"
#include "ops/op_helpers.h"

namespace nfuse::ops {
namespace {

Status infer_det(ir::InferContext& ctx) {
  NFUSE_RETURN_IF_ERROR_PLAIN(require_dtype(ctx, 0, kFloatDTypes));
  const ir::Shape& x = ctx.shape(0);
  ctx.output(0).dtype = ctx.dtype(0);
  if (!x.rank_known()) {
    ctx.output(0).shape = ir::Shape::unknown_rank();
    return ok_status();
  }
  if (x.rank() < 2) return ctx.error("input must have rank >= 2");
  const ir::Dim& m = x[x.rank() - 1];
  const ir::Dim& n = x[x.rank() - 2];
  if (m.is_static() && n.is_static() && m.value != n.value) return ctx.error("the trailing matrices must be square");
  ctx.output(0).shape = ir::Shape(std::vector<ir::Dim>(x.dims().begin(), x.dims().end() - 2));
  return ok_status();
}

}  // namespace

void register_det_ops(ir::OpRegistry& registry) { registry.add(ir::OpSchema{.op_type = "Det", .infer = infer_det}); }

}  // namespace nfuse::ops
