// NonZero and Compress: ops whose output size is the number of selected elements, so their
// infer counts them when the input value is known (always, at run time).
#include <algorithm>

#include "ops/builtin_ops.h"
#include "ops/op_helpers.h"
#include "ops/tensor_params.h"

namespace nfuse::ops {
namespace {

int64_t count_nonzero(const ir::Tensor& t, int64_t limit) {
  int64_t n = 0;
  const int64_t end = std::min(t.numel(), limit);
  for (int64_t i = 0; i < end; ++i) n += t.get_double(i) != 0.0 ? 1 : 0;
  return n;
}

Status infer_nonzero(ir::InferContext& ctx) {
  const ir::Shape& in = ctx.shape(0);
  // A scalar is treated as 1-D (numpy's nonzero does the same).
  const ir::Dim rank = in.rank_known() ? ir::Dim(std::max(in.rank(), 1)) : ir::Dim();
  ir::Dim n;
  if (const ir::Tensor* v = ctx.value(0)) n = ir::Dim(count_nonzero(*v, v->numel()));
  ctx.output(0) = {ir::DType::kI64, ir::Shape({rank, n})};
  return ok_status();
}

Status infer_compress(ir::InferContext& ctx) {
  if (ctx.dtype(1) != ir::DType::kBool) return ctx.error("condition must be bool");
  if (ctx.shape(1).rank_known() && ctx.shape(1).rank() != 1) return ctx.error("condition must be 1-D");
  const ir::Shape& in = ctx.shape(0);
  ctx.output(0).dtype = ctx.dtype(0);
  const bool has_axis = ctx.attrs().has("axis");
  std::optional<int> axis;
  if (has_axis && in.rank_known()) {
    const int64_t a = ctx.attrs().get_int("axis", 0);
    axis = normalize_axis(a, in.rank());
    if (!axis) return ctx.error(axis_error(a, in.rank()));
  }
  ir::Dim n;
  const ir::Tensor* cond = ctx.value(1);
  if (cond) {
    std::optional<int64_t> limit = in.static_numel();
    if (axis && in[*axis].is_static()) limit = in[*axis].value;
    if (axis && !in[*axis].is_static()) limit.reset();
    if (limit) n = ir::Dim(count_nonzero(*cond, *limit));
  }
  if (!has_axis) {
    ctx.output(0).shape = ir::Shape({n});
  } else if (!in.rank_known()) {
    ctx.output(0).shape = ir::Shape::unknown_rank();
  } else {
    ir::Shape out = in;
    out[*axis] = n;
    ctx.output(0).shape = std::move(out);
  }
  return ok_status();
}

}  // namespace

void register_select_ops(ir::OpRegistry& registry) {
  registry.add(ir::OpSchema{.op_type = "NonZero", .infer = infer_nonzero});
  registry.add(ir::OpSchema{.op_type = "Compress", .min_inputs = 2, .max_inputs = 2, .infer = infer_compress});
}

}  // namespace nfuse::ops
