#include "passes/fuse_activation.h"

#include <limits>

#include "ops/fused_epilogue.h"
#include "passes/pass_util.h"

namespace nfuse::passes {
namespace {

using ops::FusedActivation;

// A matched activation: what to fuse, the value it ends in and the nodes it replaces.
struct Match {
  FusedActivation act = FusedActivation::kNone;
  std::vector<float> params;
  ir::Value* out = nullptr;
  std::vector<ir::Node*> nodes;
};

bool is_op(const ir::Node* n, const char* op) { return n && n->op_type == op && n->domain.empty(); }

// Clip's bounds: constant inputs 1 and 2 (opset 11+) or attributes min/max (before); absent
// bounds are infinite. nullopt when a bound is not constant.
std::optional<std::pair<float, float>> clip_bounds(const ir::Node& clip) {
  float lo = clip.attrs.get_float("min", -std::numeric_limits<float>::infinity());
  float hi = clip.attrs.get_float("max", std::numeric_limits<float>::infinity());
  for (int i = 1; i <= 2; ++i) {
    const ir::Value* v = clip.input(i);
    if (!v) continue;
    auto s = scalar_constant(v);
    if (!s) return std::nullopt;
    (i == 1 ? lo : hi) = static_cast<float>(*s);
  }
  return std::make_pair(lo, hi);
}

// Pattern: p -> Relu | Clip | LeakyRelu | Sigmoid | Tanh | HardSigmoid | HardSwish | Gelu
// (nfuse.Gelu, what recognize_gelu makes of an exporter's Erf or Tanh pattern, or ONNX Gelu-20)
std::optional<Match> match_single(ir::Value* p) {
  ir::Node* a = sole_consumer(p);
  const bool gelu = a && a->op_type == "Gelu" && (a->domain.empty() || a->domain == "nfuse");
  if (!a || (!a->domain.empty() && !gelu) || a->input(0) != p) return std::nullopt;
  Match m{FusedActivation::kNone, {}, a->output(0), {a}};
  const std::string& op = a->op_type;
  if (gelu) {
    const std::string form = a->attrs.get_string("approximate", "none");
    if (form != "none" && form != "tanh") return std::nullopt;
    m.act = form == "tanh" ? FusedActivation::kGeluTanh : FusedActivation::kGelu;
  } else if (op == "Relu") {
    m.act = FusedActivation::kRelu;
  } else if (op == "Clip") {
    auto b = clip_bounds(*a);
    if (!b) return std::nullopt;
    m.act = FusedActivation::kClip;
    m.params = {b->first, b->second};
  } else if (op == "LeakyRelu") {
    m.act = FusedActivation::kLeakyRelu;
    m.params = {a->attrs.get_float("alpha", 0.01f)};
  } else if (op == "Sigmoid") {
    m.act = FusedActivation::kSigmoid;
  } else if (op == "Tanh") {
    m.act = FusedActivation::kTanh;
  } else if (op == "HardSigmoid") {
    m.act = FusedActivation::kHardSigmoid;
    m.params = {a->attrs.get_float("alpha", 0.2f), a->attrs.get_float("beta", 0.5f)};
  } else if (op == "HardSwish") {
    m.act = FusedActivation::kHardSwish;
    m.params = {1.0f / 6.0f, 0.5f};
  } else {
    return std::nullopt;
  }
  return m;
}

// The other input of binary `n` when one input is `v`.
ir::Value* other_input(const ir::Node& n, const ir::Value* v) {
  if (n.num_inputs() != 2) return nullptr;
  if (n.input(0) == v) return n.input(1);
  if (n.input(1) == v) return n.input(0);
  return nullptr;
}

// `v` scaled by 1/m: Div(v, m) or Mul(v, 1/m), v's only use.
ir::Node* divide_by(ir::Value* v, double m) {
  ir::Node* d = sole_consumer(v);
  if (is_op(d, "Div") && d->input(0) == v && is_scalar_constant(d->input(1), m)) return d;
  if (is_op(d, "Mul") && is_scalar_constant(other_input(*d, v), 1.0 / m)) return d;
  return nullptr;
}

// Pattern: p -> HardSigmoid -> h;  Mul(p, h)  ->  HardSwish(alpha, beta)
//          p -> Sigmoid -> h;      Mul(p, h)  ->  SiLU
std::optional<Match> match_mul_gate(ir::Value* p) {
  if (p->is_graph_output || p->consumers.size() != 2) return std::nullopt;
  for (ir::Node* h : p->consumers) {
    const bool hard = is_op(h, "HardSigmoid");
    if (!hard && !is_op(h, "Sigmoid")) continue;
    ir::Node* mul = sole_consumer(h->output(0));
    if (!is_op(mul, "Mul") || other_input(*mul, h->output(0)) != p || !only_used_by(p, {h, mul})) continue;
    if (!hard) return Match{FusedActivation::kSiLU, {}, mul->output(0), {h, mul}};
    return Match{FusedActivation::kHardSwish,
                 {h->attrs.get_float("alpha", 0.2f), h->attrs.get_float("beta", 0.5f)},
                 mul->output(0),
                 {h, mul}};
  }
  return std::nullopt;
}

// Pattern: a = Add(p, b); c = Clip(a, 0, m); then
//            Div(c, m) [or Mul(c, 1/m)] alone          ->  HardSigmoid(1/m, b/m)
//            Mul(p, Div(c, m))  or  Div(Mul(p, c), m)  ->  HardSwish(1/m, b/m)
std::optional<Match> match_add_clip(ir::Value* p) {
  if (p->is_graph_output) return std::nullopt;
  for (ir::Node* add : p->consumers) {
    if (!is_op(add, "Add")) continue;
    auto b = scalar_constant(other_input(*add, p));
    ir::Node* clip = sole_consumer(add->output(0));
    if (!b || !is_op(clip, "Clip") || clip->input(0) != add->output(0)) continue;
    auto bounds = clip_bounds(*clip);
    if (!bounds || bounds->first != 0.0f || !(bounds->second > 0.0f) ||
        bounds->second == std::numeric_limits<float>::infinity()) {
      continue;
    }
    const double m = bounds->second;
    const std::vector<float> params = {static_cast<float>(1.0 / m), static_cast<float>(*b / m)};
    ir::Value* c = clip->output(0);
    if (ir::Node* div = divide_by(c, m)) {
      ir::Node* mul = sole_consumer(div->output(0));
      if (is_op(mul, "Mul") && other_input(*mul, div->output(0)) == p && only_used_by(p, {add, mul})) {
        return Match{FusedActivation::kHardSwish, params, mul->output(0), {add, clip, div, mul}};
      }
      if (only_used_by(p, {add})) return Match{FusedActivation::kHardSigmoid, params, div->output(0), {add, clip, div}};
      continue;
    }
    ir::Node* mul = sole_consumer(c);
    if (!is_op(mul, "Mul") || other_input(*mul, c) != p || !only_used_by(p, {add, mul})) continue;
    if (ir::Node* div = divide_by(mul->output(0), m)) {
      return Match{FusedActivation::kHardSwish, params, div->output(0), {add, clip, mul, div}};
    }
  }
  return std::nullopt;
}

bool is_fusable_producer(const ir::Node& n) {
  if (n.num_outputs() != 1 || !is_f32(n.output(0)) || n.attrs.has(ops::kFusedActivationAttr)) return false;
  // fuse_dynamic_quant runs first, so ONNX Runtime's dynamically quantized convolutions arrive
  // here as one node whose float epilogue can take the activation as well.
  if (n.domain == "nfuse") return n.op_type == "DynamicQuantConv";
  if (!n.domain.empty()) return false;
  return n.op_type == "Conv" || n.op_type == "ConvTranspose" || n.op_type == "Gemm" || n.op_type == "MatMul";
}

Result<bool> try_fuse(ir::Graph& graph, ir::Node& p, PassLog& log) {
  if (!is_fusable_producer(p)) return false;
  ir::Value* y = p.output(0);
  if (y->is_graph_output) return false;
  std::optional<Match> m = match_single(y);
  if (!m) m = match_mul_gate(y);
  if (!m) m = match_add_clip(y);
  // The activation must not change the shape (a broadcasting constant could raise the rank).
  if (!m || !is_f32(m->out) || !same_rank_and_static_dims(m->out->type.shape, y->type.shape)) return false;
  std::string chain;
  for (const ir::Node* n : m->nodes) chain += (chain.empty() ? "" : " -> ") + n->label();
  ops::set_fused_activation(p, m->act, m->params);
  p.outputs[0] = m->out;
  for (ir::Node* n : m->nodes) graph.remove_node(n);
  log.add("fused " + chain + " into " + p.label() + " as " + ops::fused_activation_name(m->act));
  return true;
}

}  // namespace

Status fuse_activation(ir::Graph& graph, PassLog& log) {
  auto r = rewrite_until_done(graph, [&](ir::Node& n) { return try_fuse(graph, n, log); });
  return r.status();
}

}  // namespace nfuse::passes
