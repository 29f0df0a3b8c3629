#include "passes/fuse_qdq_conv_transpose.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ops/fused_epilogue.h"
#include "passes/pass_util.h"
#include "passes/qdq16_match.h"
#include "passes/qdq_conv_operands.h"
#include "passes/qdq_match.h"

namespace nfuse::passes {
namespace {

bool is_op(const ir::Node* n, const char* op) { return n && n->op_type == op && n->domain.empty(); }

bool all_equal(const std::vector<int64_t>& v, int64_t x) {
  return std::all_of(v.begin(), v.end(), [x](int64_t e) { return e == x; });
}

// The block size k of a ConvTranspose with weight [Ci, Co, k, k] whose taps do not overlap
// (kernel == stride, no padding, output padding or dilation, group 1), 0 otherwise.
int64_t upsampling_block(const ir::Node& ct, const ir::Tensor& w) {
  if (w.rank() != 4 || w.dim(2) != w.dim(3) || w.dim(2) < 1) return 0;
  const int64_t k = w.dim(2);
  const ir::Attributes& a = ct.attrs;
  if (a.get_int("group", 1) != 1) return 0;
  if (a.get_string("auto_pad", "NOTSET") != "NOTSET" && a.get_string("auto_pad", "NOTSET") != "VALID") return 0;
  const std::vector<int64_t> ks = a.get_ints("kernel_shape", {k, k});
  const std::vector<int64_t> strides = a.get_ints("strides", {1, 1});
  if (ks.size() != 2 || !all_equal(ks, k) || strides.size() != 2 || !all_equal(strides, k)) return 0;
  if (!all_equal(a.get_ints("pads", {0, 0, 0, 0}), 0) || !all_equal(a.get_ints("output_padding", {0, 0}), 0) ||
      !all_equal(a.get_ints("dilations", {1, 1}), 1) || a.has("output_shape"))
    return 0;
  return k;
}

// Pattern in the header; q is the QuantizeLinear offered.
Result<bool> try_fuse(ir::Graph& graph, ir::Node& q, PassLog& log) {
  auto y = activation_params_any_width(&q, true);
  if (!y) return false;
  const bool wide = is_q16(y->dtype);
  ir::Node* ct = producer_of(q.input(0));
  ir::Node* act = nullptr;
  std::optional<std::pair<int64_t, int64_t>> clamp;  // 16-bit: the activation as y_min / y_max
  if (is_op(ct, "Relu") || is_op(ct, "Clip")) {
    act = ct;
    if (sole_consumer(act->output(0)) != &q) return false;
    if (!activation_implied(*act, *y)) {
      clamp = wide ? activation_bounds(*act, *y) : std::nullopt;
      if (!clamp || clamp->first > clamp->second) return false;
    }
    ct = producer_of(act->input(0));
  }
  if (!is_op(ct, "ConvTranspose") || ops::has_fused_epilogue(*ct) || !ct->implicit_inputs.empty()) return false;
  if (sole_consumer(ct->output(0)) != (act ? act : &q)) return false;
  ir::Node* xdq = wide ? qdq_producer(ct->input(0), "DequantizeLinear") : producer_of(ct->input(0), "DequantizeLinear");
  auto x = activation_params_any_width(xdq, false);
  if (!x || is_q16(x->dtype) != wide) return false;
  ir::Node* wdq = wide ? qdq_producer(ct->input(1), "DequantizeLinear") : producer_of(ct->input(1), "DequantizeLinear");
  auto w = weight_params(wdq, 4, 4, 1, wide);
  if (!w) return false;
  const ir::Tensor& wq = *w->dq->input(0)->constant;
  const int64_t k = upsampling_block(*ct, wq);
  if (k == 0) return false;
  const int64_t ci = wq.dim(0), co = wq.dim(1), taps = k * k, outs = co * taps;
  ir::Node* bias_dq = nullptr;
  bool bias_as_is = false;
  auto bias = int32_bias(*ct, x->s, w->scales, co, &bias_dq, &bias_as_is, wide);
  if (!bias) return false;

  // One output channel per (co, ky, kx), its weights, scale and bias those of co.
  ir::Tensor w1 = ir::Tensor::allocate(ir::DType::kI8, {outs, ci, 1, 1});
  const int8_t* src = wq.data<int8_t>();
  for (int64_t o = 0; o < outs; ++o)
    for (int64_t c = 0; c < ci; ++c) w1.data<int8_t>()[o * ci + c] = src[(c * co + o / taps) * taps + o % taps];
  std::vector<float> scales;
  for (int64_t o = 0; o < outs; ++o) scales.push_back(w->scales.size() == 1 ? w->scales[0] : w->scales[o / taps]);
  const std::string base = ct->name;
  std::vector<ir::Value*> inputs = {
      xdq->input(0),
      x->scale,
      x->zero_point,
      add_constant(graph, base + "_w_taps", std::move(w1)),
      add_constant(graph, base + "_w_scale_taps", ir::Tensor::from_vector<float>(scales, {outs})),
      add_constant(graph, base + "_w_zero_point_taps",
                   ir::Tensor::from_vector<int8_t>(std::vector<int8_t>(outs, 0), {outs})),
      y->scale,
      y->zero_point};
  if (!bias->empty()) {
    std::vector<int32_t> b;
    for (int64_t o = 0; o < outs; ++o) b.push_back(bias->data<int32_t>()[o / taps]);
    inputs.push_back(add_constant(graph, base + "_bias_taps", ir::Tensor::from_vector<int32_t>(b, {outs})));
  }
  ir::Attributes conv_attrs;
  conv_attrs.set("kernel_shape", std::vector<int64_t>{1, 1});
  conv_attrs.set("strides", std::vector<int64_t>{1, 1});
  conv_attrs.set("pads", std::vector<int64_t>{0, 0, 0, 0});
  conv_attrs.set("dilations", std::vector<int64_t>{1, 1});
  conv_attrs.set("group", int64_t{1});
  ir::Value* taps_q = graph.add_unique_value(q.output(0)->name + "_taps", {y->dtype, {}});
  // The multiply-adds keep the ConvTranspose's name (what the reports list it by).
  ir::Node* qconv =
      graph.add_node(wide ? "QLinearConv16" : "QLinearConv", base, std::move(inputs), {taps_q}, conv_attrs);
  if (wide) {
    qconv->domain = "nfuse";
    qconv->opset = 1;
    if (clamp) {
      qconv->attrs.set("y_min", clamp->first);
      qconv->attrs.set("y_max", clamp->second);
    }
  } else {
    qconv->opset = std::max(ct->opset, 10);
  }
  ir::Attributes d2s;
  d2s.set("blocksize", k);
  d2s.set("mode", std::string("CRD"));
  ir::Node* shuffle = graph.add_node("DepthToSpace", base + "_to_space", {taps_q}, {}, d2s);
  shuffle->opset = std::max(ct->opset, 11);

  const std::string chain =
      xdq->label() + " -> " + ct->label() + (act ? " -> " + act->label() : "") + " -> " + q.label();
  for (ir::Node* dq : {xdq, w->dq, bias_dq})
    if (dq && only_used_by(dq->output(0), {ct})) graph.remove_node(dq);
  if (act) graph.remove_node(act);
  finish_qdq_rewrite(graph, {}, ct, q, shuffle);
  log.add("fused " + chain + " into " + (wide ? "nfuse.QLinearConv16" : "QLinearConv") + " '" + qconv->name +
          "' (1x1, " + std::to_string(outs) + " channels) and DepthToSpace '" + shuffle->name + "'");
  return true;
}

}  // namespace

Status fuse_qdq_conv_transpose(ir::Graph& graph, PassLog& log) {
  auto r = rewrite_until_done(graph, [&](ir::Node& n) { return try_fuse(graph, n, log); });
  return r.status();
}

}  // namespace nfuse::passes
