#include "passes/fuse_qdq_resize.h"

#include <algorithm>

#include "passes/pass_util.h"
#include "passes/qdq16_match.h"
#include "passes/qdq_match.h"

namespace nfuse::passes {
namespace {

// The per-tensor parameters of an activation's QuantizeLinear (`quantize`) or DequantizeLinear:
// 8-bit ones in the default domain, 16-bit ones in it or in "com.microsoft" (W8A16 graphs).
std::optional<QParams> params_of(const ir::Node* n, bool quantize) {
  const ir::Value* data = n ? (quantize ? n->output(0) : n->input(0)) : nullptr;
  if (!data) return std::nullopt;
  if (is_q16(data->type.dtype)) {
    if (!is_qdq_op(n, quantize ? "QuantizeLinear" : "DequantizeLinear")) return std::nullopt;
    return tensor_params16(*n, data->type.dtype);
  }
  return quantize ? activation_q_params(n) : activation_dq_params(n);
}

Result<bool> try_fuse(ir::Graph& graph, ir::Node& q, PassLog& log) {
  auto y = params_of(&q, true);
  if (!y) return false;
  ir::Node* resize = producer_of(q.input(0));
  if (!resize || resize->op_type != "Resize" || !resize->domain.empty() || !resize->implicit_inputs.empty() ||
      !is_f32(resize->output(0)) || sole_consumer(resize->output(0)) != &q)
    return false;
  if (resize->attrs.get_string("mode", "nearest") != "nearest" || resize->opset < 11) return false;
  // tf_crop_and_resize writes extrapolation_value (an f32) outside the crop: not a copied value.
  if (resize->attrs.get_string("coordinate_transformation_mode", "half_pixel") == "tf_crop_and_resize") return false;
  ir::Node* dq = qdq_producer(resize->input(0), "DequantizeLinear");
  auto x = params_of(dq, false);
  if (!x || !same_qparams(*x, *y)) return false;

  const std::string chain = dq->label() + " -> " + resize->label() + " -> " + q.label();
  std::vector<ir::Value*> inputs = resize->inputs;
  inputs[0] = dq->input(0);
  ir::Node* fused = graph.add_node("Resize", resize->name, std::move(inputs), {}, resize->attrs);
  fused->opset = resize->opset;
  finish_qdq_rewrite(graph, {dq}, resize, q, fused);
  log.add("fused " + chain + " into Resize '" + fused->name + "' on the quantized tensor");
  return true;
}

}  // namespace

Status fuse_qdq_resize(ir::Graph& graph, PassLog& log) {
  auto r = rewrite_until_done(graph, [&](ir::Node& n) { return try_fuse(graph, n, log); });
  return r.status();
}

}  // namespace nfuse::passes
