// Reductions: Reduce{Sum,Mean,Max,Min,Prod,L1,L2,LogSum,LogSumExp,SumSquare} and
// ArgMax/ArgMin. Reduce axes come from the `axes` input when the node has one (ReduceSum from
// opset 13) and from the attribute otherwise; see resolve_reduce_axes.
#include "ops/builtin_ops.h"
#include "ops/elementwise_util.h"
#include "ops/op_helpers.h"

namespace nfuse::ops {
namespace {

Status infer_reduce(ir::InferContext& ctx) {
  NFUSE_RETURN_IF_ERROR_PLAIN(require_dtype(ctx, 0, kNumericDTypes));
  NFUSE_RETURN_IF_ERROR_PLAIN(require_dtype(ctx, 1, dtype_bit(ir::DType::kI64) | dtype_bit(ir::DType::kI32)));
  const ir::Shape& in = ctx.shape(0);
  ctx.output(0).dtype = ctx.dtype(0);
  const bool keepdims = ctx.attrs().get_int("keepdims", 1) != 0;
  const bool axes_unknown = ctx.has_input(1) && !ctx.value(1);
  if (!in.rank_known() || axes_unknown) {
    // Which axes go is unknown: with keepdims only the rank survives.
    ctx.output(0).shape = (in.rank_known() && keepdims) ? ir::Shape(std::vector<ir::Dim>(in.dims().size()))
                                                        : ir::Shape::unknown_rank();
    return ok_status();
  }
  auto axes = resolve_reduce_axes(ctx.node, ctx.has_input(1) ? ctx.value(1) : nullptr, in.rank());
  if (!axes.ok()) return axes.status();
  if (axes->noop) {
    ctx.output(0).shape = in;
    return ok_status();
  }
  std::vector<ir::Dim> dims;
  for (int i = 0; i < in.rank(); ++i) {
    if (!axes->reduced[static_cast<size_t>(i)]) dims.push_back(in[i]);
    else if (keepdims) dims.push_back(ir::Dim(1));
  }
  ctx.output(0).shape = ir::Shape(std::move(dims));
  return ok_status();
}

Status infer_arg_reduce(ir::InferContext& ctx) {
  NFUSE_RETURN_IF_ERROR_PLAIN(require_dtype(ctx, 0, kNumericDTypes));
  const ir::Shape& in = ctx.shape(0);
  ctx.output(0).dtype = ir::DType::kI64;
  if (!in.rank_known()) {
    ctx.output(0).shape = ir::Shape::unknown_rank();
    return ok_status();
  }
  const int64_t axis_attr = ctx.attrs().get_int("axis", 0);
  auto axis = normalize_axis(axis_attr, in.rank());
  if (!axis) {
    return ctx.error("axis " + std::to_string(axis_attr) + " is out of range for rank " + std::to_string(in.rank()));
  }
  if (in[*axis].is_static() && in[*axis].value == 0) return ctx.error("cannot take the arg-extremum of an empty axis");
  const bool keepdims = ctx.attrs().get_int("keepdims", 1) != 0;
  std::vector<ir::Dim> dims;
  for (int i = 0; i < in.rank(); ++i) {
    if (i != *axis) dims.push_back(in[i]);
    else if (keepdims) dims.push_back(ir::Dim(1));
  }
  ctx.output(0).shape = ir::Shape(std::move(dims));
  return ok_status();
}

}  // namespace

void register_reduce_ops(ir::OpRegistry& registry) {
  for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
                         "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"}) {
    registry.add(ir::OpSchema{.op_type = op, .min_inputs = 1, .max_inputs = 2, .infer = infer_reduce});
  }
  for (const char* op : {"ArgMax", "ArgMin"}) registry.add(ir::OpSchema{.op_type = op, .infer = infer_arg_reduce});
}

}  // namespace nfuse::ops
