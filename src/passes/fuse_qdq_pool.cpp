#include "passes/fuse_qdq_pool.h"

#include <algorithm>

#include "passes/pass_util.h"
#include "passes/qdq_match.h"

namespace nfuse::passes {
namespace {

bool no_dilation(const ir::Node& pool) {
  const std::vector<int64_t> d = pool.attrs.get_ints("dilations");
  return std::all_of(d.begin(), d.end(), [](int64_t v) { return v == 1; });
}

// Pattern (q is the QuantizeLinear offered):
//   DequantizeLinear(x_q, x_scale, x_zp) -> x -> pool -> p -> QuantizeLinear(y_scale, y_zp) -> y_q
//     GlobalAveragePool -> QLinearGlobalAveragePool(x_q, x_scale, x_zp, y_scale, y_zp) -> y_q
//     AveragePool       -> QLinearAveragePool(x_q, x_scale, x_zp, y_scale, y_zp; pool attrs) -> y_q
//     MaxPool           -> MaxPool(x_q) -> y_q, when (x_scale, x_zp) == (y_scale, y_zp)
Result<bool> try_fuse(ir::Graph& graph, ir::Node& q, PassLog& log) {
  auto y = activation_q_params(&q);
  if (!y) return false;
  ir::Node* pool = producer_of(q.input(0));
  if (!pool || !pool->implicit_inputs.empty() || !is_f32(pool->output(0)) || sole_consumer(pool->output(0)) != &q) {
    return false;
  }
  const std::string& op = pool->op_type;
  if (op != "GlobalAveragePool" && op != "AveragePool" && op != "MaxPool") return false;
  if (op == "AveragePool" && !no_dilation(*pool)) return false;
  if (op == "MaxPool" && pool->outputs.size() > 1 && pool->outputs[1]) return false;
  ir::Node* dq = producer_of(pool->input(0), "DequantizeLinear");
  auto x = activation_dq_params(dq);
  if (!x || x->dtype != y->dtype) return false;
  if (op == "MaxPool" && !same_qparams(*x, *y)) return false;

  const std::string chain = dq->label() + " -> " + pool->label() + " -> " + q.label();
  ir::Node* fused = nullptr;
  if (op == "MaxPool") {
    fused = graph.add_node("MaxPool", pool->name, {dq->input(0)}, {}, pool->attrs);
    fused->opset = std::max(pool->opset, 12);
  } else {
    ir::Attributes attrs = pool->attrs;
    attrs.erase("dilations");
    fused = graph.add_node("QLinear" + op, pool->name, {dq->input(0), x->scale, x->zero_point, y->scale, y->zero_point},
                           {}, std::move(attrs));
    fused->domain = "com.microsoft";
    fused->opset = 1;
    graph.opsets.try_emplace("com.microsoft", 1);
  }
  finish_qdq_rewrite(graph, {dq}, pool, q, fused);
  log.add("fused " + chain + " into " + fused->op_type + " '" + fused->name + "'" +
          (op == "MaxPool" ? " on the quantized tensor" : ""));
  return true;
}

}  // namespace

Status fuse_qdq_pool(ir::Graph& graph, PassLog& log) {
  auto r = rewrite_until_done(graph, [&](ir::Node& n) { return try_fuse(graph, n, log); });
  return r.status();
}

}  // namespace nfuse::passes
