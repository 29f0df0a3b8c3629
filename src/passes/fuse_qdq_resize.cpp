#include "passes/fuse_qdq_resize.h"

#include <algorithm>

#include "passes/pass_util.h"
#include "passes/qdq16_match.h"
#include "passes/qdq_match.h"

namespace nfuse::passes {
namespace {

Result<bool> try_fuse(ir::Graph& graph, ir::Node& q, PassLog& log) {
  auto y = activation_params_any_width(&q, true);
  if (!y) return false;
  ir::Node* resize = producer_of(q.input(0));
  if (!resize || resize->op_type != "Resize" || !resize->domain.empty() || !resize->implicit_inputs.empty() ||
      !is_f32(resize->output(0)) || sole_consumer(resize->output(0)) != &q)
    return false;
  if (resize->attrs.get_string("mode", "nearest") != "nearest" || resize->opset < 11) return false;
  // tf_crop_and_resize writes extrapolation_value (an f32) outside the crop: not a copied value.
  if (resize->attrs.get_string("coordinate_transformation_mode", "half_pixel") == "tf_crop_and_resize") return false;
  ir::Node* dq = qdq_producer(resize->input(0), "DequantizeLinear");
  auto x = activation_params_any_width(dq, false);
  if (!x) return false;

  const std::string chain = dq->label() + " -> " + resize->label() + " -> " + q.label();
  std::vector<ir::Value*> inputs = resize->inputs;
  inputs[0] = dq->input(0);
  const bool requantize = !same_qparams(*x, *y);
  if (requantize) {
    // Quantize(Resize(v)) = Resize(Quantize(v)) for a Resize that only copies values, and the
    // copy of q that makes the codes runs on the Resize's input (smaller for an upsampling);
    // the DequantizeLinear keeps its other readers.
    ir::Value* codes =
        graph.add_unique_value(q.output(0)->name + "_before_resize", {y->dtype, dq->output(0)->type.shape});
    std::vector<ir::Value*> q_inputs = q.inputs;
    q_inputs[0] = dq->output(0);
    ir::Node* early_q =
        graph.add_node("QuantizeLinear", q.name + "_before_resize", std::move(q_inputs), {codes}, q.attrs);
    early_q->opset = q.opset;
    early_q->domain = q.domain;
    inputs[0] = codes;
  }
  ir::Node* fused = graph.add_node("Resize", resize->name, std::move(inputs), {}, resize->attrs);
  fused->opset = resize->opset;
  finish_qdq_rewrite(graph, requantize ? std::vector<ir::Node*>{} : std::vector<ir::Node*>{dq}, resize, q, fused);
  log.add("fused " + chain + " into Resize '" + fused->name + "' on the quantized tensor" +
          (requantize ? " (its input requantized to the output's parameters first)" : ""));
  return true;
}

}  // namespace

Status fuse_qdq_resize(ir::Graph& graph, PassLog& log) {
  auto r = rewrite_until_done(graph, [&](ir::Node& n) { return try_fuse(graph, n, log); });
  return r.status();
}

}  // namespace nfuse::passes
