#include "quant/quantize_graph.h"

#include <algorithm>
#include <map>
#include <new>
#include <nlohmann/json.hpp>
#include <set>

#include "backends/ref/ref_kernel.h"
#include "frontend/onnx/onnx_exporter.h"
#include "frontend/onnx/onnx_importer.h"
#include "passes/pass_manager.h"
#include "quant/observer.h"
#include "runtime/session.h"

namespace nfuse::quant {

namespace {

bool is_layer_op(const ir::Node& n) {
  return n.domain.empty() && (n.op_type == "Conv" || n.op_type == "Gemm" || n.op_type == "MatMul");
}

bool is_f32_constant(const ir::Value* v) {
  return v && v->constant && v->constant->dtype() == ir::DType::kF32;
}

// The weight's per-channel axis for a layer node, or -1 when the node is not quantizable
// (non-constant or oddly shaped weight, transposed A, ...).
int weight_axis(const ir::Node& n) {
  const ir::Value* x = n.input(0);
  const ir::Value* w = n.input(1);
  if (!x || x->constant || x->type.dtype != ir::DType::kF32 || !is_f32_constant(w)) return -1;
  const int rank = w->constant->rank();
  if (n.op_type == "Conv") return rank >= 3 ? 0 : -1;
  if (n.op_type == "MatMul") return rank == 2 ? 1 : -1;
  // Gemm: B is [K, N], or [N, K] with transB.
  if (rank != 2 || n.attrs.get_int("transA", 0) != 0) return -1;
  return n.attrs.get_int("transB", 0) != 0 ? 0 : 1;
}

// Ops whose output values, given a dequantized input, all lie on the input's quantization grid
// (they move values, or, Relu, clamp them at 0, which every grid holds): the input's parameters
// hold exactly for their output.
bool moves_values(const ir::Node& n) {
  return n.domain.empty() &&
         (n.op_type == "MaxPool" || n.op_type == "Flatten" || n.op_type == "Reshape" || n.op_type == "Relu");
}

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

// x -> Q -> DQ -> (every former consumer of x). Returns the DQ output.
Result<ir::Value*> insert_qdq(ir::Graph& g, ir::Value* x, const ir::QuantParams& p) {
  if (p.scale.size() != 1 || p.zero_point.size() != 1) return internal_error("per-tensor params expected");
  std::vector<ir::Node*> consumers = x->consumers;
  ir::Value* scale = scalar_constant<float>(g, x->name + "_scale", p.scale[0]);
  ir::Value* zp = p.storage == ir::DType::kU8
                      ? scalar_constant<uint8_t>(g, x->name + "_zero_point", static_cast<uint8_t>(p.zero_point[0]))
                      : scalar_constant<int8_t>(g, x->name + "_zero_point", static_cast<int8_t>(p.zero_point[0]));
  ir::Value* q = g.add_unique_value(x->name + "_quantized", ir::TensorType{p.storage, x->type.shape});
  ir::Value* dq = g.add_unique_value(x->name + "_dequantized", x->type);
  for (ir::Node* c : consumers) {
    for (auto& in : c->inputs) {
      if (in == x) in = dq;
    }
  }
  ir::Node* qn = g.add_node("QuantizeLinear", x->name + "_QuantizeLinear", {x, scale, zp}, {q});
  qn->opset = 13;
  ir::Node* dqn = g.add_node("DequantizeLinear", x->name + "_DequantizeLinear", {q, scale, zp}, {dq});
  dqn->opset = 13;
  g.relink();
  return dq;
}

// Replaces layer `n`'s float weight by DequantizeLinear(s8 per-channel constant).
Status quantize_weight(ir::Graph& g, ir::Node& n, int axis) {
  ir::Value* w = n.input(1);
  NFUSE_ASSIGN_OR_RETURN(QuantizedTensor qw, quantize_weights_per_channel(*w->constant, axis));
  const auto channels = static_cast<int64_t>(qw.params.scale.size());
  ir::Value* wq = tensor_constant(g, w->name + "_quantized", qw.data);
  ir::Value* scale = tensor_constant(g, w->name + "_scale", ir::Tensor::from_vector<float>(qw.params.scale, {channels}));
  ir::Value* zp = tensor_constant(g, w->name + "_zero_point",
                                  ir::Tensor::from_vector<int8_t>(std::vector<int8_t>(qw.params.scale.size(), 0),
                                                                  {channels}));
  ir::Value* wdq = g.add_unique_value(w->name + "_dequantized", w->type);
  ir::Attributes attrs;
  attrs.set("axis", int64_t{axis});
  ir::Node* dqn = g.add_node("DequantizeLinear", w->name + "_DequantizeLinear", {wq, scale, zp}, {wdq}, attrs);
  dqn->opset = 13;
  n.inputs[1] = wdq;
  g.relink();
  return ok_status();
}

// A copy of `g` with the named values added as graph outputs (their order = `names`' order,
// after the original outputs); `index` maps each name to its output index.
Result<std::unique_ptr<ir::Graph>> with_outputs(const ir::Graph& g, const std::vector<std::string>& names,
                                                std::map<std::string, size_t>* index) {
  NFUSE_ASSIGN_OR_RETURN(auto copy, clone_graph(g));
  for (size_t i = 0; i < copy->outputs().size(); ++i) (*index)[copy->outputs()[i]->name] = i;
  for (const auto& name : names) {
    if (index->count(name)) continue;
    ir::Value* v = copy->find_value(name);
    if (!v) return internal_error("value '" + name + "' vanished from the graph copy");
    (*index)[name] = copy->outputs().size();
    copy->outputs().push_back(v);
  }
  copy->relink();
  return copy;
}

Result<std::unique_ptr<runtime::Session>> cpu_session(std::unique_ptr<ir::Graph> g, bool optimize, int threads) {
  runtime::SessionOptions so;
  so.backend = "cpu";
  so.threads = threads;
  so.optimize = optimize;
  return runtime::Session::create(std::move(g), so);
}

}  // namespace

Result<std::unique_ptr<ir::Graph>> clone_graph(const ir::Graph& g) {
  NFUSE_ASSIGN_OR_RETURN(std::string bytes, frontend::onnx::export_model_bytes(g));
  frontend::onnx::ImportOptions io;
  io.external_data = false;
  return frontend::onnx::load_model_from_bytes(bytes.data(), bytes.size(), ".", io);
}

Status optimize_without_fusions(ir::Graph& g) {
  passes::OptimizeOptions po;
  po.evaluator = [](const ir::Node& n, const std::vector<const ir::Tensor*>& in) {
    return backends::ref::evaluate_node(n, in);
  };
  // The passes whose results are not standard ONNX (as `nfuse export --optimize --no-fusions`).
  po.disabled = {"recognize_gelu", "fuse_matmul_bias", "fuse_residual_add", "fuse_activation"};
  try {
    auto r = passes::optimize(g, po);
    if (!r.ok()) return r.status();
  } catch (const std::bad_alloc&) {
    return out_of_memory("optimizing for quantization: out of memory");
  }
  return ok_status();
}

Result<QuantizeResult> quantize_static(const ir::Graph& fp32, const std::vector<ir::Tensor>& batches,
                                       const QuantizeOptions& options) {
  if (fp32.inputs().size() != 1) return unsupported("quantize: models with exactly one input are supported");
  if (batches.empty()) return invalid_argument("quantize: no calibration batches");
  auto opset = fp32.opsets.find("");
  if (opset != fp32.opsets.end() && opset->second < 13)
    return unsupported("quantize: opset " + std::to_string(opset->second) +
                       " is below 13 (per-channel DequantizeLinear needs 13)");
  MethodOptions mo = options.method_options;
  mo.bits = 8;
  mo.symmetric = options.act != ActScheme::kU8Asymmetric;
  NFUSE_RETURN_IF_ERROR(validate(mo, options.method), "quantize");

  QuantizeResult result;
  NFUSE_ASSIGN_OR_RETURN(result.fp32, clone_graph(fp32));
  ir::Graph& g = *result.fp32;
  NFUSE_RETURN_IF_ERROR(optimize_without_fusions(g), "quantize");
  g.relink();

  // (a) Layers and the tensors to observe.
  std::vector<std::pair<ir::Node*, int>> layer_nodes;  // node, weight axis
  std::vector<std::string> observed;                  // in first-seen order
  std::set<std::string> observed_set;
  std::set<std::string> layer_outputs;
  std::map<std::string, std::string> shared;  // tensor -> the tensor whose params it uses
  auto observe = [&](const std::string& name) {
    if (observed_set.insert(name).second) observed.push_back(name);
  };
  for (const auto& up : g.nodes()) {
    ir::Node& n = *up;
    if (!is_layer_op(n)) continue;
    const int axis = weight_axis(n);
    if (axis < 0) continue;
    layer_nodes.emplace_back(&n, axis);
    ir::Value* y = n.output(0);
    // u8: a following Relu joins the layer (its [0, max] range gets zero point 0, which implies
    // the Relu, so the passes fuse it). s8: Q(0) = 0 is not the type minimum, so the Relu would
    // stop the fusion; the Conv's own output is quantized and the Relu shares its parameters.
    if (options.act == ActScheme::kU8Asymmetric && !y->is_graph_output && y->consumers.size() == 1 && y->consumers[0]->op_type == "Relu" &&
        y->consumers[0]->domain.empty()) {
      y = y->consumers[0]->output(0);
    }
    QuantizedLayer layer;
    layer.name = n.name.empty() ? n.output(0)->name : n.name;
    layer.op = n.op_type;
    layer.output = y->name;
    layer.output_quantized = !y->is_graph_output;
    result.layers.push_back(layer);
    if (layer.output_quantized) layer_outputs.insert(y->name);
  }
  if (layer_nodes.empty()) return unsupported("quantize: no Conv / Gemm / MatMul with a constant weight");
  for (auto& [n, axis] : layer_nodes) {
    // The activation input: shared when reached from a layer output through value-moving ops.
    ir::Value* v = n->input(0);
    while (!layer_outputs.count(v->name) && v->producer && moves_values(*v->producer) &&
           v->producer_output == 0 && v->producer->input(0)) {
      v = v->producer->input(0);
    }
    const std::string x = n->input(0)->name;
    if (layer_outputs.count(v->name) && v->name != x) shared[x] = v->name;
    if (!shared.count(x)) observe(x);
  }
  for (const auto& l : result.layers) {
    if (l.output_quantized) observe(l.output);
  }

  // (b) Calibration on the float graph.
  std::map<std::string, size_t> index;
  NFUSE_ASSIGN_OR_RETURN(auto calib_graph, with_outputs(g, observed, &index));
  const std::string input_name = g.inputs()[0]->name;
  NFUSE_ASSIGN_OR_RETURN(auto session, cpu_session(std::move(calib_graph), /*optimize=*/false, options.threads));
  std::map<std::string, Observer> observers;
  for (const auto& b : batches) {
    NFUSE_ASSIGN_OR_RETURN(auto outs, session->run({{input_name, b}}));
    for (const auto& name : observed) {
      const ir::Tensor& t = outs[index.at(name)];
      if (t.dtype() != ir::DType::kF32) return unsupported("quantize: '" + name + "' is not float32");
      NFUSE_RETURN_IF_ERROR(observers[name].update(t.data<float>(), static_cast<size_t>(t.numel())),
                            "observing '" + name + "'");
    }
  }

  // (c) Ranges and parameters.
  std::map<std::string, QuantizedTensorInfo> info;
  for (const auto& name : observed) {
    QuantizedTensorInfo ti;
    ti.name = name;
    const ir::Value* v = g.find_value(name);
    const Method method = options.minmax_inputs && v && v->is_graph_input ? Method::kMinMax : options.method;
    NFUSE_ASSIGN_OR_RETURN(ti.range, observers[name].range(method, mo));
    NFUSE_ASSIGN_OR_RETURN(ti.params, activation_params(ti.range, options.act));
    info[name] = ti;
  }
  for (const auto& [x, src] : shared) {
    QuantizedTensorInfo ti = info.at(src);
    ti.name = x;
    ti.shared_with = src;
    info[x] = ti;
  }

  // (d) The QDQ graph.
  NFUSE_ASSIGN_OR_RETURN(result.qdq, clone_graph(g));
  ir::Graph& qg = *result.qdq;
  qg.relink();
  // Weights first (by the layer's name in the copy: node order and names survive the clone).
  std::vector<std::pair<ir::Node*, int>> qlayers;
  {
    size_t li = 0;
    for (const auto& up : qg.nodes()) {
      if (li >= layer_nodes.size()) break;
      ir::Node& n = *up;
      if (!is_layer_op(n) || weight_axis(n) < 0) continue;
      qlayers.emplace_back(&n, weight_axis(n));
      ++li;
    }
  }
  if (qlayers.size() != layer_nodes.size()) return internal_error("quantize: the graph copy lost a layer");
  for (auto& [n, axis] : qlayers) {
    NFUSE_RETURN_IF_ERROR(quantize_weight(qg, *n, axis), "quantizing the weight of " + n->label());
    ++result.weights_quantized;
  }
  std::vector<std::string> order = observed;
  for (const auto& [x, src] : shared) order.push_back(x);
  std::map<std::string, std::string> dq_name;
  for (const auto& name : order) {
    ir::Value* v = qg.find_value(name);
    if (!v) return internal_error("quantize: '" + name + "' is missing from the graph copy");
    NFUSE_ASSIGN_OR_RETURN(ir::Value * dq, insert_qdq(qg, v, info.at(name).params));
    dq_name[name] = dq->name;
    result.tensors.push_back(info.at(name));
  }
  for (auto& l : result.layers) l.qdq_output = l.output_quantized ? dq_name.at(l.output) : l.output;
  NFUSE_RETURN_IF_ERROR(qg.topo_sort(), "quantize");
  qg.relink();
  NFUSE_RETURN_IF_ERROR(qg.verify(), "quantize: the QDQ graph");
  return result;
}

Result<QuantizeReport> evaluate_quantization(const QuantizeResult& q, const std::vector<ir::Tensor>& batches,
                                             int threads) {
  std::vector<std::string> fp_names, q_names;
  for (const auto& l : q.layers) {
    fp_names.push_back(l.output);
    q_names.push_back(l.qdq_output);
  }
  std::map<std::string, size_t> fp_index, q_index;
  NFUSE_ASSIGN_OR_RETURN(auto fg, with_outputs(*q.fp32, fp_names, &fp_index));
  NFUSE_ASSIGN_OR_RETURN(auto qg, with_outputs(*q.qdq, q_names, &q_index));
  const std::string input_name = q.fp32->inputs()[0]->name;
  NFUSE_ASSIGN_OR_RETURN(auto fs, cpu_session(std::move(fg), /*optimize=*/false, threads));
  NFUSE_ASSIGN_OR_RETURN(auto qs, cpu_session(std::move(qg), /*optimize=*/true, threads));
  std::vector<ErrorMetrics> metrics(q.layers.size());
  ErrorMetrics out_metrics;
  auto add = [](ErrorMetrics& m, const ir::Tensor& ref, const ir::Tensor& got) -> Status {
    if (ref.dtype() != ir::DType::kF32 || got.dtype() != ir::DType::kF32 || ref.numel() != got.numel())
      return internal_error("float and QDQ outputs differ in dtype or size");
    m.update(ref.data<float>(), got.data<float>(), static_cast<size_t>(ref.numel()));
    return ok_status();
  };
  for (const auto& b : batches) {
    NFUSE_ASSIGN_OR_RETURN(auto fo, fs->run({{input_name, b}}));
    NFUSE_ASSIGN_OR_RETURN(auto qo, qs->run({{input_name, b}}));
    for (size_t i = 0; i < q.layers.size(); ++i) {
      NFUSE_RETURN_IF_ERROR(add(metrics[i], fo[fp_index.at(fp_names[i])], qo[q_index.at(q_names[i])]),
                            q.layers[i].name);
    }
    NFUSE_RETURN_IF_ERROR(add(out_metrics, fo[0], qo[0]), "graph output");
  }
  QuantizeReport r;
  for (size_t i = 0; i < q.layers.size(); ++i) {
    r.layers.push_back({q.layers[i], metrics[i].summary()});
    if (r.first_below_0_95.empty() && r.layers.back().error.cosine < 0.95) r.first_below_0_95 = q.layers[i].name;
  }
  r.output = out_metrics.summary();
  return r;
}

std::string report_json(const QuantizeReport& report, const QuantizeOptions& options) {
  auto metrics = [](const ErrorSummary& e) {
    return nlohmann::json{{"cosine", e.cosine}, {"snr_db", e.snr_db}, {"max_abs_error", e.max_abs_error}};
  };
  nlohmann::json j;
  j["method"] = std::string(method_name(options.method));
  j["act"] = options.act == ActScheme::kU8Asymmetric ? "u8" : options.act == ActScheme::kS8Symmetric ? "s8" : "s16";
  j["layers"] = nlohmann::json::array();
  for (const auto& l : report.layers) {
    nlohmann::json e = metrics(l.error);
    e["name"] = l.layer.name;
    e["op"] = l.layer.op;
    e["tensor"] = l.layer.output;
    j["layers"].push_back(e);
  }
  j["first_below_0_95"] = report.first_below_0_95.empty() ? nlohmann::json(nullptr)
                                                          : nlohmann::json(report.first_below_0_95);
  j["output"] = metrics(report.output);
  return j.dump(1);
}

}  // namespace nfuse::quant
