#include "quant/quantize_graph.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <new>
#include <span>

#include "backends/ref/interpreter.h"
#include "frontend/onnx/opset_convert.h"
#include "passes/pass_manager.h"
#include "quant/activation_equalize.h"
#include "quant/adaptive_rounding.h"
#include "quant/observer.h"
#include "quant/range_selection.h"
#include "quant/reader_domain.h"
#include "runtime/session.h"

namespace nfuse::quant {

namespace {

Result<std::unique_ptr<runtime::Session>> cpu_session(std::unique_ptr<ir::Graph> g, bool optimize, int threads) {
  runtime::SessionOptions so;
  so.backend = "cpu";
  so.threads = threads;
  so.optimize = optimize;
  return runtime::Session::create(std::move(g), so);
}

Status add_error(ErrorMetrics& m, const ir::Tensor& ref, const ir::Tensor& got) {
  if (ref.dtype() != ir::DType::kF32 || got.dtype() != ir::DType::kF32 || ref.numel() != got.numel())
    return internal_error("float and QDQ outputs differ in dtype or size");
  m.update(ref.data<float>(), got.data<float>(), static_cast<size_t>(ref.numel()));
  return ok_status();
}

// Per-channel sums of a float activation (channel = axis 1, or the last axis).
struct ChannelMean {
  bool channel_axis_last = false;
  std::vector<double> sum;
  int64_t per_channel = 0;

  void update(const ir::Tensor& t) {
    if (t.dtype() != ir::DType::kF32 || t.rank() < 2) return;
    const int axis = channel_axis_last ? t.rank() - 1 : 1;
    const int64_t c = t.dim(axis);
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < axis; ++i) outer *= t.dim(i);
    for (int i = axis + 1; i < t.rank(); ++i) inner *= t.dim(i);
    if (sum.empty()) sum.assign(static_cast<size_t>(c), 0.0);
    if (static_cast<int64_t>(sum.size()) != c) return;
    const float* p = t.data<float>();
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t ch = 0; ch < c; ++ch) {
        double acc = 0.0;
        const float* row = p + (o * c + ch) * inner;
        for (int64_t i = 0; i < inner; ++i) acc += row[i];
        sum[static_cast<size_t>(ch)] += acc;
      }
    }
    per_channel += outer * inner;
  }
  std::vector<double> means() const {
    std::vector<double> m = sum;
    for (double& v : m) v = per_channel > 0 ? v / static_cast<double>(per_channel) : 0.0;
    return m;
  }
};

// Per-channel ranges of every pair's activation from a float run over `batches`, then the
// rescaling (activation_equalize.h).
Result<ActivationEqualizeReport> equalize_activations(ir::Graph& g, const std::vector<ir::Tensor>& batches,
                                                      ActScheme act, bool conv_regions, int threads) {
  ActivationEqualizeReport report;
  NFUSE_ASSIGN_OR_RETURN(QuantPlan plan, plan_quantization(g, act, conv_regions));
  std::vector<std::string> roots, outputs;
  for (const auto& l : plan.layers) {
    // A Conv's absorbed region: no 8-bit tensor on its input side to equalize, its output still.
    if (l.kind != LayerKind::kLookup && l.fused_root.empty()) continue;
    if (l.kind == LayerKind::kLookup) roots.push_back(l.inputs[0]);
    if (l.output_quantized) outputs.push_back(l.output);
  }
  const std::vector<ActivationPair> pairs = activation_equalization_pairs(g, roots, outputs);
  if (pairs.empty()) return report;
  std::vector<std::string> names;
  for (const auto& p : pairs) names.push_back(p.tensor);
  std::map<std::string, size_t> index;
  NFUSE_ASSIGN_OR_RETURN(auto copy, with_outputs(g, names, &index));
  const std::string input_name = g.inputs()[0]->name;
  NFUSE_ASSIGN_OR_RETURN(auto session, cpu_session(std::move(copy), /*optimize=*/false, threads));
  std::vector<ChannelRanges> ranges(pairs.size());
  for (const auto& b : batches) {
    NFUSE_ASSIGN_OR_RETURN(auto outs, session->run({{input_name, b}}));
    for (size_t i = 0; i < pairs.size(); ++i)
      NFUSE_RETURN_IF_ERROR(ranges[i].update(outs[index.at(pairs[i].tensor)]), "observing '" + pairs[i].tensor + "'");
  }
  for (size_t i = 0; i < pairs.size(); ++i) {
    NFUSE_ASSIGN_OR_RETURN(int changed, apply_activation_scales(g, pairs[i], activation_scales(ranges[i])));
    report.channels += changed;
    report.pairs += changed > 0 ? 1 : 0;
  }
  g.relink();
  NFUSE_RETURN_IF_ERROR_PLAIN(g.topo_sort());
  g.relink();
  return report;
}

}  // namespace

Result<Precision> parse_precision(std::string_view name) {
  if (name == "int8") return Precision::kInt8;
  if (name == "int16") return Precision::kInt16;
  if (name == "mixed") return Precision::kMixed;
  return invalid_argument("--precision: '" + std::string(name) + "' is not int8, int16 or mixed");
}

Result<WeightRounding> parse_weight_rounding(std::string_view name) {
  if (name == "nearest") return WeightRounding::kNearest;
  if (name == "adaptive") return WeightRounding::kAdaptive;
  return invalid_argument("--weight-rounding: '" + std::string(name) + "' is not nearest or adaptive");
}

const char* precision_name(Precision p) {
  switch (p) {
    case Precision::kInt8: return "int8";
    case Precision::kInt16: return "int16";
    case Precision::kMixed: return "mixed";
  }
  return "?";
}

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

Status optimize_without_fusions(ir::Graph& g) {
  passes::OptimizeOptions po;
  po.evaluator = backends::ref::node_evaluator();
  // The passes whose results are not standard ONNX (as `nfuse export --optimize --no-fusions`).
  po.disabled = passes::nonstandard_pass_names();
  try {
    auto r = passes::optimize(g, po);
    if (!r.ok()) return r.status();
  } catch (const std::bad_alloc&) {
    return out_of_memory("optimizing for quantization: out of memory");
  }
  return ok_status();
}

std::map<std::string, int> range_method_counts(const QuantizeResult& q) {
  std::map<std::string, int> out;
  for (const auto& t : q.tensors) {
    if (t.shared_with.empty() && t.params.storage != ir::DType::kI16) ++out[std::string(method_name(t.method))];
  }
  return out;
}

Status QuantizeResult::rebuild(const QdqSelection& s) {
  NFUSE_ASSIGN_OR_RETURN(QdqGraph built, build_qdq_graph(*fp32, plan, calibrated, s));
  qdq = std::move(built.graph);
  measured = std::move(built.measured);
  weights_quantized = built.weights_quantized;
  biases_corrected = built.biases_corrected;
  weights_rounded_adaptively = built.weights_rounded_adaptively;
  selection = s;
  tensors.clear();
  for (const auto& t : plan.tensors) {
    const auto p = built.params.find(t);
    if (p == built.params.end()) continue;
    const CalibratedTensor& c = calibrated.at(t);
    const bool s16 = built.schemes.at(t) == ActScheme::kS16Symmetric;
    tensors.push_back({t, p->second, s16 ? c.range16 : c.range8, s16 ? Method::kMinMax : c.method8, c.shared_with});
  }
  return ok_status();
}

Result<QuantizeResult> quantize_static(const ir::Graph& fp32, const std::vector<ir::Tensor>& batches,
                                       const QuantizeOptions& options) {
  if (fp32.inputs().size() != 1) return unsupported("quantize: models with exactly one input are supported");
  if (batches.empty()) return invalid_argument("quantize: no calibration batches");
  MethodOptions mo8 = options.method_options;
  mo8.bits = 8;
  mo8.symmetric = options.act != ActScheme::kU8Asymmetric;
  NFUSE_RETURN_IF_ERROR(validate(mo8, options.method), "quantize");
  MethodOptions mo16 = options.method_options;
  mo16.bits = 16;
  mo16.symmetric = true;

  QuantizeResult result;
  // Per-axis DequantizeLinear needs opset 13: older models are converted (a copy either way).
  NFUSE_ASSIGN_OR_RETURN(result.fp32, frontend::onnx::convert_default_opset(fp32, 13));
  ir::Graph& g = *result.fp32;
  NFUSE_RETURN_IF_ERROR(optimize_without_fusions(g), "quantize");
  g.relink();
  if (options.cle) {
    NFUSE_ASSIGN_OR_RETURN(EqualizeReport eq, cross_layer_equalize(g));
    result.equalized_pairs = eq.pairs;
  }
  if (options.equalize_activations) {
    auto eq = equalize_activations(g, batches,
                                   options.precision == Precision::kInt16 ? ActScheme::kS16Symmetric : options.act,
                                   options.conv_regions, options.threads);
    if (!eq.ok()) return eq.status().with_context("quantize: activation equalization");
    result.activation_equalized_pairs = eq->pairs;
    result.activation_equalized_channels = eq->channels;
  }
  // int16 everywhere is symmetric s16 (a Conv's Relu / Clip becomes the fused op's clamp).
  NFUSE_ASSIGN_OR_RETURN(
      result.plan, plan_quantization(g, options.precision == Precision::kInt16 ? ActScheme::kS16Symmetric : options.act,
                                     options.conv_regions));
  result.layers = result.plan.layers;

  // Calibration on the float graph: observers, and per-channel input means for bias correction.
  const std::vector<std::string> observed = result.plan.observed();
  std::vector<std::string> wanted = observed;
  std::map<std::string, ChannelMean> means;
  if (options.bias_correction) {
    for (const auto& l : result.plan.layers) {
      if (l.kind != LayerKind::kWeighted) continue;
      means[l.inputs[0]].channel_axis_last = l.op != "Conv" && l.op != "ConvTranspose";
      wanted.push_back(l.inputs[0]);
    }
  }
  // --weight-rounding adaptive: each weighted layer's input second moments.
  struct GramLayer {
    const PlannedLayer* layer;
    const ir::Node* node;
    LayerGram gram;
  };
  std::vector<GramLayer> grams;
  if (options.weight_rounding == WeightRounding::kAdaptive) {
    for (const auto& l : result.plan.layers) {
      const ir::Node* n = l.kind == LayerKind::kWeighted ? find_layer_node(g, l) : nullptr;
      auto geometry = n ? gram_geometry(*n) : Result<GramGeometry>(unsupported("not a weighted layer"));
      if (!geometry.ok() || geometry->k > kAdaptiveRoundingMaxK) continue;  // keeps nearest rounding
      grams.push_back({&l, n, LayerGram{*geometry, {}, 0, 0}});
      wanted.push_back(l.inputs[0]);
    }
  }
  std::map<std::string, size_t> index;
  NFUSE_ASSIGN_OR_RETURN(auto calib_graph, with_outputs(g, wanted, &index));
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
    for (auto& [name, m] : means) m.update(outs[index.at(name)]);
    for (auto& gl : grams) {
      NFUSE_RETURN_IF_ERROR(accumulate_gram(outs[index.at(gl.layer->inputs[0])], &gl.gram),
                            "adaptive weight rounding of " + gl.node->label());
    }
  }
  // --method auto: the candidates of every observed tensor, scored on a second pass.
  auto is_minmax_input = [&](const std::string& name) {
    const ir::Value* v = g.find_value(name);
    return options.minmax_inputs && v && v->is_graph_input;
  };
  std::map<std::string, std::vector<RangeCandidate>> candidates;
  if (options.method == Method::kAuto) {
    for (const auto& name : observed) {
      if (is_minmax_input(name) || result.plan.int16_only.count(name)) continue;
      auto c = range_candidates(observers[name], mo8);
      if (!c.ok()) return c.status().with_context("calibration: ranges of '" + name + "'");
      candidates[name] = std::move(*c);
    }
    NFUSE_ASSIGN_OR_RETURN(auto selector,
                           RangeSelector::create(g, result.plan, options.act, candidates, options.threads));
    for (size_t i = 0; i < batches.size(); ++i) {
      NFUSE_ASSIGN_OR_RETURN(auto outs, session->run({{input_name, batches[i]}}));
      std::map<std::string, const ir::Tensor*> tensors;
      for (const auto& name : selector->needed()) tensors[name] = &outs[index.at(name)];
      NFUSE_RETURN_IF_ERROR(selector->observe(tensors), "calibration: range selection, batch " + std::to_string(i));
    }
    for (const auto& [name, k] : selector->choose()) candidates[name] = {candidates[name][k]};
  }
  session.reset();
  auto rounded = std::make_shared<RoundedWeights>();
  for (auto& gl : grams) {
    const ir::Tensor& w = *gl.node->input(1)->constant;
    NFUSE_ASSIGN_OR_RETURN(QuantizedTensor q, quantize_weights_per_channel(w, gl.layer->weight_axis, {}));
    auto adapted = adaptive_round(w, gl.layer->weight_axis, q.params.scale, gl.gram, &q.data);
    if (!adapted.ok()) return adapted.status().with_context("adaptive weight rounding of " + gl.node->label());
    if (*adapted > 0) (*rounded)[gl.layer->node_output] = {q.params.scale, std::move(q.data)};
    gl.gram = LayerGram{};  // its k x k matrices are no longer needed
  }

  // Ranges.
  for (const auto& name : observed) {
    CalibratedTensor c;
    const auto chosen = candidates.find(name);
    if (chosen != candidates.end()) {
      c.method8 = chosen->second[0].method;
      c.range8 = chosen->second[0].range;
    } else {
      c.method8 = is_minmax_input(name) || options.method == Method::kAuto ? Method::kMinMax : options.method;
      NFUSE_ASSIGN_OR_RETURN(c.range8, observers[name].range(c.method8, mo8));
    }
    NFUSE_ASSIGN_OR_RETURN(c.range16, observers[name].range(Method::kMinMax, mo16));
    c.range16.min *= kRange16Headroom;
    c.range16.max *= kRange16Headroom;
    // Codes only where some reader still varies (reader_domain.h).
    NFUSE_ASSIGN_OR_RETURN(Range observed_range, observers[name].range(Method::kMinMax, mo8));
    if (const auto domain = reader_domain(g, result.plan, name, observed_range)) {
      for (Range* r : {&c.range8, &c.range16}) {
        r->min = std::max(r->min, domain->min);
        r->max = std::min(r->max, domain->max);
      }
      c.reader_cut = *domain;
      ++result.ranges_cut_to_readers;
    }
    result.calibrated[name] = c;
  }
  for (const auto& [x, src] : result.plan.shared) {
    CalibratedTensor c = result.calibrated.at(src);
    c.shared_with = src;
    result.calibrated[x] = c;
  }
  for (const auto& [name, m] : means) result.calibrated[name].channel_mean = m.means();

  QdqSelection selection;
  selection.bias_correction = options.bias_correction;
  if (!rounded->empty()) selection.rounded = std::move(rounded);
  selection.act = options.precision == Precision::kInt16 ? ActScheme::kS16Symmetric : options.act;
  NFUSE_RETURN_IF_ERROR(result.rebuild(selection), "quantize");
  return result;
}

Result<QuantizeReport> evaluate_quantization(const QuantizeResult& q, const std::vector<ir::Tensor>& batches,
                                             int threads) {
  std::vector<std::string> fp_names, q_names;
  for (const auto& l : q.layers) {
    fp_names.push_back(l.output);
    q_names.push_back(q.measured.at(l.node_output));
  }
  std::map<std::string, size_t> fp_index, q_index;
  NFUSE_ASSIGN_OR_RETURN(auto fg, with_outputs(*q.fp32, fp_names, &fp_index));
  NFUSE_ASSIGN_OR_RETURN(auto qg, with_outputs(*q.qdq, q_names, &q_index));
  const std::string input_name = q.fp32->inputs()[0]->name;
  NFUSE_ASSIGN_OR_RETURN(auto fs, cpu_session(std::move(fg), /*optimize=*/false, threads));
  NFUSE_ASSIGN_OR_RETURN(auto qs, cpu_session(std::move(qg), /*optimize=*/true, threads));
  std::vector<ErrorMetrics> metrics(q.layers.size());
  ErrorMetrics out_metrics;
  for (const auto& b : batches) {
    NFUSE_ASSIGN_OR_RETURN(auto fo, fs->run({{input_name, b}}));
    NFUSE_ASSIGN_OR_RETURN(auto qo, qs->run({{input_name, b}}));
    for (size_t i = 0; i < q.layers.size(); ++i) {
      const ir::Tensor& f = fo[fp_index.at(fp_names[i])];
      const auto c = q.calibrated.find(fp_names[i]);
      if (c != q.calibrated.end() &&
          (std::isfinite(c->second.reader_cut.min) || std::isfinite(c->second.reader_cut.max))) {
        // A tensor cut to what its lookups tell apart: the values beyond are equal for its readers.
        ir::Tensor clamped = f.clone();
        for (float& v : std::span<float>(clamped.data<float>(), static_cast<size_t>(clamped.numel())))
          v = std::clamp(v, c->second.reader_cut.min, c->second.reader_cut.max);
        NFUSE_RETURN_IF_ERROR(add_error(metrics[i], clamped, qo[q_index.at(q_names[i])]), q.layers[i].name);
        continue;
      }
      NFUSE_RETURN_IF_ERROR(add_error(metrics[i], f, qo[q_index.at(q_names[i])]), q.layers[i].name);
    }
    NFUSE_RETURN_IF_ERROR(add_error(out_metrics, fo[0], qo[0]), "graph output");
  }
  QuantizeReport r;
  for (size_t i = 0; i < q.layers.size(); ++i) {
    r.layers.push_back({q.layers[i], metrics[i].summary()});
    if (r.first_below_0_95.empty() && r.layers.back().error.cosine < 0.95) r.first_below_0_95 = q.layers[i].name;
  }
  r.output = out_metrics.summary();
  return r;
}

Result<std::vector<ir::Tensor>> run_output0(const ir::Graph& g, const std::vector<ir::Tensor>& batches,
                                            bool optimize, int threads) {
  NFUSE_ASSIGN_OR_RETURN(auto copy, clone_graph(g));
  const std::string input_name = g.inputs()[0]->name;
  NFUSE_ASSIGN_OR_RETURN(auto session, cpu_session(std::move(copy), optimize, threads));
  std::vector<ir::Tensor> out;
  for (const auto& b : batches) {
    NFUSE_ASSIGN_OR_RETURN(auto o, session->run({{input_name, b}}));
    out.push_back(std::move(o[0]));
  }
  return out;
}

Result<ErrorSummary> evaluate_output(const ir::Graph& qdq, const std::vector<ir::Tensor>& batches,
                                     const std::vector<ir::Tensor>& reference, int threads, double* worst_batch_cosine,
                                     size_t* worst_batch, std::vector<double>* batch_worst) {
  if (reference.size() != batches.size()) return internal_error("evaluate_output: one reference per batch expected");
  NFUSE_ASSIGN_OR_RETURN(auto got, run_output0(qdq, batches, /*optimize=*/true, threads));
  ErrorMetrics m;
  // Each sample is judged on its own: a batch's output rows when its dim 0 is the batch's rows.
  // A sample whose reference is nearly all zero (a photo without text for a text detector) has
  // no meaningful cosine: samples below 1% of the largest reference energy do not set the worst.
  std::vector<double> energy, cosine;
  std::vector<size_t> batch_of;
  double max_energy = 0.0;
  for (size_t i = 0; i < got.size(); ++i) {
    ErrorMetrics whole;
    NFUSE_RETURN_IF_ERROR(add_error(whole, reference[i], got[i]), "graph output");
    m.merge(whole);
    const ir::Tensor& r = reference[i];
    const int64_t in_rows = batches[i].rank() > 0 ? batches[i].dim(0) : 1;
    const int64_t rows = r.rank() > 0 && r.dim(0) == in_rows && in_rows > 1 ? in_rows : 1;
    const size_t per_row = static_cast<size_t>(r.numel() / rows);
    for (int64_t row = 0; row < rows; ++row) {
      const float* ref_row = r.data<float>() + static_cast<size_t>(row) * per_row;
      ErrorMetrics one;
      one.update(ref_row, got[i].data<float>() + static_cast<size_t>(row) * per_row, per_row);
      cosine.push_back(one.summary().cosine);
      batch_of.push_back(i);
      double e = 0.0;
      for (size_t k = 0; k < per_row; ++k) e += static_cast<double>(ref_row[k]) * ref_row[k];
      energy.push_back(e);
      max_energy = std::max(max_energy, e);
    }
  }
  double worst = 1.0;
  size_t worst_at = 0;
  if (batch_worst) batch_worst->assign(got.size(), 1.0);
  for (size_t i = 0; i < cosine.size(); ++i) {
    if (!(energy[i] >= 0.01 * max_energy)) continue;
    if (batch_worst) (*batch_worst)[batch_of[i]] = std::min((*batch_worst)[batch_of[i]], cosine[i]);
    if (cosine[i] < worst) {
      worst = cosine[i];
      worst_at = batch_of[i];
    }
  }
  if (worst_batch_cosine) *worst_batch_cosine = worst;
  if (worst_batch) *worst_batch = worst_at;
  return m.summary();
}

}  // namespace nfuse::quant
