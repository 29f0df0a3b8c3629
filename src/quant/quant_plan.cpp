#include "quant/quant_plan.h"

#include <algorithm>
#include <map>
#include <set>

#include "ops/qlinear_region.h"
#include "passes/pass_util.h"

namespace nfuse::quant {

namespace {

bool is_default(const ir::Node& n) { return n.domain.empty(); }

bool is_f32_activation(const ir::Value* v) {
  return v && !v->constant && v->type.dtype == ir::DType::kF32;
}

// The weight's per-channel axis for a Conv / ConvTranspose / Gemm / MatMul, or -1 when the node
// is not quantizable (non-constant or oddly shaped weight, transposed A, ...).
int weight_axis(const ir::Node& n) {
  const ir::Value* x = n.input(0);
  const ir::Value* w = n.input(1);
  if (!is_f32_activation(x) || !w || !w->constant || w->constant->dtype() != ir::DType::kF32) return -1;
  const int rank = w->constant->rank();
  if (n.op_type == "Conv") return rank >= 3 ? 0 : -1;
  // ConvTranspose weights are [Ci, Co / group, k...]: per output channel is axis 1, which names
  // one output channel only with one group.
  if (n.op_type == "ConvTranspose") return rank >= 3 && n.attrs.get_int("group", 1) == 1 ? 1 : -1;
  if (n.op_type == "MatMul") return rank == 2 ? 1 : -1;
  // Gemm: B is [K, N], or [N, K] with transB.
  if (rank != 2 || n.attrs.get_int("transA", 0) != 0) return -1;
  return n.attrs.get_int("transB", 0) != 0 ? 0 : 1;
}

bool scalar_constant(const ir::Value* v) { return v && v->constant && v->constant->numel() == 1; }

// A constant of one value per channel (axis 1) of the activation `n` outputs (rank >= 3, every
// other dim 1): activation equalization's rescaling; int8 runs it as one table per channel.
bool channel_constant(const ir::Value* v, const ir::Node& n) {
  if (!v || !v->constant) return false;
  const ir::Shape& s = n.output(0)->type.shape;
  if (!s.rank_known()) return false;
  const int64_t c = passes::channel_constant_count(*v->constant, s.rank());
  return c > 0 && (!s[1].is_static() || s[1].value == c);
}

// Element-wise ops whose every input is either an activation or a scalar (or per-channel)
// constant: a region of them fed by one activation computes a function of that activation
// alone (a lookup table in int8).
bool pure_elementwise(const ir::Node& n) {
  static const std::set<std::string> kUnary = {"Sigmoid", "Tanh", "HardSwish", "HardSigmoid", "LeakyRelu", "Elu",
                                               "Softplus", "Relu", "Clip", "Exp", "Neg", "Abs", "Erf", "Sqrt"};
  static const std::set<std::string> kBinary = {"Add", "Sub", "Mul", "Div", "Max", "Min", "Pow"};
  if (!is_default(n) || n.num_outputs() != 1 || n.output(0)->type.dtype != ir::DType::kF32) return false;
  if (kUnary.count(n.op_type)) {
    for (int i = 1; i < n.num_inputs(); ++i) {
      if (n.input(i) && !scalar_constant(n.input(i))) return false;
    }
    return is_f32_activation(n.input(0));
  }
  if (!kBinary.count(n.op_type) || n.num_inputs() != 2) return false;
  bool any_activation = false;
  for (const ir::Value* v : n.inputs) {
    if (is_f32_activation(v)) {
      any_activation = true;
    } else if (!scalar_constant(v) && !(n.op_type != "Pow" && channel_constant(v, n))) {
      return false;
    }
  }
  return any_activation;
}

// A maximal region of pure element-wise nodes computing from one activation (`root`), with one
// value leaving it (`output`; every other value it computes is read only inside it).
struct Region {
  const ir::Value* root = nullptr;
  std::vector<const ir::Node*> nodes;  // graph order
  const ir::Value* output = nullptr;
};

std::vector<Region> find_regions(const ir::Graph& g, const std::set<const ir::Node*>& absorbed) {
  std::map<const ir::Value*, const ir::Value*> root;
  std::map<const ir::Value*, size_t> index;  // root -> region
  std::vector<Region> regions;
  for (const auto& up : g.nodes()) {
    const ir::Node& n = *up;
    if (absorbed.count(&n) || !pure_elementwise(n)) continue;
    const ir::Value* r = nullptr;
    bool single = true;
    for (const ir::Value* v : n.inputs) {
      if (!is_f32_activation(v)) continue;
      const auto it = root.find(v);
      const ir::Value* rv = it == root.end() ? v : it->second;
      if (r && rv != r) single = false;
      r = rv;
    }
    if (!single) continue;
    root[n.output(0)] = r;
    auto [it, inserted] = index.emplace(r, regions.size());
    if (inserted) regions.push_back(Region{r, {}, nullptr});
    regions[it->second].nodes.push_back(&n);
  }
  std::vector<Region> out;
  for (Region& reg : regions) {
    std::set<const ir::Node*> members(reg.nodes.begin(), reg.nodes.end());
    int leaving = 0;
    for (const ir::Node* n : reg.nodes) {
      const ir::Value* y = n->output(0);
      bool escapes = y->is_graph_output || y->consumers.empty();
      for (const ir::Node* c : y->consumers) escapes = escapes || !members.count(c);
      if (escapes) {
        ++leaving;
        reg.output = y;
      }
    }
    if (leaving == 1) out.push_back(std::move(reg));
  }
  return out;
}

// Whether nfuse.QLinearConvRegion can run region `r` (fuse_qdq_conv_region's bounds: its ops, 16
// nodes, 63 steps with HardSwish / HardSigmoid written as their formulas, 55 constants). A Conv
// that absorbed a region the pass then leaves unfused would run in float.
bool runs_as_conv_region(const Region& r) {
  if (r.nodes.size() > 16) return false;
  size_t steps = 0, constants = 0;
  for (const ir::Node* n : r.nodes) {
    if (!ops::qlinear_region_runs(n->op_type)) return false;
    const bool formula = n->op_type == "HardSwish" || n->op_type == "HardSigmoid";
    steps += n->op_type == "HardSwish" ? 4 : n->op_type == "HardSigmoid" ? 3 : 1;
    constants += formula ? 2 : 0;
    for (const ir::Value* v : n->inputs) constants += v && v->constant ? 1 : 0;
  }
  return steps < 64 && constants + 9 <= 64;
}

// Values on the input's grid: the output can take the input's parameters.
bool moves_values(const ir::Node& n) {
  static const std::set<std::string> kOps = {"MaxPool",   "Reshape",   "Flatten",  "Transpose",
                                             "Squeeze",   "Unsqueeze", "Identity", "Relu"};
  return is_default(n) && kOps.count(n.op_type) > 0 && n.num_outputs() >= 1;
}

// Clip with constant bounds (or none) whose lower bound is >= 0: a u8 range over [0, max] with
// zero point 0 implies it once its output is what is calibrated.
bool absorbable_activation(const ir::Node& n) {
  if (!is_default(n)) return false;
  if (n.op_type == "Relu") return true;
  if (n.op_type != "Clip") return false;
  for (int i = 1; i < n.num_inputs(); ++i) {
    const ir::Value* b = n.input(i);
    if (b && (!b->constant || b->constant->numel() != 1)) return false;
  }
  const ir::Value* lo = n.input(1);
  return lo && lo->constant->to_float_vector()[0] >= 0.0f;
}

// The node's quantized kind, or false when it stays float.
bool layer_kind(const ir::Node& n, LayerKind* kind, int* axis) {
  if (!is_default(n) || n.num_outputs() < 1 || n.output(0)->type.dtype != ir::DType::kF32) return false;
  const std::string& op = n.op_type;
  if (op == "Conv" || op == "ConvTranspose" || op == "Gemm" || op == "MatMul") {
    *axis = weight_axis(n);
    *kind = LayerKind::kWeighted;
    return *axis >= 0;
  }
  if (op == "Add" || op == "Mul") {
    *kind = LayerKind::kElementwise;
    return n.num_inputs() == 2 && is_f32_activation(n.input(0)) && is_f32_activation(n.input(1));
  }
  if (op == "Concat") {
    *kind = LayerKind::kElementwise;
    for (const ir::Value* v : n.inputs) {
      if (!is_f32_activation(v)) return false;
    }
    return n.num_inputs() >= 1;
  }
  if (op == "GlobalAveragePool" || op == "AveragePool" || op == "MaxPool") {
    *kind = LayerKind::kPool;
    return n.num_outputs() == 1 && is_f32_activation(n.input(0));
  }
  return false;
}

// The tensor `name` is a value-moved copy of (through Reshape, Flatten, MaxPool...).
std::string moved_source(const ir::Graph& g, const std::string& name) {
  const ir::Value* v = g.find_value(name);
  while (v && v->producer && moves_values(*v->producer) && v->producer->input(0)) v = v->producer->input(0);
  return v ? v->name : name;
}

// Weighted layers, and the other layers joined to them through tensors (directly or through
// value-moving ops), to a fixed point. A Relu, pool or Add between two float ops (a head of
// layers the quantizer cannot take, say) gains nothing from integer kernels and would only add a Q/DQ pass
// over its tensors and their rounding noise.
std::vector<PlannedLayer> connected_layers(const ir::Graph& g, std::vector<PlannedLayer> layers) {
  std::vector<bool> keep(layers.size());
  std::map<std::string, std::vector<size_t>> by_tensor;  // moved source -> layers reading or writing it
  for (size_t i = 0; i < layers.size(); ++i) {
    keep[i] = layers[i].kind == LayerKind::kWeighted;
    for (const auto& t : layers[i].inputs) by_tensor[moved_source(g, t)].push_back(i);
    if (layers[i].output_quantized) by_tensor[moved_source(g, layers[i].output)].push_back(i);
  }
  for (bool changed = true; changed;) {
    changed = false;
    for (const auto& [t, users] : by_tensor) {
      bool any = false;
      for (size_t i : users) any = any || keep[i];
      if (!any) continue;
      for (size_t i : users) {
        if (!keep[i]) keep[i] = changed = true;
      }
    }
  }
  std::vector<PlannedLayer> out;
  for (size_t i = 0; i < layers.size(); ++i) {
    if (keep[i]) out.push_back(std::move(layers[i]));
  }
  return out;
}

}  // namespace

const char* layer_kind_name(LayerKind kind) {
  switch (kind) {
    case LayerKind::kWeighted: return "weighted";
    case LayerKind::kElementwise: return "elementwise";
    case LayerKind::kPool: return "pool";
    case LayerKind::kLookup: return "lookup";
  }
  return "?";
}

std::vector<std::string> QuantPlan::observed() const {
  std::vector<std::string> out;
  for (const auto& t : tensors) {
    if (!shared.count(t)) out.push_back(t);
  }
  return out;
}

ir::Node* find_layer_node(const ir::Graph& g, const PlannedLayer& layer) {
  const ir::Value* v = g.find_value(layer.node_output);
  return v ? v->producer : nullptr;
}

Result<QuantPlan> plan_quantization(const ir::Graph& g, ActScheme act, bool conv_regions) {
  QuantPlan plan;
  std::set<std::string> seen;
  auto add_tensor = [&](const std::string& name) {
    if (seen.insert(name).second) plan.tensors.push_back(name);
  };
  // Activations folded into the weighted layer before them.
  std::set<const ir::Node*> absorbed;
  std::map<const ir::Node*, const ir::Node*> absorbed_by;  // layer -> its activation
  for (const auto& up : g.nodes()) {
    const ir::Node& n = *up;
    LayerKind kind{};
    int axis = -1;
    if (!layer_kind(n, &kind, &axis) || kind != LayerKind::kWeighted) continue;
    // s16 is symmetric, so its range implies no clamp; the W8A16 conv fusions apply the Relu /
    // Clip as the fused op's y_min / y_max instead (QLinearMatMul16 has no clamp: not there).
    const bool clamps16 = n.op_type == "Conv" || n.op_type == "ConvTranspose";
    if (act != ActScheme::kU8Asymmetric && !(act == ActScheme::kS16Symmetric && clamps16)) continue;
    const ir::Value* y = n.output(0);
    if (!y->is_graph_output && y->consumers.size() == 1 && absorbable_activation(*y->consumers[0])) {
      absorbed.insert(y->consumers[0]);
      absorbed_by[&n] = y->consumers[0];
    }
  }
  // Element-wise regions: one lookup layer each, quantized only at their input and output; with
  // 8-bit activations a Conv whose output only its region reads absorbs it instead (the region
  // then runs on the convolution's float output: nfuse.QLinearConvRegion), unless the region
  // writes a graph output: that stays float, and the Conv would be left with no quantized output.
  std::map<const ir::Node*, const Region*> region_start;
  std::map<const ir::Node*, const Region*> absorbed_region;  // Conv layer -> the region after it
  std::set<const ir::Node*> in_region;
  const std::vector<Region> regions = find_regions(g, absorbed);
  for (const Region& r : regions) {
    in_region.insert(r.nodes.begin(), r.nodes.end());
    const ir::Node* conv = r.root->producer;
    LayerKind kind{};
    int axis = -1;
    bool only_region = conv_regions && conv && !r.root->is_graph_output && !r.output->is_graph_output &&
                       act != ActScheme::kS16Symmetric && conv->op_type == "Conv" && !absorbed_by.count(conv) &&
                       layer_kind(*conv, &kind, &axis) && runs_as_conv_region(r);
    for (const ir::Node* c : only_region ? r.root->consumers : std::vector<ir::Node*>{})
      only_region = only_region && std::find(r.nodes.begin(), r.nodes.end(), c) != r.nodes.end();
    if (only_region) {
      absorbed_region[conv] = &r;
    } else {
      region_start[r.nodes.front()] = &r;
    }
  }
  for (const auto& up : g.nodes()) {
    const ir::Node& n = *up;
    if (absorbed.count(&n)) continue;
    PlannedLayer l;
    if (const auto rs = region_start.find(&n); rs != region_start.end()) {
      const Region& r = *rs->second;
      l.node_output = r.output->name;
      const ir::Node& last = *r.output->producer;
      l.name = last.name.empty() ? r.output->name : last.name;
      for (const ir::Node* m : r.nodes) {
        l.op += (l.op.empty() ? "" : "+") + m->op_type;
        l.region.push_back(m->output(0)->name);
      }
      l.kind = LayerKind::kLookup;
      l.inputs.push_back(r.root->name);
      l.output = r.output->name;
      l.output_quantized = !r.output->is_graph_output;
    } else {
      LayerKind kind{};
      int axis = -1;
      if (in_region.count(&n) || !layer_kind(n, &kind, &axis)) continue;
      l.node_output = n.output(0)->name;
      l.name = n.name.empty() ? n.output(0)->name : n.name;
      l.op = n.op_type;
      l.kind = kind;
      l.weight_axis = axis;
      const int data_inputs = kind == LayerKind::kElementwise ? n.num_inputs() : 1;
      for (int i = 0; i < data_inputs; ++i) l.inputs.push_back(n.input(i)->name);
      const ir::Value* y = n.output(0);
      if (const auto a = absorbed_by.find(&n); a != absorbed_by.end()) y = a->second->output(0);
      if (const auto a = absorbed_region.find(&n); a != absorbed_region.end()) {
        y = a->second->output;
        l.fused_root = n.output(0)->name;
        for (const ir::Node* m : a->second->nodes) l.region.push_back(m->output(0)->name);
        plan.int16_only.insert(l.fused_root);
      }
      l.output = y->name;
      l.output_quantized = !y->is_graph_output;
    }
    plan.layers.push_back(std::move(l));
  }
  plan.layers = connected_layers(g, std::move(plan.layers));
  for (const auto& l : plan.layers) {
    for (const auto& in : l.inputs) add_tensor(in);
    if (l.output_quantized) add_tensor(l.output);
    if (!l.fused_root.empty()) add_tensor(l.fused_root);
  }
  for (auto it = plan.int16_only.begin(); it != plan.int16_only.end();) {  // layers connected_layers dropped
    it = seen.count(*it) ? std::next(it) : plan.int16_only.erase(it);
  }
  if (plan.layers.empty())
    return unsupported(
        "quantize: nothing to quantize (no Conv / ConvTranspose / Gemm / MatMul with a constant weight, Add, Concat, "
        "pool or activation on float tensors)");

  // Shared parameters: a quantized tensor reached from another through value-moving ops
  // (graph order, so a chain resolves to its first quantized source).
  std::set<std::string> quantized(plan.tensors.begin(), plan.tensors.end());
  for (const auto& up : g.nodes()) {
    const ir::Node& n = *up;
    if (!moves_values(n) || absorbed.count(&n)) continue;
    const ir::Value* in = n.input(0);
    const ir::Value* out = n.output(0);
    if (!in || !quantized.count(in->name) || !quantized.count(out->name) || out->name == in->name) continue;
    const auto src = plan.shared.find(in->name);
    plan.shared[out->name] = src == plan.shared.end() ? in->name : src->second;
  }
  return plan;
}

}  // namespace nfuse::quant
