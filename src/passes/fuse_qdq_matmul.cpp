#include "passes/fuse_qdq_matmul.h"

#include "ops/fused_epilogue.h"
#include "passes/pass_util.h"
#include "passes/qdq16_match.h"
#include "passes/qdq_match.h"

namespace nfuse::passes {
namespace {

bool is_op(const ir::Node* n, const char* op) { return n && n->op_type == op && n->domain.empty(); }

// Pattern (q is the QuantizeLinear offered):
//   DequantizeLinear(a_q, a_scale, a_zp) -> a
//   DequantizeLinear(b_q const s8 [K, N], b_scale const, b_zp = 0) -> b
//   MatMul(a, b) -> c -> QuantizeLinear(y_scale, y_zp) -> y_q
//     -> QLinearMatMul(a_q, a_scale, a_zp, b_q, b_scale, b_zp, y_scale, y_zp) -> y_q
// c feeds only the QuantizeLinear; a's and b's DequantizeLinear may have other users (then they
// stay). With 16-bit a_q and y_q (W8A16; Q/DQ of the default domain or "com.microsoft") the
// chain becomes nfuse.QLinearMatMul16 (src/ops/qlinear16.cpp) instead.
Result<bool> try_fuse(ir::Graph& graph, ir::Node& q, PassLog& log) {
  if (!is_qdq_op(&q, "QuantizeLinear") || !q.input(2)) return false;
  const ir::DType yt = q.input(2)->type.dtype;
  const bool wide = is_q16(yt);
  if (!wide && !is_op(&q, "QuantizeLinear")) return false;
  auto params = [wide](const ir::Node& n, ir::DType t) { return wide ? tensor_params16(n, t) : tensor_params(n, t); };
  auto dq_of = [wide](const ir::Value* v) {
    return wide ? qdq_producer(v, "DequantizeLinear") : producer_of(v, "DequantizeLinear");
  };
  auto y = params(q, yt);
  if (!y) return false;
  ir::Node* mm = producer_of(q.input(0), "MatMul");
  if (!mm || ops::has_fused_epilogue(*mm) || !mm->implicit_inputs.empty() || sole_consumer(mm->output(0)) != &q) {
    return false;
  }
  ir::Node* adq = dq_of(mm->input(0));
  if (!adq || !adq->input(0) || !adq->input(2)) return false;
  auto a = params(*adq, adq->input(0)->type.dtype);
  if (!a || adq->input(0)->type.shape.rank() < 2) return false;
  auto b = weight_params(dq_of(mm->input(1)), 2, 2, 1, wide);
  if (!b) return false;

  ir::Value* b_zp = b->dq->input(2);
  if (!b_zp) b_zp = add_constant(graph, mm->name + "_b_zero_point", ir::Tensor::from_vector<int8_t>({0}, {}));
  std::vector<ir::Value*> inputs = {adq->input(0), a->scale, a->zero_point, b->dq->input(0),
                                    b->dq->input(1), b_zp,    y->scale,     y->zero_point};
  ir::Value* out = q.output(0);
  const std::string chain = adq->label() + " -> " + mm->label() + " -> " + q.label();
  const char* fused_op = wide ? "QLinearMatMul16" : "QLinearMatMul";
  ir::Node* ql = graph.add_node(fused_op, mm->name, std::move(inputs), {}, {});
  if (wide) {
    ql->domain = "nfuse";
    ql->opset = 1;
  } else {
    ql->opset = std::max(mm->opset, 10);
  }
  for (ir::Node* dq : {adq, b->dq})
    if (only_used_by(dq->output(0), {mm})) graph.remove_node(dq);
  graph.remove_node(mm);
  graph.remove_node(&q);
  q.outputs[0] = nullptr;  // `out` has one producer from here on: the QLinearMatMul
  ql->outputs = {out};
  log.add("fused " + chain + " into " + (wide ? "nfuse." : "") + fused_op + " '" + ql->name + "'" +
          (b->scales.size() > 1 ? " (per-column weights)" : ""));
  return true;
}

}  // namespace

Status fuse_qdq_matmul(ir::Graph& graph, PassLog& log) {
  auto r = rewrite_until_done(graph, [&](ir::Node& n) { return try_fuse(graph, n, log); });
  return r.status();
}

}  // namespace nfuse::passes
