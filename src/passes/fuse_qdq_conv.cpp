#include "passes/fuse_qdq_conv.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include "ops/fused_epilogue.h"
#include "passes/pass_util.h"
#include "passes/qdq16_match.h"
#include "passes/qdq_conv_operands.h"
#include "passes/qdq_match.h"
#include "passes/region_match.h"

namespace nfuse::passes {
namespace {

bool is_op(const ir::Node* n, const char* op) { return n && n->op_type == op && n->domain.empty(); }
const ir::Tensor* constant(const ir::Value* v) { return v && v->constant ? &*v->constant : nullptr; }

// What a fused convolution takes from DQ(x) -> Conv(DQ(w), [DQ(b)]): QLinearConv's inputs (x_q,
// x_scale, x_zp, w_q, w_scale, w_zp, y_scale, y_zp, then the int32 bias when there is one, or
// always with `bias_always`: zeros for none) and the DequantizeLinear nodes to drop afterwards.
struct ConvOperands {
  ir::Node* xdq = nullptr;
  ir::Node* wdq = nullptr;
  ir::Node* bias_dq = nullptr;
  bool per_channel = false;
  std::vector<ir::Value*> inputs;
  // Removes each DequantizeLinear that nothing but `conv` reads.
  void remove_unused_dqs(ir::Graph& graph, const ir::Node* conv) const {
    for (ir::Node* dq : {xdq, wdq, bias_dq})
      if (dq && only_used_by(dq->output(0), {conv})) graph.remove_node(dq);
  }
};

std::optional<ConvOperands> conv_operands(ir::Graph& graph, const ir::Node& conv, ir::Value* y_scale,
                                          ir::Value* y_zero_point, bool wide, bool bias_always = false) {
  auto params = [wide](const ir::Node& n, ir::DType t) { return wide ? tensor_params16(n, t) : tensor_params(n, t); };
  auto dq_of = [wide](const ir::Value* v) {
    return wide ? qdq_producer(v, "DequantizeLinear") : producer_of(v, "DequantizeLinear");
  };
  ConvOperands o;
  o.xdq = dq_of(conv.input(0));
  if (!o.xdq || !o.xdq->input(0) || !o.xdq->input(2)) return std::nullopt;
  auto x = params(*o.xdq, o.xdq->input(0)->type.dtype);
  if (!x) return std::nullopt;
  auto w = weight_params(dq_of(conv.input(1)), 3, 8, 0, wide);
  if (!w) return std::nullopt;
  o.wdq = w->dq;
  o.per_channel = w->scales.size() > 1;
  const int64_t co = w->dq->input(0)->constant->dim(0);
  bool bias_as_is = false;
  auto bias = int32_bias(conv, x->s, w->scales, co, &o.bias_dq, &bias_as_is, wide);
  if (!bias) return std::nullopt;
  // w_zp: the existing (all-zero, s8) input, or a new scalar s8 zero.
  ir::Value* w_zp = w->dq->input(2);
  if (!w_zp) w_zp = add_constant(graph, conv.name + "_w_zero_point", ir::Tensor::from_vector<int8_t>({0}, {}));
  o.inputs = {o.xdq->input(0), x->scale, x->zero_point, w->dq->input(0), w->dq->input(1), w_zp, y_scale, y_zero_point};
  if (bias->empty() && bias_always) bias = ir::Tensor::from_vector<int32_t>(std::vector<int32_t>(co, 0), {co});
  if (!bias->empty()) {
    o.inputs.push_back(bias_as_is ? o.bias_dq->input(0) : add_constant(graph, conv.name + "_bias_q", std::move(*bias)));
  }
  return o;
}

// Pattern (q is the QuantizeLinear offered):
//   DequantizeLinear(x_q, x_scale, x_zp) -> x
//   DequantizeLinear(w_q const s8, w_scale const, w_zp = 0) -> w
//   [DequantizeLinear(b_q const i32, x_scale * w_scale, 0) ->] b
//   Conv(x, w, b) -> c [-> Relu | Clip (implied by the output range) -> a] -> QuantizeLinear(y_scale, y_zp) -> y_q
//     -> QLinearConv(x_q, x_scale, x_zp, w_q, w_scale, w_zp, y_scale, y_zp, b_int32) -> y_q
// c and a feed only the next node of the chain; x's and w's DequantizeLinear may have other users
// (then they stay). With 16-bit x_q and y_q (W8A16) the same chain, its Q/DQ of the default
// domain (opset 21) or "com.microsoft", becomes nfuse.QLinearConv16 (src/ops/qlinear16.cpp),
// with an activation the output range does not imply (a Relu before a symmetric s16 Q) as the
// op's y_min / y_max clamp; 8-bit chains take default-domain Q/DQ only, as before.
Result<bool> try_fuse(ir::Graph& graph, ir::Node& q, PassLog& log) {
  if (!is_qdq_op(&q, "QuantizeLinear") || !q.input(2)) return false;
  const ir::DType yt = q.input(2)->type.dtype;
  const bool wide = is_q16(yt);
  if (!wide && !q.domain.empty()) return false;
  auto params = [wide](const ir::Node& n, ir::DType t) { return wide ? tensor_params16(n, t) : tensor_params(n, t); };
  auto y = params(q, yt);
  if (!y) return false;
  ir::Node* conv = producer_of(q.input(0));
  ir::Node* act = nullptr;
  std::optional<std::pair<int64_t, int64_t>> clamp;  // 16-bit: the activation as y_min / y_max
  if (is_op(conv, "Relu") || is_op(conv, "Clip")) {
    act = conv;
    if (sole_consumer(act->output(0)) != &q) return false;
    if (!activation_implied(*act, *y)) {
      clamp = wide ? activation_bounds(*act, *y) : std::nullopt;
      if (!clamp || clamp->first > clamp->second) return false;
    }
    conv = producer_of(act->input(0));
  }
  if (!is_op(conv, "Conv") || ops::has_fused_epilogue(*conv) || !conv->implicit_inputs.empty()) return false;
  if (sole_consumer(conv->output(0)) != (act ? act : &q)) return false;
  if (act && act->input(0) != conv->output(0)) return false;
  auto ops = conv_operands(graph, *conv, y->scale, y->zero_point, wide);
  if (!ops) return false;
  ir::Value* out = q.output(0);
  std::string chain =
      ops->xdq->label() + " -> " + conv->label() + (act ? " -> " + act->label() : "") + " -> " + q.label();
  const char* fused_op = wide ? "QLinearConv16" : "QLinearConv";
  ir::Node* ql = graph.add_node(fused_op, conv->name, std::move(ops->inputs), {}, conv->attrs);
  if (wide) {
    ql->domain = "nfuse";
    ql->opset = 1;
    if (clamp) {
      ql->attrs.set("y_min", clamp->first);
      ql->attrs.set("y_max", clamp->second);
    }
  } else {
    ql->opset = std::max(conv->opset, 10);
  }
  // Remove the chain, and each DequantizeLinear whose output nothing else reads.
  ops->remove_unused_dqs(graph, conv);
  graph.remove_node(conv);
  if (act) graph.remove_node(act);
  graph.remove_node(&q);
  q.outputs[0] = nullptr;  // `out` has one producer from here on: the fused node
  ql->outputs = {out};
  log.add("fused " + chain + " into " + (wide ? "nfuse." : "") + fused_op + " '" + ql->name + "'" +
          (ops->per_channel ? " (per-channel weights)" : ""));
  return true;
}

// Pattern (q is the QuantizeLinear offered; 8-bit, default domain):
//   DequantizeLinear(x_q) -> x;  DequantizeLinear(w_q s8) -> w;  [DequantizeLinear(b_q) ->] b
//   Conv(x, w, b) -> c -> f(c): element-wise float ops (region_match.h) -> QuantizeLinear -> y_q
//     -> nfuse.QLinearConvRegion(x_q, ..., y_scale, y_zp, b_int32, constants of f) -> y_q
// What quantization writes where a Conv absorbed the activation region after it (quant_plan.h):
// c has no Q/DQ, and only f reads it. A Relu or Clip alone is try_fuse's where the output range
// implies it, and a one-step region otherwise; a region with an op the step program does not
// run stays as it is (the Conv then runs in float).
Result<bool> try_fuse_region(ir::Graph& graph, ir::Node& q, PassLog& log) {
  if (!is_qdq_op(&q, "QuantizeLinear") || !q.domain.empty() || !q.input(2) || !q.output(0)) return false;
  const ir::DType yt = q.input(2)->type.dtype;
  if (!is_q8(yt)) return false;
  auto y = tensor_params(q, yt);
  if (!y) return false;
  auto r = find_elementwise_region(graph, q, [](const ir::Node& n) { return is_op(&n, "Conv"); });
  if (!r || r->nodes.empty()) return false;
  ir::Node* conv = r->root;
  if (ops::has_fused_epilogue(*conv) || !conv->implicit_inputs.empty() || conv->output(0)->is_graph_output) {
    return false;
  }
  for (const ir::Node* c : conv->output(0)->consumers)
    if (std::find(r->nodes.begin(), r->nodes.end(), c) == r->nodes.end()) return false;
  RegionSteps steps;
  if (!region_steps(*r, conv->output(0), &steps, /*f32_activations=*/true) || steps.constants.size() + 9 > 64)
    return false;
  const ir::Value* w = conv->input(1);
  const ir::Node* wdq = w ? producer_of(w, "DequantizeLinear") : nullptr;
  const ir::Tensor* wq = wdq && wdq->input(0) ? constant(wdq->input(0)) : nullptr;
  if (!wq || wq->rank() < 3 || (r->channels > 1 && r->channels != wq->dim(0))) return false;
  auto operands = conv_operands(graph, *conv, y->scale, y->zero_point, false, true);
  if (!operands) return false;
  std::string chain = operands->xdq->label() + " -> " + conv->label();
  for (const ir::Node* n : r->nodes) chain += " -> " + n->label();
  chain += " -> " + q.label();
  std::vector<ir::Value*> inputs = std::move(operands->inputs);
  const ir::Node* last = q.input(0)->producer;
  for (size_t j = 0; j < steps.constants.size(); ++j)
    inputs.push_back(add_constant(graph, last->name + "_c" + std::to_string(j), std::move(steps.constants[j])));
  ir::Node* fused = graph.add_node("QLinearConvRegion", conv->name, std::move(inputs), {}, conv->attrs);
  set_region_steps(graph, *fused, steps);
  operands->remove_unused_dqs(graph, conv);
  graph.remove_node(conv);
  for (ir::Node* n : r->nodes) graph.remove_node(n);
  ir::Value* out = q.output(0);
  graph.remove_node(&q);
  q.outputs[0] = nullptr;  // `out` has one producer from here on: the fused node
  fused->outputs = {out};
  log.add("fused " + chain + " into nfuse.QLinearConvRegion '" + fused->name + "' (" +
          std::to_string(steps.ops.size()) + " steps" + (operands->per_channel ? ", per-channel weights)" : ")"));
  return true;
}

}  // namespace

Status fuse_qdq_conv(ir::Graph& graph, PassLog& log) {
  auto r = rewrite_until_done(graph, [&](ir::Node& n) { return try_fuse(graph, n, log); });
  return r.status();
}

Status fuse_qdq_conv_region(ir::Graph& graph, PassLog& log) {
  auto r = rewrite_until_done(graph, [&](ir::Node& n) { return try_fuse_region(graph, n, log); });
  return r.status();
}

}  // namespace nfuse::passes
