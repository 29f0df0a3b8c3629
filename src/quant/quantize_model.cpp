#include "quant/quantize_model.h"

#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "frontend/onnx/onnx_exporter.h"
#include "frontend/onnx/onnx_importer.h"
#include "quant/calib_data.h"
#include "quant/mixed_precision.h"
#include "quant/quant_report.h"
#include "quant/quantize_graph.h"
#include "quant/weight_only.h"

namespace nfuse::quant {
namespace {

constexpr int64_t kBatchRows = 100;
// A model with a symbolic batch runs at most this many input bytes per batch (at least one row):
// every observed activation of a batch is held at once during calibration, and the activations
// of a 960x960 detector are ~100x its input, so 20 such rows in one batch needed 14-20 GB.
constexpr int64_t kBatchInputBytes = int64_t{4} << 20;
constexpr int kSpeedRuns = 20;
constexpr int64_t kInt4BlockSize = 32;  // ONNX Runtime's quantizer default

// printf into a string.
void appendf(std::string* out, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
void appendf(std::string* out, const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  const int n = std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (n > 0) out->append(buf, std::min(static_cast<size_t>(n), sizeof buf - 1));
}

Status write_text(const std::string& path, const std::string& text) {
  std::ofstream f(path);
  f << text << "\n";
  f.close();
  if (!f) return unavailable("cannot write '" + path + "'");
  return ok_status();
}

// The model input's static batch dimension (0 when it is symbolic or the input has no dims).
int64_t fixed_batch(const ir::Graph& g) {
  const ir::Value* in = g.inputs().empty() ? nullptr : g.inputs()[0];
  if (in && in->type.shape.rank_known() && in->type.shape.rank() > 0 && in->type.shape[0].is_static() &&
      in->type.shape[0].value > 0)
    return in->type.shape[0].value;
  return 0;
}

// Rows per batch: the fixed batch when the model has one, else kBatchRows.
int64_t batch_rows(const ir::Graph& g) { return fixed_batch(g) > 0 ? fixed_batch(g) : kBatchRows; }

int64_t count_samples(const std::vector<ir::Tensor>& batches) {
  int64_t n = 0;
  for (const auto& b : batches) n += b.rank() > 0 ? b.dim(0) : 1;
  return n;
}

// The flags as QuantizeOptions; kInvalidArgument naming the flag.
Result<QuantizeOptions> parse_options(const QuantizeModelOptions& o) {
  QuantizeOptions qo;
  auto method = parse_method(o.method);
  if (!method.ok()) return invalid_argument("--method: " + method.status().message());
  qo.method = *method;
  // auto chooses 8-bit ranges; with none in the model (W8A16 everywhere, weight-only) the
  // scoring pass would only cost time.
  if (qo.method == Method::kAuto && (o.precision == "int16" || o.weight_only)) qo.method = Method::kMinMax;
  auto act = parse_act_scheme(o.act);
  if (!act.ok()) return invalid_argument("--act: " + act.status().message());
  if (*act == ActScheme::kS16Symmetric)
    return invalid_argument("--act: u8 or s8 (16-bit activations: --precision int16 or mixed)");
  qo.act = *act;
  NFUSE_ASSIGN_OR_RETURN(qo.precision, parse_precision(o.precision));
  NFUSE_RETURN_IF_ERROR_PLAIN(parse_promote_to(o.promote).status());
  if (!(o.target_cosine > 0.0 && o.target_cosine <= 1.0)) return invalid_argument("--target-cosine: must be in (0, 1]");
  if (o.weights != "int8" && o.weights != "int4")
    return invalid_argument("--weights: '" + o.weights + "' is not int8 or int4");
  if (o.threads < 1) return invalid_argument("--threads: must be >= 1");
  if (o.weight_only && o.weights == "int8" && o.precision != "int8")
    return invalid_argument("--weight-only: activations stay float, so --precision " + o.precision + " does not apply");
  qo.cle = o.cle;
  if (o.equalize != "auto" && o.equalize != "none" && o.equalize != "activations")
    return invalid_argument("--equalize: '" + o.equalize + "' is not auto, activations or none");
  qo.equalize_activations =
      o.equalize == "activations" || (o.equalize == "auto" && o.precision != "int16" && !o.weight_only);
  qo.bias_correction = o.bias_correction;
  NFUSE_ASSIGN_OR_RETURN(qo.weight_rounding, parse_weight_rounding(o.weight_rounding));
  if (o.conv_activations != "float" && o.conv_activations != "lookup")
    return invalid_argument("--conv-activations: '" + o.conv_activations + "' is not float or lookup");
  qo.conv_regions = o.conv_activations == "float";
  qo.method_options.percentile = o.percentile;
  qo.threads = o.threads;
  return qo;
}

// `--weights int4`: weight-only; the MatMul / Gemm weights become 4-bit blocks (MatMulNBits),
// activations stay float, so no calibration is needed; --calib (and --eval) only measure.
Result<QuantizeModelResult> weight_only_int4(const QuantizeModelOptions& o, const ir::Graph& model) {
  NFUSE_ASSIGN_OR_RETURN(auto fp32, clone_graph(model));
  NFUSE_RETURN_IF_ERROR(optimize_without_fusions(*fp32), "optimizing");
  NFUSE_ASSIGN_OR_RETURN(auto int4, clone_graph(*fp32));
  NFUSE_ASSIGN_OR_RETURN(int replaced, quantize_matmul_weights_int4(*int4, kInt4BlockSize, /*symmetric=*/true));
  if (replaced == 0) return unsupported("--weights int4: no MatMul / Gemm with a constant weight");
  NFUSE_RETURN_IF_ERROR(frontend::onnx::save_model(*int4, o.output), "export");
  auto data = load_npy_batches(o.eval.empty() ? o.calib : o.eval, o.calib_limit, batch_rows(model));
  if (data.ok() && fixed_batch(model) > 0)
    data = rebatch_exact(std::move(*data), fixed_batch(model), "evaluation data");
  if (!data.ok()) return data.status().with_context("loading the evaluation data");
  auto reference = run_output0(*fp32, *data, /*optimize=*/true, o.threads);
  if (!reference.ok()) return reference.status().with_context("evaluation: the float model");
  auto err = evaluate_output(*int4, *data, *reference, o.threads);
  if (!err.ok()) return err.status().with_context("evaluation");
  QuantizeModelResult r;
  appendf(&r.summary, "wrote %s: %d MatMul / Gemm weights as int4 blocks of %lld (weight-only, MatMulNBits)\n",
          o.output.c_str(), replaced, static_cast<long long>(kInt4BlockSize));
  appendf(&r.summary, "output (%s, %lld samples): cosine %.6f  snr %.2f dB  max abs %.4g\n",
          o.eval.empty() ? "calibration set" : "held-out set", static_cast<long long>(count_samples(*data)),
          err->cosine, err->snr_db, err->max_abs_error);
  nlohmann::json j{
      {"model", o.model},
      {"weights", "int4"},
      {"block_size", kInt4BlockSize},
      {"layers_replaced", replaced},
      {"output", {{"cosine", err->cosine}, {"snr_db", err->snr_db}, {"max_abs_error", err->max_abs_error}}}};
  r.report_json = j.dump(1);
  if (!o.report.empty()) NFUSE_RETURN_IF_ERROR(write_text(o.report, r.report_json), "report");
  return r;
}

// Sensitivity of every layer, and the promotions of --precision mixed, into `ri`.
Status sensitivity_and_mixed(const QuantizeModelOptions& o, const std::vector<ir::Tensor>& calib, int64_t batch,
                             QuantizeResult& q, ReportInput* ri) {
  if (q.selection.weights_only) return ok_status();  // nothing but the weights to blame
  NFUSE_ASSIGN_OR_RETURN(PromoteTo promote, parse_promote_to(o.promote));
  const bool mixed_precision = ri->options.precision == Precision::kMixed;
  std::vector<ir::Tensor> subset = first_samples(calib, kSensitivitySamples, kSensitivityElements, batch);
  std::vector<ir::Tensor> promo, promo_ref;
  if (mixed_precision) {
    // The search must lift the worst sample: the layers are scored on the promotion samples
    // where the all-int8 graph is worst, as many as the sensitivity budget holds and at least
    // kSensitivityWorstSamples.
    promo = first_samples(calib, kPromotionSamples, kPromotionElements, batch);
    auto r = run_output0(*q.fp32, promo, /*optimize=*/false, o.threads);
    if (!r.ok()) return r.status().with_context("mixed precision: the float model");
    promo_ref = std::move(*r);
    std::vector<double> per_batch;
    NFUSE_RETURN_IF_ERROR(evaluate_output(*q.qdq, promo, promo_ref, o.threads, nullptr, nullptr, &per_batch).status(),
                          "mixed precision: the int8 model's worst samples");
    std::vector<size_t> order(promo.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return per_batch[a] < per_batch[b]; });
    const size_t count = std::min(order.size(), std::max(subset.size(), kSensitivityWorstSamples));
    subset.clear();
    for (size_t i = 0; i < count; ++i) subset.push_back(promo[order[i]]);
  }
  auto reference = run_output0(*q.fp32, subset, /*optimize=*/false, o.threads);
  if (!reference.ok()) return reference.status().with_context("sensitivity: the float model");
  auto sens = layer_sensitivity(q, subset, *reference, o.threads, mixed_precision && promote != PromoteTo::kFloat);
  if (!sens.ok()) return sens.status().with_context("sensitivity");
  ri->sensitivity = std::move(*sens);
  for (const ir::Tensor& t : subset) ri->sensitivity_samples += batch > 1 && t.rank() > 0 ? t.dim(0) : 1;
  const char* plural = ri->sensitivity_samples == 1 ? "" : "s";
  ri->sensitivity_set = mixed_precision
                            ? "the " + std::to_string(ri->sensitivity_samples) + " calibration sample" + plural +
                                  " where the int8 model is worst"
                            : "the first " + std::to_string(ri->sensitivity_samples) + " calibration sample" + plural;
  if (!mixed_precision) return ok_status();
  auto int8_ms = median_ms(*q.qdq, subset[0], kSpeedRuns, o.threads);
  if (!int8_ms.ok()) return int8_ms.status().with_context("mixed precision: timing the int8 model");
  ri->int8_ms = *int8_ms;
  auto mixed = promote_until(q, ri->sensitivity, *ri->work, promo, promo_ref, o.target_cosine, promote, o.threads);
  if (!mixed.ok()) return mixed.status().with_context("mixed precision");
  auto final_ms = median_ms(*q.qdq, subset[0], kSpeedRuns, o.threads);
  if (!final_ms.ok()) return final_ms.status().with_context("mixed precision: timing the promoted model");
  ri->final_ms = *final_ms;
  ri->mixed = std::move(*mixed);
  return ok_status();
}

// The weight-only floor and the quantized graph's worst sample, on the held-out set when there is
// one (else the calibration set), into `ri`.
Status floor_and_worst(const QuantizeModelOptions& o, const std::vector<ir::Tensor>& data, const QuantizeResult& q,
                       ReportInput* ri) {
  auto reference = run_output0(*q.fp32, data, /*optimize=*/false, o.threads);
  if (!reference.ok()) return reference.status().with_context("the weight-only floor: the float model");
  QdqSelection weights_only = q.selection;
  weights_only.weights_only = true;
  weights_only.float_layers.clear();
  weights_only.int16_layers.clear();
  auto floor_graph = build_qdq_graph(*q.fp32, q.plan, q.calibrated, weights_only);
  if (!floor_graph.ok()) return floor_graph.status().with_context("the weight-only floor");
  auto floor = evaluate_output(*floor_graph->graph, data, *reference, o.threads, &ri->weight_only_worst);
  if (!floor.ok()) return floor.status().with_context("the weight-only floor");
  ri->weight_only_floor = *floor;
  auto out = evaluate_output(*q.qdq, data, *reference, o.threads, &ri->output_worst, &ri->worst_sample_index);
  if (!out.ok()) return out.status().with_context("evaluation: the worst sample");
  auto layers = evaluate_quantization(q, {data[ri->worst_sample_index]}, o.threads);
  if (!layers.ok()) return layers.status().with_context("evaluation: every layer on the worst sample");
  ri->worst_sample = std::move(*layers);
  return ok_status();
}

void summarise(const QuantizeModelOptions& o, const QuantizeResult& q, const ReportInput& ri, double calibrated_s,
               std::string* out) {
  appendf(out,
          "wrote %s (%zu nodes): %zu layers, %zu activation tensors, %d weights quantized (%s, %s, %s); "
          "calibrated on %lld samples in %.1f s\n",
          o.output.c_str(), q.qdq->nodes().size(), q.layers.size(), q.tensors.size(), q.weights_quantized,
          std::string(method_name(ri.options.method)).c_str(), o.act.c_str(),
          o.weight_only ? "weight-only" : o.precision.c_str(), static_cast<long long>(ri.calibration_samples),
          calibrated_s);
  if (ri.options.method == Method::kAuto) {
    std::string chosen;
    for (const auto& [method, n] : range_method_counts(q)) chosen += " " + method + " " + std::to_string(n);
    appendf(out, "8-bit ranges chosen per tensor (auto):%s\n", chosen.c_str());
  }
  const QuantizeReport& head = ri.evaluation ? *ri.evaluation : ri.calibration;
  appendf(out, "per layer (%s set; 'alone': output cosine with only that layer quantized, on %s):\n",
          ri.evaluation ? "held-out" : "calibration",
          ri.sensitivity_set.empty() ? "no sample (not measured)" : ri.sensitivity_set.c_str());
  for (size_t i = 0; i < head.layers.size(); ++i) {
    const auto& l = head.layers[i];
    appendf(out, "  %-32s %-18s cosine %.6f  snr %6.2f dB  max abs %-10.4g alone %.6f\n", l.layer.name.c_str(),
            l.layer.op.c_str(), l.error.cosine, l.error.snr_db, l.error.max_abs_error,
            i < ri.sensitivity.size() ? ri.sensitivity[i].output.cosine : 1.0);
  }
  appendf(out, "output (calibration): cosine %.6f  snr %.2f dB  max abs %.4g\n", ri.calibration.output.cosine,
          ri.calibration.output.snr_db, ri.calibration.output.max_abs_error);
  if (ri.evaluation) {
    appendf(out, "output (held-out, %lld samples): cosine %.6f  snr %.2f dB  max abs %.4g\n",
            static_cast<long long>(ri.evaluation_samples), ri.evaluation->output.cosine, ri.evaluation->output.snr_db,
            ri.evaluation->output.max_abs_error);
  } else {
    appendf(out, "no held-out set: pass --eval DIR to measure on data the calibration did not see\n");
  }
  if (ri.weight_only_floor) {
    appendf(out,
            "worst sample (%s): cosine %.6f; weight-only int8 floor: cosine %.6f, worst sample %.6f "
            "(what 8-bit weights alone cost)\n",
            ri.evaluation ? "held-out" : "calibration", ri.output_worst, ri.weight_only_floor->cosine,
            ri.weight_only_worst);
  }
  appendf(out, "first layer below cosine 0.95: %s\n",
          head.first_below_0_95.empty() ? "none" : head.first_below_0_95.c_str());
  if (ri.macs) {
    const MacShares& m = *ri.macs;
    const double total = static_cast<double>(std::max<int64_t>(m.total(), 1));
    appendf(out, "MACs per sample: %.4g G; int8 %.2f%%, int16 %.2f%%, float %.2f%%\n", m.total() * 1e-9,
            100.0 * m.int8 / total, 100.0 * m.int16 / total, 100.0 * m.float32 / total);
  }
  if (ri.mixed) {
    int to16 = 0, to_float = 0;
    for (const auto& p : ri.mixed->promotions) (p.to == PromoteTo::kInt16 ? to16 : to_float) += 1;
    appendf(out,
            "mixed precision (--promote %s): %d layers promoted to int16, %d to float; output cosine %.6f -> %.6f, "
            "worst sample %.6f -> %.6f (target %.6g %s); %d taken back down a rung after; %.2f ms -> %.2f ms\n",
            o.promote.c_str(), to16, to_float, ri.mixed->before.cosine, ri.mixed->after.cosine, ri.mixed->worst_before,
            ri.mixed->worst_after, o.target_cosine, ri.mixed->target_met ? "met" : "NOT met", ri.mixed->demotions,
            ri.int8_ms, ri.final_ms);
    for (const auto& p : ri.mixed->promotions) {
      appendf(out, "  promoted %-32s to %-5s %12lld MACs; alone cosine %.6f (int16 alone %.6f)", p.name.c_str(),
              promote_to_name(p.to), static_cast<long long>(p.macs), p.alone_cosine, p.alone_int16_cosine);
      if (!p.writes_input_of.empty()) appendf(out, "; writes the input of %s", p.writes_input_of.c_str());
      appendf(out, "\n");
    }
  }
  if (o.cle) appendf(out, "cross-layer equalization: %d conv pairs\n", q.equalized_pairs);
  int conv_regions = 0;
  for (const auto& l : q.plan.layers) conv_regions += l.fused_root.empty() ? 0 : 1;
  if (conv_regions > 0 && !q.selection.weights_only)
    appendf(out, "activations run on the conv accumulator (--conv-activations float): %d convs\n", conv_regions);
  if (q.ranges_cut_to_readers > 0 && !q.selection.weights_only)  // weight-only: no activation ranges
    appendf(out, "ranges cut where their lookups turn constant: %d tensors\n", q.ranges_cut_to_readers);
  if (q.activation_equalized_pairs > 0 || o.equalize == "activations")
    appendf(out, "activation equalization: %d conv pairs, %d channels rescaled\n", q.activation_equalized_pairs,
            q.activation_equalized_channels);
  if (o.bias_correction) appendf(out, "bias correction: %d layers\n", q.biases_corrected);
  if (o.weight_rounding == "adaptive")
    appendf(out, "adaptive weight rounding: %d of %d weighted layers (the others: nearest)\n",
            q.weights_rounded_adaptively, q.weights_quantized);
  if (!o.report.empty()) appendf(out, "report: %s\n", o.report.c_str());
  if (!o.html.empty()) appendf(out, "html: %s\n", o.html.c_str());
}

// A folder's samples in the batches the model runs: exactly its fixed batch when it has one.
Result<std::vector<ir::Tensor>> load_data(const std::string& dir, int64_t limit, const ir::Graph& model,
                                          const ImageOptions& image_options, const char* step) {
  auto data = load_calibration(dir, limit, batch_rows(model), image_options);
  if (!data.ok()) return data.status().with_context(step);
  if (fixed_batch(model) == 0) {
    std::vector<ir::Tensor> out;
    for (auto& b : *data) {
      const int64_t rows = b.rank() > 0 ? b.dim(0) : 1;
      const int64_t row_bytes = std::max<int64_t>(1, static_cast<int64_t>(b.bytes()) / std::max<int64_t>(1, rows));
      const int64_t fit = std::max<int64_t>(1, kBatchInputBytes / row_bytes);
      if (b.rank() == 0 || rows <= fit) {
        out.push_back(std::move(b));
        continue;
      }
      for (auto& part : split_batches(b, fit)) out.push_back(std::move(part));
    }
    return out;
  }
  return rebatch_exact(std::move(*data), fixed_batch(model), std::string(step) + " '" + dir + "'");
}

}  // namespace

Result<QuantizeModelResult> quantize_model(const QuantizeModelOptions& o) {
  const auto t0 = std::chrono::steady_clock::now();
  NFUSE_ASSIGN_OR_RETURN(QuantizeOptions qo, parse_options(o));
  NFUSE_ASSIGN_OR_RETURN(auto graph, frontend::onnx::load_model(o.model));
  if (o.weights == "int4") return weight_only_int4(o, *graph);
  // .npy or image folders; images are resized to --size (default: the input's static H, W).
  ImageOptions image_options;
  NFUSE_RETURN_IF_ERROR_PLAIN(parse_image_options(o.size, o.mean, o.std_dev, o.layout, &image_options));
  if (!graph->inputs().empty()) complete_image_options(graph->inputs()[0]->type, &image_options);
  NFUSE_ASSIGN_OR_RETURN(auto calib, load_data(o.calib, o.calib_limit, *graph, image_options, "loading --calib"));
  std::vector<ir::Tensor> eval_batches;
  if (!o.eval.empty()) {
    NFUSE_ASSIGN_OR_RETURN(eval_batches, load_data(o.eval, 0, *graph, image_options, "loading --eval"));
  }
  auto q = quantize_static(*graph, calib, qo);
  if (!q.ok()) return q.status().with_context("calibration");
  if (o.weight_only) {
    QdqSelection weights_only = q->selection;
    weights_only.weights_only = true;
    NFUSE_RETURN_IF_ERROR(q->rebuild(weights_only), "--weight-only");
  }
  const double calibrated_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  ReportInput ri;
  ri.model = o.model;
  ri.options = qo;
  ri.result = &*q;
  ri.calibration_samples = count_samples(calib);
  ri.evaluation_samples = count_samples(eval_batches);
  {
    auto work = layer_work(*q, calib[0].dims());
    if (!work.ok()) return work.status().with_context("counting each layer's MACs");
    ri.work = std::move(*work);
  }
  NFUSE_RETURN_IF_ERROR_PLAIN(sensitivity_and_mixed(o, calib, fixed_batch(*graph), *q, &ri));
  NFUSE_RETURN_IF_ERROR(frontend::onnx::save_model(*q->qdq, o.output), "export");
  {
    auto macs = executed_mac_shares(*q->qdq, calib[0].dims());
    if (!macs.ok()) return macs.status().with_context("counting the MACs of each precision as the model runs");
    ri.macs = *macs;
  }
  NFUSE_RETURN_IF_ERROR_PLAIN(floor_and_worst(o, eval_batches.empty() ? calib : eval_batches, *q, &ri));
  auto rc = evaluate_quantization(*q, calib, o.threads);
  if (!rc.ok()) return rc.status().with_context("evaluation on --calib");
  ri.calibration = std::move(*rc);
  if (!eval_batches.empty()) {
    auto re = evaluate_quantization(*q, eval_batches, o.threads);
    if (!re.ok()) return re.status().with_context("evaluation on --eval");
    ri.evaluation = std::move(*re);
  }
  QuantizeModelResult r;
  r.report_json = report_json(ri);
  if (!o.report.empty()) NFUSE_RETURN_IF_ERROR(write_text(o.report, r.report_json), "report");
  if (!o.html.empty()) NFUSE_RETURN_IF_ERROR(write_text(o.html, report_html(ri)), "report");
  summarise(o, *q, ri, calibrated_s, &r.summary);
  return r;
}

}  // namespace nfuse::quant
