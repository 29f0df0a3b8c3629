#include "passes/fuse_qdq_binary.h"

#include "ops/elementwise_util.h"
#include "ops/fused_epilogue.h"
#include "passes/pass_util.h"
#include "passes/qdq16_match.h"
#include "passes/qdq_match.h"

namespace nfuse::passes {
namespace {

// Pattern (q is the QuantizeLinear offered):
//   DequantizeLinear(a_q, ...) -> a, DequantizeLinear(b_q, ...) -> b
//   Add | Mul(a, b) -> c -> QuantizeLinear(c_scale, c_zp) -> c_q
//     -> QLinearAdd | QLinearMul(a_q, a_scale, a_zp, b_q, b_scale, b_zp, c_scale, c_zp) -> c_q
// 8-bit chains take default-domain Q/DQ; 16-bit ones (W8A16) also "com.microsoft" Q/DQ, and
// become nfuse's 16-bit form of the op (ops/qlinear_binary_concat_pool.cpp).
Result<bool> try_fuse(ir::Graph& graph, ir::Node& q, PassLog& log) {
  auto y = activation_params_any_width(&q, true);
  if (!y) return false;
  ir::Node* op = producer_of(q.input(0));
  if (!op || (op->op_type != "Add" && op->op_type != "Mul") || ops::uses_legacy_broadcast(*op) ||
      ops::has_fused_epilogue(*op) || !op->implicit_inputs.empty() || op->inputs.size() != 2 ||
      !is_f32(op->output(0)) || sole_consumer(op->output(0)) != &q) {
    return false;
  }
  ir::Node* adq = qdq_producer(op->input(0), "DequantizeLinear");
  ir::Node* bdq = qdq_producer(op->input(1), "DequantizeLinear");
  auto a = activation_params_any_width(adq, false);
  auto b = activation_params_any_width(bdq, false);
  if (!a || !b || a->dtype != y->dtype || b->dtype != y->dtype) return false;

  const std::string fused_op = "QLinear" + op->op_type;
  const std::string chain = adq->label() + ", " + bdq->label() + " -> " + op->label() + " -> " + q.label();
  ir::Node* ql = graph.add_node(fused_op, op->name,
                                {adq->input(0), a->scale, a->zero_point, bdq->input(0), b->scale, b->zero_point,
                                 y->scale, y->zero_point},
                                {}, {});
  ql->domain = "com.microsoft";
  ql->opset = 1;
  graph.opsets.try_emplace("com.microsoft", 1);
  finish_qdq_rewrite(graph, {adq, bdq}, op, q, ql);
  log.add("fused " + chain + " into " + fused_op + " '" + ql->name + "'");
  return true;
}

}  // namespace

Status fuse_qdq_binary(ir::Graph& graph, PassLog& log) {
  auto r = rewrite_until_done(graph, [&](ir::Node& n) { return try_fuse(graph, n, log); });
  return r.status();
}

}  // namespace nfuse::passes
