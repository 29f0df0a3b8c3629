// Expand (broadcast to a shape given as a value) and Tile (repeat along every axis).
#include <algorithm>

#include "ops/builtin_ops.h"
#include "ops/op_helpers.h"
#include "ops/tensor_params.h"

namespace nfuse::ops {
namespace {

// The rank of an output whose dims come from a 1-D shape-like input of unknown value.
ir::Shape rank_only(const ir::InferContext& ctx, int input, int min_rank) {
  if (!ctx.shape(input).rank_known() || ctx.shape(input).rank() != 1 || !ctx.shape(input)[0].is_static() ||
      ctx.shape(input)[0].value > 64) {
    return ir::Shape::unknown_rank();
  }
  const int64_t n = std::max<int64_t>(ctx.shape(input)[0].value, min_rank);
  return ir::Shape(std::vector<ir::Dim>(static_cast<size_t>(n)));
}

Status infer_expand(ir::InferContext& ctx) {
  ctx.output(0).dtype = ctx.dtype(0);
  const ir::Tensor* target = ctx.value(1);
  if (!target) {
    ctx.output(0).shape = rank_only(ctx, 1, ctx.shape(0).rank_known() ? ctx.shape(0).rank() : 0);
    if (!ctx.shape(0).rank_known()) ctx.output(0).shape = ir::Shape::unknown_rank();
    return ok_status();
  }
  if (target->rank() != 1) return ctx.error("shape must be 1-D");
  std::vector<int64_t> dims = target->to_int_vector();
  NFUSE_RETURN_IF_ERROR(check_dims(dims), ctx.node.label());
  const ir::Shape want = ir::Shape::from_dims(dims);
  auto shape = broadcast_shapes({&ctx.shape(0), &want});
  if (!shape.ok()) return ctx.error(shape.status().message());
  NFUSE_RETURN_IF_ERROR(check_shape(*shape), ctx.node.label());
  ctx.output(0).shape = std::move(shape).value();
  return ok_status();
}

Status infer_tile(ir::InferContext& ctx) {
  ctx.output(0).dtype = ctx.dtype(0);
  const ir::Shape& in = ctx.shape(0);
  const ir::Tensor* reps = ctx.value(1);
  if (!in.rank_known()) {
    ctx.output(0).shape = rank_only(ctx, 1, 0);
    return ok_status();
  }
  if (!reps) {
    ctx.output(0).shape = ir::Shape(std::vector<ir::Dim>(static_cast<size_t>(in.rank())));
    return ok_status();
  }
  std::vector<int64_t> r = reps->to_int_vector();
  if (reps->rank() != 1 || static_cast<int>(r.size()) != in.rank()) {
    return ctx.error("repeats must be 1-D with one entry per input dim");
  }
  std::vector<ir::Dim> out;
  for (int i = 0; i < in.rank(); ++i) {
    const int64_t k = r[static_cast<size_t>(i)];
    if (k < 0) return ctx.error("repeats must not be negative");
    if (k == 1) {
      out.push_back(in[i]);
    } else if (in[i].is_static()) {
      if (k > 0 && in[i].value > kMaxElements / k) return ctx.error("output dims too large");
      out.emplace_back(in[i].value * k);
    } else {
      out.push_back(k == 0 ? ir::Dim(0) : ir::Dim());
    }
  }
  ir::Shape shape(std::move(out));
  NFUSE_RETURN_IF_ERROR(check_shape(shape), ctx.node.label());
  ctx.output(0).shape = std::move(shape);
  return ok_status();
}

}  // namespace

void register_expand_tile_ops(ir::OpRegistry& registry) {
  registry.add(ir::OpSchema{.op_type = "Expand", .min_inputs = 2, .max_inputs = 2, .infer = infer_expand});
  registry.add(ir::OpSchema{.op_type = "Tile", .min_inputs = 2, .max_inputs = 2, .infer = infer_tile});
}

}  // namespace nfuse::ops
