// Shape (with opset 15 start/end) and Size. Both compute their value at plan time when the
// input's dims are static, so shape arithmetic chains (Shape -> Gather -> Concat -> Reshape)
// fold before anything runs.
#include <algorithm>

#include "ops/builtin_ops.h"
#include "ops/op_helpers.h"
#include "ops/tensor_params.h"

namespace nfuse::ops {
namespace {

Status infer_shape(ir::InferContext& ctx) {
  const ir::Shape& in = ctx.shape(0);
  ctx.output(0).dtype = ir::DType::kI64;
  if (!in.rank_known()) {
    ctx.output(0).shape = ir::Shape({ir::Dim()});
    return ok_status();
  }
  const int64_t r = in.rank();
  int64_t start = ctx.attrs().get_int("start", 0);
  int64_t end = ctx.attrs().get_int("end", r);
  if (start < 0) start += r;
  if (end < 0) end += r;
  start = std::clamp<int64_t>(start, 0, r);
  end = std::clamp<int64_t>(end, 0, r);
  const int64_t n = std::max<int64_t>(end - start, 0);
  ctx.output(0).shape = ir::Shape({ir::Dim(n)});
  std::vector<int64_t> dims;
  for (int64_t i = start; i < start + n; ++i) {
    const ir::Dim& d = in[static_cast<int>(i)];
    if (!d.is_static()) return ok_status();
    dims.push_back(d.value);
  }
  ctx.output_values[0] = ir::Tensor::from_vector(dims, {n});
  return ok_status();
}

Status infer_size(ir::InferContext& ctx) {
  ctx.output(0) = {ir::DType::kI64, ir::Shape(std::vector<ir::Dim>{})};
  NFUSE_RETURN_IF_ERROR(check_shape(ctx.shape(0)), ctx.node.label());
  auto n = ctx.shape(0).static_numel();
  if (n) ctx.output_values[0] = ir::Tensor::from_vector(std::vector<int64_t>{*n}, {});
  return ok_status();
}

}  // namespace

void register_shape_ops(ir::OpRegistry& registry) {
  registry.add(ir::OpSchema{.op_type = "Shape", .infer = infer_shape});
  registry.add(ir::OpSchema{.op_type = "Size", .infer = infer_size});
}

}  // namespace nfuse::ops
