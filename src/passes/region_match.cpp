#include "passes/region_match.h"

#include <limits>
#include <set>
#include <unordered_map>

#include "ops/qlinear_region.h"
#include "passes/pass_util.h"

namespace nfuse::passes {
namespace {

// A bound on the region: activations are a handful of ops; more means something else is going on.
constexpr size_t kMaxRegionNodes = 16;

const ir::Tensor* constant(const ir::Value* v) { return v && v->constant ? &*v->constant : nullptr; }

// Default-domain ops that map each element on its own (one data input; Clip's bounds are
// constants checked below).
const std::set<std::string>& unary_ops() {
  static const std::set<std::string> ops = {"Abs",   "Acos",           "Acosh",     "Asin",       "Asinh",
                                            "Atan",  "Atanh",          "Ceil",      "Celu",       "Clip",
                                            "Cos",   "Cosh",           "Elu",       "Erf",        "Exp",
                                            "Floor", "HardSigmoid",    "HardSwish", "Identity",   "LeakyRelu",
                                            "Log",   "Mish",           "Neg",       "Reciprocal", "Relu",
                                            "Round", "Selu",           "Sigmoid",   "Sign",       "Sin",
                                            "Sinh",  "Softplus",       "Softsign",  "Sqrt",       "Tan",
                                            "Tanh",  "ThresholdedRelu"};
  return ops;
}

// Default-domain binary element-wise ops: inside a region each operand is a region value (all
// have x's shape) or a one-element constant.
const std::set<std::string>& binary_ops() {
  static const std::set<std::string> ops = {"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "PRelu"};
  return ops;
}

// A one-element constant that cannot broadcast x (of rank `x_rank`, -1 unknown) to a larger shape.
bool scalar_like(const ir::Value* v, int x_rank) {
  const ir::Tensor* c = constant(v);
  return c && c->numel() == 1 && (c->rank() == 0 || c->rank() <= x_rank);
}

// A constant operand a region may hold: one element, or one per channel. *channels: the
// per-channel count it implies (unchanged for one element); false on a mismatch.
bool region_constant(const ir::Value* v, int x_rank, int64_t* channels) {
  if (scalar_like(v, x_rank)) return true;
  const int64_t c = constant(v) ? channel_constant_count(*constant(v), x_rank) : 0;
  if (c == 0 || (*channels > 1 && *channels != c)) return false;
  *channels = c;
  return true;
}

bool is_elementwise(const ir::Node& n, int x_rank, int64_t* channels) {
  if (n.outputs.size() != 1 || !n.output(0) || !n.implicit_inputs.empty()) return false;
  if (!ir::dtype_is_float(n.output(0)->type.dtype)) return false;
  if (n.domain == "nfuse") return n.op_type == "Gelu" && n.num_inputs() == 1;
  if (!n.domain.empty() && n.domain != "ai.onnx") return false;
  if (unary_ops().count(n.op_type)) {
    if (!n.input(0) || n.input(0)->constant) return false;
    for (int i = 1; i < n.num_inputs(); ++i)
      if (n.input(i) && !scalar_like(n.input(i), x_rank)) return false;
    return n.op_type == "Clip" || n.num_inputs() == 1;
  }
  if (binary_ops().count(n.op_type)) {
    if (n.num_inputs() != 2 || !n.input(0) || !n.input(1)) return false;
    int data = 0;
    for (int i = 0; i < 2; ++i) {
      if (!n.input(i)->constant)
        ++data;
      else if (n.op_type == "PRelu" ? !scalar_like(n.input(i), x_rank) : !region_constant(n.input(i), x_rank, channels))
        return false;
    }
    return data > 0;
  }
  return false;
}

}  // namespace

bool is_region_binary_op(const std::string& op_type) { return binary_ops().count(op_type) != 0; }

std::optional<ElementwiseRegion> find_elementwise_region(ir::Graph& graph, ir::Node& q,
                                                         const std::function<bool(const ir::Node&)>& is_root) {
  ElementwiseRegion r;
  // The region's output has x's shape: its rank bounds the constants' ranks.
  const ir::Shape& ys = q.input(0)->type.shape;
  const int x_rank = ys.rank_known() ? ys.rank() : -1;
  r.x_rank = x_rank;
  std::set<const ir::Node*> members;
  std::vector<ir::Value*> stack = {q.input(0)};
  std::set<const ir::Value*> seen;
  while (!stack.empty()) {
    ir::Value* v = stack.back();
    stack.pop_back();
    if (!seen.insert(v).second) continue;
    ir::Node* p = v->constant ? nullptr : v->producer;
    if (!p) return std::nullopt;
    if (is_root(*p)) {
      if (r.root && r.root != p) return std::nullopt;
      r.root = p;
      continue;
    }
    if (members.size() >= kMaxRegionNodes || !is_elementwise(*p, x_rank, &r.channels)) return std::nullopt;
    members.insert(p);
    for (ir::Value* in : p->inputs)
      if (in && !in->constant) stack.push_back(in);
  }
  if (!r.root) return std::nullopt;
  for (const ir::Node* m : members) {
    // Every intermediate feeds only the region (or q, for its output) and is no graph output.
    const ir::Value* out = m->output(0);
    if (out->is_graph_output) return std::nullopt;
    for (const ir::Node* c : out->consumers)
      if (!members.count(c) && !(c == &q && out == q.input(0))) return std::nullopt;
  }
  for (const auto& n : graph.nodes())
    if (members.count(n.get())) r.nodes.push_back(n.get());
  return r;
}

bool region_steps(const ElementwiseRegion& r, const ir::Value* input, RegionSteps* out, bool f32_activations) {
  std::unordered_map<const ir::Value*, int64_t> slot = {{input, 0}};
  RegionSteps s;
  auto operand = [&](const ir::Value* v, int64_t* o) {
    if (const auto it = slot.find(v); it != slot.end()) return *o = it->second, true;
    const ir::Tensor* c = constant(v);
    if (!c || c->dtype() != ir::DType::kF32) return false;
    const int64_t channels = c->numel() == 1 ? 1 : channel_constant_count(*c, r.x_rank);
    if (channels == 0 || (channels > 1 && channels != r.channels)) return false;
    s.constants.push_back(c->reshaped({channels}));
    *o = -static_cast<int64_t>(s.constants.size());
    return true;
  };
  for (const ir::Node* n : r.nodes) {
    const bool binary = is_region_binary_op(n->op_type);
    int64_t a = 0, b = 0;
    float p0 = 0.0f, p1 = 0.0f;
    if (!operand(n->input(0), &a)) return false;
    if (binary && !operand(n->input(1), &b)) return false;
    if (n->op_type == "Clip") {
      p0 = n->attrs.get_float("min", -std::numeric_limits<float>::infinity());
      p1 = n->attrs.get_float("max", std::numeric_limits<float>::infinity());
      for (int i = 1; i <= 2; ++i) {
        if (!n->input(i)) continue;
        const ir::Tensor* c = constant(n->input(i));
        if (!c || c->numel() != 1) return false;
        (i == 1 ? p0 : p1) = static_cast<float>(c->get_double(0));
      }
    } else if (n->op_type == "LeakyRelu") {
      p0 = n->attrs.get_float("alpha", 0.01f);
    } else if (n->op_type == "HardSigmoid") {
      p0 = n->attrs.get_float("alpha", 0.2f);
      p1 = n->attrs.get_float("beta", 0.5f);
    }
    if (!n->domain.empty() || !ops::qlinear_region_runs(n->op_type)) return false;
    auto step = [&](const char* op, int64_t x, int64_t y, float q0, float q1) {
      s.ops.push_back(op);
      s.operands.insert(s.operands.end(), {x, y});
      s.params.insert(s.params.end(), {q0, q1});
      return static_cast<int64_t>(s.ops.size());  // the step's slot
    };
    auto constant_of = [&](float v) {
      s.constants.push_back(ir::Tensor::from_vector<float>({v}, {1}));
      return -static_cast<int64_t>(s.constants.size());
    };
    if (f32_activations && n->op_type == "HardSwish") {
      const int64_t three = constant_of(3.0f), six = constant_of(6.0f);
      const int64_t t = step("Add", a, three, 0.0f, 0.0f);
      const int64_t c = step("Clip", t, 0, 0.0f, 6.0f);
      const int64_t m = step("Mul", a, c, 0.0f, 0.0f);
      slot[n->output(0)] = step("Div", m, six, 0.0f, 0.0f);
      continue;
    }
    if (f32_activations && n->op_type == "HardSigmoid") {
      const int64_t alpha = constant_of(p0), beta = constant_of(p1);
      const int64_t m = step("Mul", a, alpha, 0.0f, 0.0f);
      const int64_t t = step("Add", m, beta, 0.0f, 0.0f);
      slot[n->output(0)] = step("Clip", t, 0, 0.0f, 1.0f);
      continue;
    }
    slot[n->output(0)] = step(n->op_type.c_str(), a, b, p0, p1);
  }
  if (s.ops.empty()) {  // a requantization
    s.ops.push_back("Identity");
    s.operands.insert(s.operands.end(), {0, 0});
    s.params.insert(s.params.end(), {0.0f, 0.0f});
  }
  if (s.ops.size() + 1 > 64 || s.constants.size() + 5 > 64) return false;
  *out = std::move(s);
  return true;
}

void set_region_steps(ir::Graph& graph, ir::Node& node, const RegionSteps& steps) {
  node.domain = "nfuse";
  node.opset = 1;
  node.attrs.set("ops", steps.ops);
  node.attrs.set("operands", steps.operands);
  node.attrs.set("params", steps.params);
  if (!graph.opsets.count("nfuse")) graph.opsets["nfuse"] = 1;
}

}  // namespace nfuse::passes
