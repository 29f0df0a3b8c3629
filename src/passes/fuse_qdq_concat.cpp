#include "passes/fuse_qdq_concat.h"

#include "passes/pass_util.h"
#include "passes/qdq16_match.h"
#include "passes/qdq_match.h"

namespace nfuse::passes {
namespace {

// Pattern (q is the QuantizeLinear offered):
//   DequantizeLinear(x_i_q, x_i_scale, x_i_zp) -> x_i ...
//   Concat(x_1, ..., x_n) -> c -> QuantizeLinear(y_scale, y_zp) -> y_q
//     -> QLinearConcat(y_scale, y_zp, x_1_q, x_1_scale, x_1_zp, ...) -> y_q
Result<bool> try_fuse(ir::Graph& graph, ir::Node& q, PassLog& log) {
  auto y = activation_params_any_width(&q, true);
  if (!y) return false;
  ir::Node* op = producer_of(q.input(0), "Concat");
  if (!op || op->inputs.empty() || !op->implicit_inputs.empty() || !is_f32(op->output(0)) ||
      sole_consumer(op->output(0)) != &q) {
    return false;
  }
  std::vector<ir::Value*> inputs = {y->scale, y->zero_point};
  std::vector<ir::Node*> dqs;
  for (ir::Value* v : op->inputs) {
    ir::Node* dq = qdq_producer(v, "DequantizeLinear");
    auto x = activation_params_any_width(dq, false);
    if (!x || x->dtype != y->dtype) return false;
    dqs.push_back(dq);
    inputs.insert(inputs.end(), {dq->input(0), x->scale, x->zero_point});
  }
  ir::Attributes attrs;
  attrs.set("axis", op->attrs.get_int("axis", 1));  // opset < 4 defaults to 1
  const std::string chain = std::to_string(dqs.size()) + " DequantizeLinear -> " + op->label() + " -> " + q.label();
  ir::Node* ql = graph.add_node("QLinearConcat", op->name, std::move(inputs), {}, std::move(attrs));
  ql->domain = "com.microsoft";
  ql->opset = 1;
  graph.opsets.try_emplace("com.microsoft", 1);
  finish_qdq_rewrite(graph, dqs, op, q, ql);
  log.add("fused " + chain + " into QLinearConcat '" + ql->name + "'");
  return true;
}

}  // namespace

Status fuse_qdq_concat(ir::Graph& graph, PassLog& log) {
  auto r = rewrite_until_done(graph, [&](ir::Node& n) { return try_fuse(graph, n, log); });
  return r.status();
}

}  // namespace nfuse::passes
