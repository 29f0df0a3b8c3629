// ScatterElements (and its deprecated alias Scatter) and ScatterND: a copy of data with some
// elements replaced by (or reduced with) updates. Index values are checked in the kernels.
#include "ops/builtin_ops.h"
#include "ops/op_helpers.h"
#include "ops/tensor_params.h"

namespace nfuse::ops {
namespace {

Status verify_reduction(const ir::Node& node) {
  const std::string r = node.attrs.get_string("reduction", "none");
  if (r != "none" && r != "add" && r != "mul" && r != "max" && r != "min") {
    return invalid_model(node.label() + ": unknown reduction '" + r + "'");
  }
  return ok_status();
}

Status check_common(const ir::InferContext& ctx) {
  if (ctx.dtype(2) != ctx.dtype(0)) return ctx.error("updates must have the dtype of data");
  const ir::DType t = ctx.dtype(1);
  if (t != ir::DType::kI64 && t != ir::DType::kI32) return ctx.error("indices must be int32 or int64");
  return ok_status();
}

Status infer_scatter_elements(ir::InferContext& ctx) {
  NFUSE_RETURN_IF_ERROR_PLAIN(check_common(ctx));
  ctx.output(0) = ctx.input(0);
  const ir::Shape& data = ctx.shape(0);
  const ir::Shape& idx = ctx.shape(1);
  const ir::Shape& upd = ctx.shape(2);
  if (!data.rank_known() || !idx.rank_known()) return ok_status();
  if (data.rank() != idx.rank()) return ctx.error("data and indices must have the same rank");
  if (upd.rank_known() && !(upd == idx)) {
    bool clash = upd.rank() != idx.rank();
    for (int i = 0; !clash && i < idx.rank(); ++i)
      clash = upd[i].is_static() && idx[i].is_static() && upd[i].value != idx[i].value;
    if (clash) return ctx.error("updates must have the shape of indices");
  }
  const int64_t axis = ctx.attrs().get_int("axis", 0);
  if (!normalize_axis(axis, data.rank())) return ctx.error(axis_error(axis, data.rank()));
  return ok_status();
}

Status infer_scatter_nd(ir::InferContext& ctx) {
  NFUSE_RETURN_IF_ERROR_PLAIN(check_common(ctx));
  ctx.output(0) = ctx.input(0);
  const ir::Shape& data = ctx.shape(0);
  const ir::Shape& idx = ctx.shape(1);
  const ir::Shape& upd = ctx.shape(2);
  if (!data.rank_known() || !idx.rank_known() || !upd.rank_known()) return ok_status();
  if (idx.rank() < 1 || !idx[idx.rank() - 1].is_static()) return ok_status();
  const int q = idx.rank();
  const int64_t k = idx[q - 1].value;
  if (k < 1 || k > data.rank()) return ctx.error("indices' last dim must be in [1, rank(data)]");
  // updates: indices.shape[:-1] + data.shape[k:]
  const int64_t want_rank = q - 1 + data.rank() - k;
  if (upd.rank() != want_rank) return ctx.error("updates has rank " + std::to_string(upd.rank()) +
                                                ", expected " + std::to_string(want_rank));
  for (int i = 0; i < upd.rank(); ++i) {
    const ir::Dim& want = i < q - 1 ? idx[i] : data[static_cast<int>(k) + i - (q - 1)];
    if (want.is_static() && upd[i].is_static() && want.value != upd[i].value) {
      return ctx.error("updates dim " + std::to_string(i) + " is " + std::to_string(upd[i].value) + ", expected " +
                       std::to_string(want.value));
    }
  }
  return ok_status();
}

}  // namespace

void register_scatter_ops(ir::OpRegistry& registry) {
  registry.add(ir::OpSchema{.op_type = "ScatterElements",
                            .min_inputs = 3,
                            .max_inputs = 3,
                            .verify = verify_reduction,
                            .infer = infer_scatter_elements});
  registry.add(ir::OpSchema{.op_type = "Scatter", .min_inputs = 3, .max_inputs = 3, .infer = infer_scatter_elements});
  registry.add(ir::OpSchema{
      .op_type = "ScatterND", .min_inputs = 3, .max_inputs = 3, .verify = verify_reduction, .infer = infer_scatter_nd});
}

}  // namespace nfuse::ops
