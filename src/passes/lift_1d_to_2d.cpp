#include "passes/lift_1d_to_2d.h"

#include "ops/fused_epilogue.h"
#include "passes/pass_util.h"

namespace nfuse::passes {
namespace {

bool is_conv(const ir::Node& n) {
  return (n.domain.empty() && (n.op_type == "Conv" || n.op_type == "ConvTranspose")) ||
         (n.domain == "nfuse" && n.op_type == "DynamicQuantConv");
}

bool is_q8(ir::DType t) { return t == ir::DType::kU8 || t == ir::DType::kI8; }

bool is_pool(const ir::Node& n) { return n.domain.empty() && (n.op_type == "MaxPool" || n.op_type == "AveragePool"); }

// The 1-D node this pass lifts: a rank-3 f32 input and one output; for a conv a constant rank-3
// weight (f32, or 8-bit for nfuse.DynamicQuantConv, whose per-channel operands are not reshaped), for MaxPool no
// Indices output (2-D indices would be the same numbers, but nothing here needs them).
bool liftable(const ir::Node& n) {
  if (!is_conv(n) && !is_pool(n)) return false;
  if (!is_f32(n.input(0)) || n.outputs.size() != 1 || !n.output(0)) return false;
  const ir::Shape& x = n.input(0)->type.shape;
  if (!x.rank_known() || x.rank() != 3) return false;
  if (is_conv(n)) {
    const ir::Value* w = n.input(1);
    const bool quantized = n.op_type == "DynamicQuantConv";
    if (!w || !w->constant || w->constant->rank() != 3) return false;
    if (quantized ? !is_q8(w->constant->dtype()) : w->constant->dtype() != ir::DType::kF32) return false;
  }
  // A fused residual's operand is reshaped alongside; any other implicit input is unknown here.
  if (!n.implicit_inputs.empty() && !(is_conv(n) && ops::has_fused_epilogue(n) && n.implicit_inputs.size() == 1)) {
    return false;
  }
  return true;
}

// `v` with a unit axis inserted at 2 ([N, C, L] -> [N, C, 1, L]), the view a 2-D kernel reads.
ir::Shape with_unit_axis(const ir::Shape& s) {
  if (!s.rank_known() || s.rank() != 3) return ir::Shape::unknown_rank();
  return ir::Shape({s[0], s[1], ir::Dim(1), s[2]});
}

ir::Value* unsqueezed(ir::Graph& graph, ir::Value* v, ir::Value* axes, const std::string& node_name, int opset) {
  ir::Value* out =
      graph.add_unique_value(v->name + "_2d", ir::TensorType{v->type.dtype, with_unit_axis(v->type.shape)});
  graph.add_node("Unsqueeze", node_name, {v, axes}, {out})->opset = opset;
  return out;
}

// The 2-D attributes of a 1-D window: a unit extent (kernel 1, stride 1, dilation 1, no padding)
// on the new axis.
ir::Attributes lifted_attributes(const ir::Attributes& attrs) {
  ir::Attributes out = attrs;
  for (const char* name : {"kernel_shape", "strides", "dilations"}) {
    if (!attrs.has(name)) continue;
    std::vector<int64_t> v = attrs.get_ints(name);
    v.insert(v.begin(), 1);
    out.set(name, v);
  }
  if (attrs.has("pads")) {
    const std::vector<int64_t> p = attrs.get_ints("pads");
    if (p.size() == 2) out.set("pads", std::vector<int64_t>{0, p[0], 0, p[1]});
  }
  if (attrs.has("output_padding")) {
    std::vector<int64_t> v = attrs.get_ints("output_padding");
    v.insert(v.begin(), 0);
    out.set("output_padding", v);
  }
  if (attrs.has("output_shape")) {
    std::vector<int64_t> v = attrs.get_ints("output_shape");
    if (v.size() == 1) v.insert(v.begin(), 1);
    out.set("output_shape", v);
  }
  return out;
}

Result<bool> try_lift(ir::Graph& graph, ir::Node& n, PassLog& log) {
  if (!liftable(n)) return false;
  const int unsqueeze_opset = 13;  // axes as an input (nfuse reads either form)
  ir::Value* axes = add_constant(graph, n.name + "_unit_axis", ir::Tensor::from_vector<int64_t>({2}, {1}));
  std::vector<ir::Value*> inputs = n.inputs;
  inputs[0] = unsqueezed(graph, n.input(0), axes, n.name + "_to_2d", unsqueeze_opset);
  if (is_conv(n)) {
    const ir::Tensor& w = *n.input(1)->constant;
    inputs[1] = add_constant(graph, n.input(1)->name + "_2d", w.reshaped({w.dim(0), w.dim(1), 1, w.dim(2)}));
  }
  ir::Value* y = n.output(0);
  ir::Value* y2 = graph.add_unique_value(y->name + "_2d", ir::TensorType{y->type.dtype, with_unit_axis(y->type.shape)});
  std::vector<ir::Value*> implicit;
  for (ir::Value* r : n.implicit_inputs)
    implicit.push_back(unsqueezed(graph, r, axes, n.name + "_residual_to_2d", unsqueeze_opset));
  const std::string what = n.label();
  const std::string op = n.op_type, name = n.name, domain = n.domain;
  const int opset = n.opset;
  ir::Attributes attrs = lifted_attributes(n.attrs);
  graph.remove_node(&n);
  ir::Node* lifted = graph.add_node(op, name + "_2d", std::move(inputs), {y2}, std::move(attrs));
  lifted->opset = opset;
  lifted->domain = domain;
  lifted->implicit_inputs = std::move(implicit);
  graph.add_node("Squeeze", name + "_to_1d", {y2, axes}, {y})->opset = unsqueeze_opset;
  log.add(what + ": 1-D, now a 2-D " + op + " over a 1 x L plane");
  return true;
}

}  // namespace

Status lift_1d_to_2d(ir::Graph& graph, PassLog& log) {
  auto r = rewrite_until_done(graph, [&](ir::Node& n) { return try_lift(graph, n, log); });
  return r.status();
}

}  // namespace nfuse::passes
