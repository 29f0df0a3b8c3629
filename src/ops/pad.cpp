// Pad: constant / reflect / edge. Pads and the constant value are attributes before opset 11
// and inputs from 11 on. Negative pads crop. The opset-18 'axes' input is not supported.
#include "ops/builtin_ops.h"
#include "ops/op_helpers.h"
#include "ops/tensor_params.h"

namespace nfuse::ops {
namespace {

Status verify_pad(const ir::Node& node) {
  const std::string mode = node.attrs.get_string("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge") {
    return unsupported(node.label() + ": unsupported mode '" + mode + "'");
  }
  if (node.has_input(3)) return unsupported(node.label() + ": the 'axes' input (opset 18) is not supported");
  if (!node.attrs.has("pads") && !node.has_input(1)) {
    return invalid_model(node.label() + ": needs pads (attribute or input 1)");
  }
  return ok_status();
}

Status infer_pad(ir::InferContext& ctx) {
  ctx.output(0).dtype = ctx.dtype(0);
  const ir::Shape& in = ctx.shape(0);
  if (!in.rank_known()) {
    ctx.output(0).shape = ir::Shape::unknown_rank();
    return ok_status();
  }
  auto pads = ints_from_attr_or_input(ctx.attrs(), "pads", ctx.value(1));
  if (!pads) {
    ctx.output(0).shape = ir::Shape(std::vector<ir::Dim>(static_cast<size_t>(in.rank())));
    return ok_status();
  }
  const int r = in.rank();
  if (static_cast<int>(pads->size()) != 2 * r) {
    return ctx.error("pads has " + std::to_string(pads->size()) + " entries, expected " + std::to_string(2 * r));
  }
  const bool needs_data = ctx.attrs().get_string("mode", "constant") != "constant";
  std::vector<ir::Dim> out;
  for (int i = 0; i < r; ++i) {
    const int64_t b = (*pads)[static_cast<size_t>(i)];
    const int64_t e = (*pads)[static_cast<size_t>(i + r)];
    if (b < -kMaxElements || b > kMaxElements || e < -kMaxElements || e > kMaxElements) {
      return ctx.error("pads out of range");
    }
    if (!in[i].is_static()) {
      out.push_back(b == 0 && e == 0 ? in[i] : ir::Dim());
      continue;
    }
    const int64_t d = in[i].value + b + e;
    if (d < 0) return ctx.error("pads remove more than dim " + std::to_string(i) + " holds");
    if (needs_data && in[i].value == 0 && (b > 0 || e > 0)) {
      return ctx.error("reflect/edge padding of an empty dim");
    }
    out.emplace_back(d);
  }
  ir::Shape shape(std::move(out));
  NFUSE_RETURN_IF_ERROR(check_shape(shape), ctx.node.label());
  ctx.output(0).shape = std::move(shape);
  return ok_status();
}

}  // namespace

void register_pad_ops(ir::OpRegistry& registry) {
  registry.add(ir::OpSchema{.op_type = "Pad", .max_inputs = 4, .verify = verify_pad, .infer = infer_pad});
}

}  // namespace nfuse::ops
