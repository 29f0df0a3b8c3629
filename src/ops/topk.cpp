// TopK: k from the 'k' attribute (opset 1) or input 1 (opset 10+); largest and sorted
// attributes (opset 11). Outputs values and int64 indices with dim `axis` set to k.
#include "ops/builtin_ops.h"
#include "ops/op_helpers.h"
#include "ops/tensor_params.h"

namespace nfuse::ops {
namespace {

Status verify_topk(const ir::Node& node) {
  if (!node.has_input(1) && !node.attrs.has("k")) return invalid_model(node.label() + ": needs k (attribute or input)");
  return ok_status();
}

Status infer_topk(ir::InferContext& ctx) {
  const ir::Shape& in = ctx.shape(0);
  ctx.output(0).dtype = ctx.dtype(0);
  if (ctx.num_outputs() > 1) ctx.output(1).dtype = ir::DType::kI64;
  ir::Shape out = ir::Shape::unknown_rank();
  if (in.rank_known()) {
    const int64_t axis_attr = ctx.attrs().get_int("axis", -1);
    auto axis = normalize_axis(axis_attr, in.rank());
    if (!axis) return ctx.error(axis_error(axis_attr, in.rank()));
    std::optional<int64_t> k;
    if (ctx.attrs().has("k")) {
      k = ctx.attrs().get_int("k", 0);
    } else if (const ir::Tensor* kt = ctx.value(1)) {
      if (kt->numel() != 1) return ctx.error("k must hold one element");
      k = kt->get_int(0);
    }
    out = in;
    out[*axis] = k ? ir::Dim(*k) : ir::Dim();
    if (k && *k < 0) return ctx.error("k must not be negative");
    if (k && in[*axis].is_static() && *k > in[*axis].value) {
      return ctx.error("k = " + std::to_string(*k) + " exceeds the axis size " + std::to_string(in[*axis].value));
    }
  }
  ctx.output(0).shape = out;
  if (ctx.num_outputs() > 1) ctx.output(1).shape = out;
  return ok_status();
}

}  // namespace

void register_topk_ops(ir::OpRegistry& registry) {
  registry.add(
      ir::OpSchema{.op_type = "TopK", .max_inputs = 2, .max_outputs = 2, .verify = verify_topk, .infer = infer_topk});
}

}  // namespace nfuse::ops
