#include "quant/qdq_builder.h"

#include <algorithm>
#include <set>

#include "frontend/onnx/onnx_exporter.h"
#include "frontend/onnx/onnx_importer.h"

namespace nfuse::quant {

namespace {

constexpr const char* kContribDomain = "com.microsoft";

template <typename T>
ir::Value* scalar_constant(ir::Graph& g, const std::string& hint, T value) {
  ir::Tensor t = ir::Tensor::from_vector<T>({value}, {});
  ir::Value* v = g.add_unique_value(hint, ir::TensorType{t.dtype(), ir::Shape::from_dims(t.dims())});
  v->constant = std::move(t);
  return v;
}

ir::Value* tensor_constant(ir::Graph& g, const std::string& hint, ir::Tensor t) {
  ir::Value* v = g.add_unique_value(hint, ir::TensorType{t.dtype(), ir::Shape::from_dims(t.dims())});
  v->constant = std::move(t);
  return v;
}

ir::Value* zero_point_constant(ir::Graph& g, const std::string& hint, const ir::QuantParams& p) {
  switch (p.storage) {
    case ir::DType::kU8: return scalar_constant<uint8_t>(g, hint, static_cast<uint8_t>(p.zero_point[0]));
    case ir::DType::kI16: return scalar_constant<int16_t>(g, hint, static_cast<int16_t>(p.zero_point[0]));
    default: return scalar_constant<int8_t>(g, hint, static_cast<int8_t>(p.zero_point[0]));
  }
}

// x -> Q -> DQ -> `readers` (each input that was x); the nodes named `base` + "_QuantizeLinear" /
// "_DequantizeLinear", their outputs `q_name` / `dq_name`. Returns the DQ output.
Result<ir::Value*> add_qdq(ir::Graph& g, ir::Value* x, const ir::QuantParams& p, const std::vector<ir::Node*>& readers,
                           const std::string& base, const std::string& q_name, const std::string& dq_name) {
  if (p.scale.size() != 1 || p.zero_point.size() != 1) return internal_error("per-tensor params expected");
  ir::Value* scale = scalar_constant<float>(g, x->name + "_scale", p.scale[0]);
  ir::Value* zp = zero_point_constant(g, x->name + "_zero_point", p);
  ir::Value* q = g.add_unique_value(q_name, ir::TensorType{p.storage, x->type.shape});
  ir::Value* dq = g.add_unique_value(dq_name, x->type);
  for (ir::Node* c : readers) {
    for (auto& in : c->inputs) {
      if (in == x) in = dq;
    }
  }
  const bool contrib = p.storage == ir::DType::kI16;
  ir::Node* qn = g.add_node("QuantizeLinear", base + "_QuantizeLinear", {x, scale, zp}, {q});
  ir::Node* dqn = g.add_node("DequantizeLinear", base + "_DequantizeLinear", {q, scale, zp}, {dq});
  for (ir::Node* n : {qn, dqn}) {
    n->domain = contrib ? kContribDomain : "";
    n->opset = contrib ? 1 : 13;
  }
  if (contrib) g.opsets.emplace(kContribDomain, 1);
  g.relink();
  return dq;
}

// x -> Q -> DQ -> (every former consumer of x). Returns the DQ output.
Result<ir::Value*> insert_qdq(ir::Graph& g, ir::Value* x, const ir::QuantParams& p) {
  return add_qdq(g, x, p, x->consumers, x->name, x->name + "_quantized", x->name + "_dequantized");
}

// The bias correction of a weighted layer: -(W_q - W) E[x] per output channel, or empty when
// the layer's shapes are not the handled ones.
std::vector<float> bias_correction(const ir::Node& n, const ir::Tensor& w, const QuantizedTensor& qw, int axis,
                                   const std::vector<double>& mean) {
  const float* wf = w.data<float>();
  const int8_t* wq = qw.data.data<int8_t>();
  const std::vector<float>& sc = qw.params.scale;
  auto err = [&](int64_t i, int64_t c) {
    return static_cast<double>(static_cast<float>(wq[i]) * sc[static_cast<size_t>(c)]) - static_cast<double>(wf[i]);
  };
  std::vector<float> out;
  if (n.op_type == "Conv") {
    const int64_t co = w.dim(0), cig = w.dim(1), k = w.numel() / (co * cig);
    const int64_t groups = n.attrs.get_int("group", 1);
    if (groups <= 0 || static_cast<int64_t>(mean.size()) != cig * groups || co % groups != 0) return {};
    const int64_t cog = co / groups;
    for (int64_t o = 0; o < co; ++o) {
      double acc = 0.0;
      const int64_t g = o / cog;
      for (int64_t c = 0; c < cig; ++c) {
        for (int64_t i = 0; i < k; ++i) acc += err((o * cig + c) * k + i, o) * mean[static_cast<size_t>(g * cig + c)];
      }
      out.push_back(static_cast<float>(-acc));
    }
    return out;
  }
  if (n.op_type != "Gemm" || w.rank() != 2) return {};
  // axis 1: B is [K, N]; axis 0: B is [N, K] (transB).
  const int64_t nout = w.dim(axis), kdim = w.dim(1 - axis);
  if (static_cast<int64_t>(mean.size()) != kdim) return {};
  for (int64_t o = 0; o < nout; ++o) {
    double acc = 0.0;
    for (int64_t k = 0; k < kdim; ++k) {
      const int64_t i = axis == 1 ? k * nout + o : o * kdim + k;
      acc += err(i, o) * mean[static_cast<size_t>(k)];
    }
    out.push_back(static_cast<float>(-acc));
  }
  return out;
}

// Adds `delta` to `n`'s bias (input 2), creating it when absent. False when the bias is not a
// constant f32 vector of the right length.
bool add_to_bias(ir::Graph& g, ir::Node& n, const std::vector<float>& delta) {
  const auto count = static_cast<int64_t>(delta.size());
  std::vector<float> b(delta.size(), 0.0f);
  if (ir::Value* old = n.input(2)) {
    if (!old->constant || old->constant->dtype() != ir::DType::kF32 || old->constant->numel() != count ||
        old->constant->rank() != 1)
      return false;
    b = old->constant->to_float_vector();
  }
  for (size_t i = 0; i < b.size(); ++i) b[i] += delta[i];
  ir::Value* nb = tensor_constant(g, n.output(0)->name + "_corrected_bias", ir::Tensor::from_vector<float>(b, {count}));
  if (n.inputs.size() < 3) n.inputs.resize(3, nullptr);
  n.inputs[2] = nb;
  return true;
}

// Replaces the float weight (input 1) of `n` by DequantizeLinear(s8 per-channel constant);
// with `mean`, corrects the bias for the rounding. *corrected: whether it did.
// `x_scale`: the layer input's scale, which bounds how small a weight scale the int32 bias allows.
// `rounded` (optional): adaptively rounded values, taken when their scales are the ones chosen
// here (*adaptive says whether they were).
Status quantize_weight(ir::Graph& g, ir::Node& n, int axis, float x_scale, const std::vector<double>* mean,
                       const RoundedWeight* rounded, bool* corrected, bool* adaptive) {
  ir::Value* w = n.input(1);
  std::vector<float> min_scale;
  const ir::Value* b = n.input(2);
  const int64_t out_channels = w->constant->dim(axis);
  if (b && b->constant && b->constant->dtype() == ir::DType::kF32 && b->constant->numel() == out_channels) {
    min_scale =
        int32_bias_min_weight_scale(b->constant->to_float_vector(), x_scale, w->constant->numel() / out_channels);
  }
  NFUSE_ASSIGN_OR_RETURN(QuantizedTensor qw, quantize_weights_per_channel(*w->constant, axis, min_scale));
  *adaptive = rounded && rounded->scale == qw.params.scale && rounded->values.dims() == qw.data.dims();
  if (*adaptive) qw.data = rounded->values;
  *corrected = false;
  if (mean && !mean->empty()) {
    const std::vector<float> delta = bias_correction(n, *w->constant, qw, axis, *mean);
    *corrected = !delta.empty() && add_to_bias(g, n, delta);
  }
  const auto channels = static_cast<int64_t>(qw.params.scale.size());
  ir::Value* wq = tensor_constant(g, w->name + "_quantized", qw.data);
  ir::Value* scale = tensor_constant(g, w->name + "_scale", ir::Tensor::from_vector<float>(qw.params.scale, {channels}));
  ir::Value* zp = tensor_constant(
      g, w->name + "_zero_point",
      ir::Tensor::from_vector<int8_t>(std::vector<int8_t>(qw.params.scale.size(), 0), {channels}));
  ir::Value* wdq = g.add_unique_value(w->name + "_dequantized", w->type);
  ir::Attributes attrs;
  attrs.set("axis", int64_t{axis});
  ir::Node* dqn = g.add_node("DequantizeLinear", w->name + "_DequantizeLinear", {wq, scale, zp}, {wdq}, attrs);
  dqn->opset = 13;
  n.inputs[1] = wdq;
  g.relink();
  return ok_status();
}

// The nodes of layer `l` in `g` that read the value `dq` (the layer's node itself, or for an
// element-wise region the members reading it, found walking back from the region's output; a
// region holds no DequantizeLinear, so the walk stops at every one).
std::vector<ir::Node*> layer_nodes_reading(ir::Graph& g, const PlannedLayer& l, const ir::Value* dq) {
  std::vector<ir::Node*> out;
  auto reads = [&](const ir::Node* n) { return std::find(n->inputs.begin(), n->inputs.end(), dq) != n->inputs.end(); };
  if (l.kind != LayerKind::kLookup) {
    ir::Node* n = find_layer_node(g, l);
    if (n && reads(n)) out.push_back(n);
    return out;
  }
  const ir::Value* y = g.find_value(l.node_output);
  std::vector<ir::Node*> stack;
  if (y && y->producer) stack.push_back(y->producer);
  std::set<const ir::Node*> seen;
  while (!stack.empty()) {
    ir::Node* n = stack.back();
    stack.pop_back();
    if (!seen.insert(n).second || n->op_type == "DequantizeLinear") continue;
    if (reads(n)) out.push_back(n);
    for (ir::Value* in : n->inputs) {
      if (in && in != dq && !in->constant && in->producer) stack.push_back(in->producer);
    }
  }
  return out;
}

// dq -> Q -> DQ (at `s`, from `c`'s ranges) -> the nodes of `l` that read dq.
Status requantize_edge(ir::Graph& g, const PlannedLayer& l, const std::string& dq_name, const CalibratedTensor& c,
                       ActScheme s) {
  ir::Value* dq = g.find_value(dq_name);
  if (!dq) return internal_error("the tensor's DequantizeLinear output is missing");
  const std::vector<ir::Node*> readers = layer_nodes_reading(g, l, dq);
  if (readers.empty()) return internal_error("no node of the layer reads the tensor");
  NFUSE_ASSIGN_OR_RETURN(ir::QuantParams p, activation_params(s == ActScheme::kS16Symmetric ? c.range16 : c.range8, s));
  const std::string base = dq->name + "_for_" + l.name;
  return add_qdq(g, dq, p, readers, base, base + "_quantized", base).status();
}

}  // namespace

Result<std::unique_ptr<ir::Graph>> clone_graph(const ir::Graph& g) {
  NFUSE_ASSIGN_OR_RETURN(std::string bytes, frontend::onnx::export_model_bytes(g));
  frontend::onnx::ImportOptions io;
  io.external_data = false;
  return frontend::onnx::load_model_from_bytes(bytes.data(), bytes.size(), ".", io);
}

Result<QdqGraph> build_qdq_graph(const ir::Graph& fp32, const QuantPlan& plan,
                                 const std::map<std::string, CalibratedTensor>& calibrated,
                                 const QdqSelection& selection) {
  QdqGraph out;
  NFUSE_ASSIGN_OR_RETURN(out.graph, clone_graph(fp32));
  ir::Graph& g = *out.graph;
  g.relink();

  // Active layers and their schemes; each quantized tensor's home scheme: its writer's (the
  // layer whose output it is), else the widest of its readers' (s16 over the base scheme).
  std::vector<const PlannedLayer*> active;
  std::map<const PlannedLayer*, ActScheme> layer_scheme;
  std::map<std::string, ActScheme> scheme;
  for (const auto& l : plan.layers) {
    if (selection.only && !selection.only_layers.count(l.node_output)) continue;
    if (selection.float_layers.count(l.node_output)) continue;
    active.push_back(&l);
    const ActScheme s = selection.int16_layers.count(l.node_output) ? ActScheme::kS16Symmetric : selection.act;
    layer_scheme[&l] = s;
    if (l.output_quantized) scheme[l.output] = s;
    // A Conv that absorbed its region runs it as a float epilogue at 8 bits (no Q/DQ between);
    // promoted to int16 it is a 16-bit conv and a 16-bit region again.
    if (!l.fused_root.empty() && s == ActScheme::kS16Symmetric) scheme[l.fused_root] = s;
  }
  std::set<std::string> written;
  for (const auto& [t, s] : scheme) written.insert(t);
  for (const PlannedLayer* l : active) {
    const ActScheme s = layer_scheme.at(l);
    for (const auto& in : l->inputs) {
      if (written.count(in)) continue;
      auto [it, inserted] = scheme.emplace(in, s);
      if (!inserted && s == ActScheme::kS16Symmetric) it->second = s;
    }
  }

  // Weights first: their nodes are found by output name, which insert_qdq keeps.
  for (const PlannedLayer* l : active) {
    if (l->kind != LayerKind::kWeighted) continue;
    ir::Node* n = find_layer_node(g, *l);
    if (!n || n->op_type != l->op) return internal_error("quantize: layer '" + l->name + "' vanished from the copy");
    const std::vector<double>* mean = nullptr;
    if (selection.bias_correction) {
      const auto c = calibrated.find(l->inputs[0]);
      if (c != calibrated.end()) mean = &c->second.channel_mean;
    }
    const RoundedWeight* rounded = nullptr;
    if (selection.rounded) {
      const auto r = selection.rounded->find(l->node_output);
      if (r != selection.rounded->end()) rounded = &r->second;
    }
    bool corrected = false, adaptive = false;
    float x_scale = 1.0f;
    if (const auto c = calibrated.find(l->inputs[0]); c != calibrated.end()) {
      const ActScheme s = layer_scheme.at(l);  // the input as the layer reads it
      NFUSE_ASSIGN_OR_RETURN(ir::QuantParams xp,
                             activation_params(s == ActScheme::kS16Symmetric ? c->second.range16 : c->second.range8, s));
      x_scale = xp.scale[0];
    }
    NFUSE_RETURN_IF_ERROR(quantize_weight(g, *n, l->weight_axis, x_scale, mean, rounded, &corrected, &adaptive),
                          "quantizing the weight of " + n->label());
    ++out.weights_quantized;
    out.biases_corrected += corrected ? 1 : 0;
    out.weights_rounded_adaptively += adaptive ? 1 : 0;
  }
  // Activations, in the plan's order (deterministic value names).
  std::map<std::string, std::string> dq_name;
  for (const auto& t : plan.tensors) {
    if (selection.weights_only) break;
    const auto s = scheme.find(t);
    if (s == scheme.end()) continue;
    const auto c = calibrated.find(t);
    if (c == calibrated.end()) return internal_error("quantize: '" + t + "' was not calibrated");
    const Range& r = s->second == ActScheme::kS16Symmetric ? c->second.range16 : c->second.range8;
    NFUSE_ASSIGN_OR_RETURN(ir::QuantParams p, activation_params(r, s->second));
    ir::Value* v = g.find_value(t);
    if (!v) return internal_error("quantize: '" + t + "' is missing from the graph copy");
    NFUSE_ASSIGN_OR_RETURN(ir::Value * dq, insert_qdq(g, v, p));
    dq_name[t] = dq->name;
    out.params[t] = p;
    out.schemes[t] = s->second;
  }
  // A layer reading a tensor at another scheme than the tensor's home one (an int8 layer after
  // an int16 one in a mixed-precision graph, say) reads it through a Q/DQ pair of its own: a
  // requantization on that edge, so the layer reads and writes one precision and runs on its
  // integer kernel rather than in float between a 16-bit DequantizeLinear and an 8-bit
  // QuantizeLinear.
  if (!selection.weights_only) {
    for (const PlannedLayer* l : active) {
      const ActScheme s = layer_scheme.at(l);
      std::set<std::string> done;
      for (const auto& t : l->inputs) {
        const auto home = scheme.find(t);
        if (home == scheme.end() || home->second == s || !done.insert(t).second) continue;
        NFUSE_RETURN_IF_ERROR(requantize_edge(g, *l, dq_name.at(t), calibrated.at(t), s),
                              "quantize: requantizing '" + t + "' for layer '" + l->name + "'");
      }
    }
  }
  for (const auto& l : plan.layers) {
    const auto d = dq_name.find(l.output);
    out.measured[l.node_output] = d == dq_name.end() ? l.output : d->second;
  }
  NFUSE_RETURN_IF_ERROR(g.topo_sort(), "quantize");
  g.relink();
  NFUSE_RETURN_IF_ERROR(g.verify(), "quantize: the QDQ graph");
  return out;
}

}  // namespace nfuse::quant
