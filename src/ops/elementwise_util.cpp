#include "ops/elementwise_util.h"

#include <string>

#include "ops/op_helpers.h"

namespace nfuse::ops {

Status require_dtype(const ir::InferContext& ctx, int input, uint32_t allowed) {
  if (!ctx.has_input(input)) return ok_status();
  const ir::DType t = ctx.dtype(input);
  if (t == ir::DType::kUndefined || (dtype_bit(t) & allowed) != 0) return ok_status();
  return unsupported(ctx.node.label() + ": input " + std::to_string(input) + " has dtype " +
                     std::string(ir::dtype_name(t)) + ", which this op does not accept");
}

Result<ReduceAxes> resolve_reduce_axes(const ir::Node& node, const ir::Tensor* axes_value, int rank) {
  ReduceAxes r;
  r.keepdims = node.attrs.get_int("keepdims", 1) != 0;
  std::vector<int64_t> axes =
      axes_value ? axes_value->to_int_vector() : node.attrs.get_ints("axes", {});
  r.reduced.assign(static_cast<size_t>(rank), false);
  if (axes.empty()) {
    if (node.attrs.get_int("noop_with_empty_axes", 0) != 0) {
      r.noop = true;
    } else {
      r.reduced.assign(static_cast<size_t>(rank), true);
    }
    return r;
  }
  for (int64_t axis : axes) {
    auto a = normalize_axis(axis, rank);
    if (!a) {
      return invalid_model(node.label() + ": axis " + std::to_string(axis) + " is out of range for rank " +
                           std::to_string(rank));
    }
    if (r.reduced[static_cast<size_t>(*a)]) {
      return invalid_model(node.label() + ": axis " + std::to_string(axis) + " is repeated");
    }
    r.reduced[static_cast<size_t>(*a)] = true;
  }
  return r;
}

static Result<int> softmax_axis(const ir::Node& node, int rank) {
  const bool legacy = node.opset > 0 && node.opset < 13;
  const int64_t axis = node.attrs.get_int("axis", legacy ? 1 : -1);
  // The 2-D coercion accepts axis == rank (everything in the outer dim); rank-0 inputs are a
  // single row of one element either way.
  const int hi = legacy ? rank : rank - 1;
  const int64_t norm = axis < 0 ? axis + rank : axis;
  if (rank == 0 && (axis == 0 || axis == -1 || (legacy && axis == 1))) return 0;
  if (norm < 0 || norm > hi) {
    return invalid_model(node.label() + ": axis " + std::to_string(axis) + " is out of range for rank " +
                         std::to_string(rank));
  }
  return static_cast<int>(norm);
}

Status check_softmax_axis(const ir::Node& node, int rank) { return softmax_axis(node, rank).status(); }

Result<SoftmaxGeometry> softmax_geometry(const ir::Node& node, const std::vector<int64_t>& dims) {
  const int rank = static_cast<int>(dims.size());
  NFUSE_ASSIGN_OR_RETURN(int axis, softmax_axis(node, rank));
  const bool legacy = node.opset > 0 && node.opset < 13;
  SoftmaxGeometry g;
  for (int i = 0; i < rank; ++i) {
    const int64_t d = dims[static_cast<size_t>(i)];
    if (i < axis) g.outer *= d;
    else if (i == axis || legacy) g.n *= d;
    else g.inner *= d;
  }
  return g;
}

bool uses_legacy_broadcast(const ir::Node& node) {
  return node.opset > 0 && node.opset < 7 && node.attrs.get_int("broadcast", 0) != 0;
}

Result<std::vector<int64_t>> legacy_broadcast_dims(const ir::Node& node, const std::vector<int64_t>& a,
                                                   const std::vector<int64_t>& b) {
  const int64_t ra = static_cast<int64_t>(a.size());
  const int64_t rb = static_cast<int64_t>(b.size());
  int64_t axis = node.attrs.get_int("axis", ra - rb);
  if (axis < 0) axis += ra;
  if (rb > ra || axis < 0 || axis + rb > ra) {
    return invalid_model(node.label() + ": legacy broadcast of " + ir::dims_to_string(b) + " onto " +
                         ir::dims_to_string(a) + " at axis " + std::to_string(axis) + " does not fit");
  }
  std::vector<int64_t> out(a.size(), 1);
  for (int64_t i = 0; i < rb; ++i) {
    const int64_t d = b[static_cast<size_t>(i)];
    if (d != 1 && d != a[static_cast<size_t>(axis + i)]) {
      return invalid_model(node.label() + ": legacy broadcast of " + ir::dims_to_string(b) + " onto " +
                           ir::dims_to_string(a) + " at axis " + std::to_string(axis) + " does not fit");
    }
    out[static_cast<size_t>(axis + i)] = d;
  }
  return out;
}

Status infer_binary_broadcast(ir::InferContext& ctx) {
  if (!uses_legacy_broadcast(ctx.node)) return infer_broadcast(ctx);
  auto a = ctx.shape(0).static_dims();
  auto b = ctx.shape(1).static_dims();
  if (a && b) NFUSE_RETURN_IF_ERROR_PLAIN(legacy_broadcast_dims(ctx.node, *a, *b).status());
  ctx.output(0) = ctx.input(0);
  return ok_status();
}

}  // namespace nfuse::ops
