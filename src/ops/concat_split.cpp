// Concat and Split along one axis. Split's sizes are the 'split' attribute before opset 13 and
// an optional input from 13 on; without either the dim splits into equal parts.
#include "ops/builtin_ops.h"
#include "ops/op_helpers.h"
#include "ops/tensor_params.h"

namespace nfuse::ops {
namespace {

Status verify_concat(const ir::Node& node) {
  if (node.opset >= 4 && !node.attrs.has("axis")) return invalid_model(node.label() + ": missing attribute 'axis'");
  return ok_status();
}

Status infer_concat(ir::InferContext& ctx) {
  NFUSE_RETURN_IF_ERROR_PLAIN(check_same_dtype(ctx, 0, ctx.num_inputs() - 1));
  ctx.output(0).dtype = ctx.dtype(0);
  const int64_t axis_attr = ctx.attrs().get_int("axis", 1);
  int rank = -1;
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) return ctx.error("input " + std::to_string(i) + " is missing");
    if (!ctx.shape(i).rank_known()) continue;
    if (rank >= 0 && ctx.shape(i).rank() != rank) return ctx.error("inputs have different ranks");
    rank = ctx.shape(i).rank();
  }
  if (rank < 0) {
    ctx.output(0).shape = ir::Shape::unknown_rank();
    return ok_status();
  }
  auto axis = normalize_axis(axis_attr, rank);
  if (!axis) return ctx.error(axis_error(axis_attr, rank));
  std::vector<ir::Dim> out(static_cast<size_t>(rank));
  int64_t sum = 0;
  bool sum_known = true;
  for (int d = 0; d < rank; ++d) {
    bool first = true;
    for (int i = 0; i < ctx.num_inputs(); ++i) {
      const ir::Shape& s = ctx.shape(i);
      if (!s.rank_known()) {
        if (d == *axis) sum_known = false;
        continue;
      }
      const ir::Dim& dim = s[d];
      if (d == *axis) {
        if (!dim.is_static()) sum_known = false;
        else sum += dim.value;
        continue;
      }
      ir::Dim& o = out[static_cast<size_t>(d)];
      if (first || (!o.is_static() && dim.is_static())) {
        o = dim;
      } else if (o.is_static() && dim.is_static() && o.value != dim.value) {
        return ctx.error("inputs differ in dim " + std::to_string(d) + ": " + std::to_string(o.value) + " vs " +
                         std::to_string(dim.value));
      }
      first = false;
    }
  }
  out[static_cast<size_t>(*axis)] = sum_known ? ir::Dim(sum) : ir::Dim();
  ctx.output(0).shape = ir::Shape(std::move(out));
  return ok_status();
}

Status infer_split(ir::InferContext& ctx) {
  const ir::Shape& in = ctx.shape(0);
  for (int o = 0; o < ctx.num_outputs(); ++o) ctx.output(o) = {ctx.dtype(0), ir::Shape::unknown_rank()};
  if (!in.rank_known()) return ok_status();
  const int64_t axis_attr = ctx.attrs().get_int("axis", 0);
  auto axis = normalize_axis(axis_attr, in.rank());
  if (!axis) return ctx.error(axis_error(axis_attr, in.rank()));
  auto split = ints_from_attr_or_input(ctx.attrs(), "split", ctx.value(1));
  const ir::Dim& d = in[*axis];
  std::vector<int64_t> sizes(static_cast<size_t>(ctx.num_outputs()), -1);
  if (split || !ctx.has_input(1)) {
    auto r = compute_split(d.is_static() ? d.value : -1, ctx.num_outputs(), split);
    if (!r.ok()) return ctx.error(r.status().message());
    sizes = std::move(r).value();
  }
  for (int o = 0; o < ctx.num_outputs(); ++o) {
    ir::Shape s = in;
    const int64_t n = sizes[static_cast<size_t>(o)];
    s[*axis] = n >= 0 ? ir::Dim(n) : ir::Dim();
    ctx.output(o).shape = std::move(s);
  }
  return ok_status();
}

}  // namespace

void register_concat_split_ops(ir::OpRegistry& registry) {
  registry.add(
      ir::OpSchema{.op_type = "Concat", .max_inputs = 1 << 16, .verify = verify_concat, .infer = infer_concat});
  registry.add(ir::OpSchema{.op_type = "Split", .max_inputs = 2, .max_outputs = 1 << 16, .infer = infer_split});
}

}  // namespace nfuse::ops
