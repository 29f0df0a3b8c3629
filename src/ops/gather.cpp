// Gather, GatherElements and GatherND: reads of data at positions given by an index tensor.
// Index values are data, so range checks happen in the kernels; shapes are checked here.
#include <algorithm>

#include "ops/builtin_ops.h"
#include "ops/op_helpers.h"
#include "ops/tensor_params.h"

namespace nfuse::ops {
namespace {

Status check_index_dtype(const ir::InferContext& ctx, int i) {
  const ir::DType t = ctx.dtype(i);
  if (t != ir::DType::kI64 && t != ir::DType::kI32) return ctx.error("indices must be int32 or int64");
  return ok_status();
}

Status infer_gather(ir::InferContext& ctx) {
  NFUSE_RETURN_IF_ERROR_PLAIN(check_index_dtype(ctx, 1));
  ctx.output(0).dtype = ctx.dtype(0);
  const ir::Shape& data = ctx.shape(0);
  const ir::Shape& idx = ctx.shape(1);
  if (!data.rank_known() || !idx.rank_known()) {
    ctx.output(0).shape = ir::Shape::unknown_rank();
    return ok_status();
  }
  const int64_t axis_attr = ctx.attrs().get_int("axis", 0);
  auto axis = normalize_axis(axis_attr, data.rank());
  if (!axis) return ctx.error(axis_error(axis_attr, data.rank()));
  std::vector<ir::Dim> out(data.dims().begin(), data.dims().begin() + *axis);
  out.insert(out.end(), idx.dims().begin(), idx.dims().end());
  out.insert(out.end(), data.dims().begin() + *axis + 1, data.dims().end());
  ctx.output(0).shape = ir::Shape(std::move(out));
  return ok_status();
}

Status infer_gather_elements(ir::InferContext& ctx) {
  NFUSE_RETURN_IF_ERROR_PLAIN(check_index_dtype(ctx, 1));
  ctx.output(0) = {ctx.dtype(0), ctx.shape(1)};
  const ir::Shape& data = ctx.shape(0);
  const ir::Shape& idx = ctx.shape(1);
  if (!data.rank_known() || !idx.rank_known()) return ok_status();
  if (data.rank() != idx.rank()) return ctx.error("data and indices must have the same rank");
  const int64_t axis_attr = ctx.attrs().get_int("axis", 0);
  if (!normalize_axis(axis_attr, data.rank())) return ctx.error(axis_error(axis_attr, data.rank()));
  return ok_status();
}

Status infer_gather_nd(ir::InferContext& ctx) {
  if (ctx.dtype(1) != ir::DType::kI64) return ctx.error("indices must be int64");
  ctx.output(0).dtype = ctx.dtype(0);
  const ir::Shape& data = ctx.shape(0);
  const ir::Shape& idx = ctx.shape(1);
  const int64_t b = ctx.attrs().get_int("batch_dims", 0);
  if (!data.rank_known() || !idx.rank_known() || idx.rank() == 0 || !idx[idx.rank() - 1].is_static()) {
    ctx.output(0).shape = ir::Shape::unknown_rank();
    return ok_status();
  }
  const int r = data.rank();
  const int q = idx.rank();
  if (b < 0 || b >= std::min(r, q)) return ctx.error("batch_dims must be in [0, min(rank(data), rank(indices)))");
  const int64_t m = idx[q - 1].value;
  if (m < 1 || m > r - b) return ctx.error("indices' last dim must be in [1, rank(data) - batch_dims]");
  for (int i = 0; i < b; ++i) {
    if (data[i].is_static() && idx[i].is_static() && data[i].value != idx[i].value) {
      return ctx.error("batch dims of data and indices differ");
    }
  }
  std::vector<ir::Dim> out(idx.dims().begin(), idx.dims().end() - 1);
  out.insert(out.end(), data.dims().begin() + b + m, data.dims().end());
  ctx.output(0).shape = ir::Shape(std::move(out));
  return ok_status();
}

}  // namespace

void register_gather_ops(ir::OpRegistry& registry) {
  registry.add(ir::OpSchema{.op_type = "Gather", .min_inputs = 2, .max_inputs = 2, .infer = infer_gather});
  registry.add(
      ir::OpSchema{.op_type = "GatherElements", .min_inputs = 2, .max_inputs = 2, .infer = infer_gather_elements});
  registry.add(ir::OpSchema{.op_type = "GatherND", .min_inputs = 2, .max_inputs = 2, .infer = infer_gather_nd});
}

}  // namespace nfuse::ops
