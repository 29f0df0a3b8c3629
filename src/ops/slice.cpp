// Slice: starts/ends/axes as attributes before opset 10, starts/ends/axes/steps as inputs
// from 10 on. Negative indices, clamping and negative steps follow compute_slice().
#include "ops/builtin_ops.h"
#include "ops/op_helpers.h"
#include "ops/tensor_params.h"

namespace nfuse::ops {
namespace {

Status verify_slice(const ir::Node& node) {
  if (node.attrs.has("starts") != node.attrs.has("ends")) {
    return invalid_model(node.label() + ": 'starts' and 'ends' attributes must come together");
  }
  if (!node.attrs.has("starts") && node.num_inputs() < 3) {
    return invalid_model(node.label() + ": needs starts and ends (attributes or inputs 1 and 2)");
  }
  return ok_status();
}

Status infer_slice(ir::InferContext& ctx) {
  ctx.output(0).dtype = ctx.dtype(0);
  const ir::Shape& in = ctx.shape(0);
  if (!in.rank_known()) {
    ctx.output(0).shape = ir::Shape::unknown_rank();
    return ok_status();
  }
  auto starts = ints_from_attr_or_input(ctx.attrs(), "starts", ctx.value(1));
  auto ends = ints_from_attr_or_input(ctx.attrs(), "ends", ctx.value(2));
  auto axes = ints_from_attr_or_input(ctx.attrs(), "axes", ctx.value(3));
  std::optional<std::vector<int64_t>> steps;
  if (ctx.value(4)) steps = ctx.value(4)->to_int_vector();
  const bool axes_missing = ctx.has_input(3) && !ctx.value(3) && !ctx.attrs().has("axes");
  if (!starts || !ends || axes_missing || (ctx.has_input(4) && !steps)) {
    ctx.output(0).shape = ir::Shape(std::vector<ir::Dim>(static_cast<size_t>(in.rank())));
    return ok_status();
  }
  std::vector<int64_t> dims;
  for (const ir::Dim& d : in.dims()) dims.push_back(d.is_static() ? d.value : -1);
  auto sliced = compute_slice(dims, *starts, *ends, axes, steps);
  if (!sliced.ok()) return ctx.error(sliced.status().message());
  ir::Shape out = in;
  for (const SliceAxis& s : *sliced) out[s.axis] = s.count >= 0 ? ir::Dim(s.count) : ir::Dim();
  ctx.output(0).shape = std::move(out);
  return ok_status();
}

}  // namespace

void register_slice_ops(ir::OpRegistry& registry) {
  registry.add(ir::OpSchema{.op_type = "Slice", .max_inputs = 5, .verify = verify_slice, .infer = infer_slice});
}

}  // namespace nfuse::ops
