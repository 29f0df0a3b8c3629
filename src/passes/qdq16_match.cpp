#include "passes/qdq16_match.h"

#include <cmath>
#include <string>

namespace nfuse::passes {

bool is_q16(ir::DType t) { return t == ir::DType::kU16 || t == ir::DType::kI16; }

bool is_qdq_op(const ir::Node* n, const char* op_type) {
  return n && n->op_type == op_type && (n->domain.empty() || n->domain == "ai.onnx" || n->domain == "com.microsoft");
}

ir::Node* qdq_producer(const ir::Value* v, const char* op_type) {
  if (!v || !v->producer || v->producer_output != 0 || v->is_constant()) return nullptr;
  return is_qdq_op(v->producer, op_type) ? v->producer : nullptr;
}

std::optional<QParams> tensor_params16(const ir::Node& n, ir::DType dtype) {
  if (n.attrs.get_int("block_size", 0) != 0 || !is_q16(dtype)) return std::nullopt;
  QParams p;
  p.dtype = dtype;
  p.scale = n.input(1);
  p.zero_point = n.input(2);
  const ir::Tensor* s = p.scale && p.scale->constant ? &*p.scale->constant : nullptr;
  const ir::Tensor* z = p.zero_point && p.zero_point->constant ? &*p.zero_point->constant : nullptr;
  if (!s || s->dtype() != ir::DType::kF32 || s->numel() != 1) return std::nullopt;
  p.s = s->data<float>()[0];
  if (!(p.s > 0.0f) || !std::isfinite(p.s)) return std::nullopt;
  if (!z || z->dtype() != dtype || z->numel() != 1) return std::nullopt;
  p.zp = z->get_int(0);
  return p;
}

std::optional<QParams> activation_params_any_width(const ir::Node* n, bool quantize) {
  const ir::Value* data = n ? (quantize ? n->output(0) : n->input(0)) : nullptr;
  if (!data) return std::nullopt;
  if (is_q16(data->type.dtype)) {
    if (!is_qdq_op(n, quantize ? "QuantizeLinear" : "DequantizeLinear")) return std::nullopt;
    return tensor_params16(*n, data->type.dtype);
  }
  return quantize ? activation_q_params(n) : activation_dq_params(n);
}

}  // namespace nfuse::passes
