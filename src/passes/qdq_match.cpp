#include "passes/qdq_match.h"

#include <cmath>

#include "ops/op_helpers.h"
#include "passes/pass_util.h"

namespace nfuse::passes {
namespace {

const ir::Tensor* constant(const ir::Value* v) { return v && v->constant ? &*v->constant : nullptr; }
bool plain_qdq(const ir::Node& n) { return n.attrs.get_int("block_size", 0) == 0; }
bool valid_scale(float s) { return s > 0.0f && std::isfinite(s); }

}  // namespace

bool is_q8(ir::DType t) { return t == ir::DType::kU8 || t == ir::DType::kI8; }

std::optional<QParams> tensor_params(const ir::Node& n, ir::DType dtype) {
  if (!plain_qdq(n) || !is_q8(dtype)) return std::nullopt;
  QParams p;
  p.dtype = dtype;
  p.scale = n.input(1);
  p.zero_point = n.input(2);
  const ir::Tensor* s = constant(p.scale);
  const ir::Tensor* z = constant(p.zero_point);
  if (!s || s->dtype() != ir::DType::kF32 || s->numel() != 1 || !valid_scale(s->data<float>()[0])) return std::nullopt;
  if (!z || z->dtype() != dtype || z->numel() != 1) return std::nullopt;
  p.s = s->data<float>()[0];
  p.zp = z->get_int(0);
  return p;
}

std::optional<WeightParams> weight_params(ir::Node* dq, int min_rank, int max_rank, int axis, bool contrib_ok) {
  if (!dq || dq->op_type != "DequantizeLinear" || !plain_qdq(*dq)) return std::nullopt;
  if (!dq->domain.empty() && !(contrib_ok && dq->domain == "com.microsoft")) return std::nullopt;
  const ir::Tensor* w = constant(dq->input(0));
  const ir::Tensor* s = constant(dq->input(1));
  if (!w || w->dtype() != ir::DType::kI8 || w->rank() < min_rank || w->rank() > max_rank || !s ||
      s->dtype() != ir::DType::kF32)
    return std::nullopt;
  if (s->numel() != 1) {
    auto a = ops::normalize_axis(dq->attrs.get_int("axis", 1), w->rank());
    if (s->rank() != 1 || !a || *a != axis || s->numel() != w->dim(axis)) return std::nullopt;
  }
  WeightParams p{dq, s->to_float_vector()};
  for (float v : p.scales)
    if (!valid_scale(v)) return std::nullopt;
  if (const ir::Value* zv = dq->input(2)) {
    const ir::Tensor* z = constant(zv);
    if (!z || z->dtype() != ir::DType::kI8 || z->numel() != s->numel()) return std::nullopt;
    for (int64_t i = 0; i < z->numel(); ++i)
      if (z->get_int(i) != 0) return std::nullopt;
  }
  return p;
}

std::optional<QParams> activation_dq_params(const ir::Node* dq) {
  if (!dq || dq->op_type != "DequantizeLinear" || !dq->domain.empty() || !dq->input(0) || !dq->input(2)) {
    return std::nullopt;
  }
  return tensor_params(*dq, dq->input(0)->type.dtype);
}

std::optional<QParams> activation_q_params(const ir::Node* q) {
  if (!q || q->op_type != "QuantizeLinear" || !q->domain.empty() || !q->input(2)) return std::nullopt;
  return tensor_params(*q, q->input(2)->type.dtype);
}

bool same_qparams(const QParams& a, const QParams& b) { return a.dtype == b.dtype && a.s == b.s && a.zp == b.zp; }

void finish_qdq_rewrite(ir::Graph& graph, const std::vector<ir::Node*>& dqs, ir::Node* op, ir::Node& q,
                        ir::Node* fused) {
  ir::Value* out = q.output(0);
  for (ir::Node* dq : dqs)
    if (only_used_by(dq->output(0), {op})) graph.remove_node(dq);  // removing twice is harmless
  graph.remove_node(op);
  graph.remove_node(&q);
  q.outputs[0] = nullptr;  // `out` has one producer from here on: `fused`
  fused->outputs = {out};
}

}  // namespace nfuse::passes
