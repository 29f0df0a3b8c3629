// `nfuse quantize MODEL --calib DIR -o OUT.onnx [--report R.json] [--html R.html] [--eval DIR]
// [--method ...] [--act u8|s8] [--precision int8|int16|mixed] [--target-cosine C]`: post-training
// static quantization into a standard QDQ ONNX model (src/quant/quantize_graph.h), with a
// per-layer error report measured on the cpu backend's integer path against the float model
// (src/quant/quant_report.h): on the calibration set, on the held-out --eval set, and each layer
// quantized alone (sensitivity, on the first calibration samples, which also drive the
// mixed-precision promotions: the held-out set never influences the model).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli_common.h"
#include "commands.h"
#include "frontend/onnx/onnx_exporter.h"
#include "quant/calib_data.h"
#include "quant/mixed_precision.h"
#include "quant/quant_report.h"
#include "quant/quantize_graph.h"
#include "quant/weight_only.h"

namespace nfuse::cli {

namespace {

constexpr int64_t kBatchRows = 100;
constexpr int kSpeedRuns = 20;

Status write_text(const std::string& path, const std::string& text) {
  std::ofstream f(path);
  f << text << "\n";
  f.close();
  if (!f) return unavailable("cannot write '" + path + "'");
  return ok_status();
}

// Rows per batch: the model input's static batch dimension when it has one (a graph with a
// fixed batch of 1 takes one sample per run), else kBatchRows.
int64_t batch_rows(const ir::Graph& g) {
  const ir::Value* in = g.inputs().empty() ? nullptr : g.inputs()[0];
  if (in && in->type.shape.rank() > 0 && in->type.shape[0].is_static() && in->type.shape[0].value > 0)
    return in->type.shape[0].value;
  return kBatchRows;
}

int64_t count_samples(const std::vector<ir::Tensor>& batches) {
  int64_t n = 0;
  for (const auto& b : batches) n += b.rank() > 0 ? b.dim(0) : 1;
  return n;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// `--weights int4`: weight-only; the MatMul / Gemm weights become 4-bit blocks (MatMulNBits),
// activations stay float, so no calibration is needed; --calib (and --eval) only measure.
int weight_only_int4(const QuantizeArgs& args, const ir::Graph& model) {
  constexpr int64_t kBlockSize = 32;  // ONNX Runtime's quantizer default
  auto fp32 = quant::clone_graph(model);
  if (!fp32.ok()) return report(fp32.status());
  Status st = quant::optimize_without_fusions(**fp32);
  if (!st.ok()) return report(st);
  auto int4 = quant::clone_graph(**fp32);
  if (!int4.ok()) return report(int4.status());
  auto replaced = quant::quantize_matmul_weights_int4(**int4, kBlockSize, /*symmetric=*/true);
  if (!replaced.ok()) return report(replaced.status());
  if (*replaced == 0) return report(unsupported("--weights int4: no MatMul / Gemm with a constant weight"));
  st = frontend::onnx::save_model(**int4, args.output);
  if (!st.ok()) return report(st);
  const int64_t rows = batch_rows(model);
  auto data = quant::load_npy_batches(args.eval.empty() ? args.calib : args.eval, args.calib_limit, rows);
  if (!data.ok()) return report(data.status());
  auto reference = quant::run_output0(**fp32, *data, /*optimize=*/true, args.threads);
  if (!reference.ok()) return report(reference.status());
  auto err = quant::evaluate_output(**int4, *data, *reference, args.threads);
  if (!err.ok()) return report(err.status());
  std::printf("wrote %s: %d MatMul / Gemm weights as int4 blocks of %lld (weight-only, MatMulNBits)\n",
              args.output.c_str(), *replaced, static_cast<long long>(kBlockSize));
  std::printf("output (%s, %lld samples): cosine %.6f  snr %.2f dB  max abs %.4g\n",
              args.eval.empty() ? "calibration set" : "held-out set", static_cast<long long>(count_samples(*data)),
              err->cosine, err->snr_db, err->max_abs_error);
  if (!args.report.empty()) {
    nlohmann::json j{{"model", args.model},
                     {"weights", "int4"},
                     {"block_size", kBlockSize},
                     {"layers_replaced", *replaced},
                     {"output", {{"cosine", err->cosine}, {"snr_db", err->snr_db}, {"max_abs_error", err->max_abs_error}}}};
    st = write_text(args.report, j.dump(1));
    if (!st.ok()) return report(st);
  }
  return 0;
}

}  // namespace

int cmd_quantize(const QuantizeArgs& args) {
  const auto t0 = std::chrono::steady_clock::now();
  quant::QuantizeOptions qo;
  auto method = quant::parse_method(args.method);
  if (!method.ok()) return report(invalid_argument("--method: " + method.status().message()));
  qo.method = *method;
  auto act = quant::parse_act_scheme(args.act);
  if (!act.ok()) return report(invalid_argument("--act: " + act.status().message()));
  if (*act == quant::ActScheme::kS16Symmetric)
    return report(invalid_argument("--act: u8 or s8 (16-bit activations: --precision int16 or mixed)"));
  qo.act = *act;
  auto precision = quant::parse_precision(args.precision);
  if (!precision.ok()) return report(precision.status());
  qo.precision = *precision;
  auto promote = quant::parse_promote_to(args.promote);
  if (!promote.ok()) return report(promote.status());
  if (!(args.target_cosine > 0.0 && args.target_cosine <= 1.0))
    return report(invalid_argument("--target-cosine: must be in (0, 1]"));
  if (args.weights != "int8" && args.weights != "int4")
    return report(invalid_argument("--weights: '" + args.weights + "' is not int8 or int4"));
  qo.cle = args.cle;
  qo.bias_correction = args.bias_correction;
  qo.method_options.percentile = args.percentile;
  qo.threads = args.threads;

  auto graph = load(args.model);
  if (!graph.ok()) return report(graph.status());
  if (args.weights == "int4") return weight_only_int4(args, **graph);
  const int64_t rows = batch_rows(**graph);
  // .npy or image folders; images are resized to --size (default: the input's static H, W).
  quant::ImageOptions image_options;
  Status image_st = quant::parse_image_options(args.size, args.mean, args.std_dev, args.layout, &image_options);
  if (!image_st.ok()) return report(image_st);
  if (!(*graph)->inputs().empty()) quant::complete_image_options((*graph)->inputs()[0]->type, &image_options);
  auto calib = quant::load_calibration(args.calib, args.calib_limit, rows, image_options);
  if (!calib.ok()) return report(calib.status());
  std::vector<ir::Tensor> eval_batches;
  if (!args.eval.empty()) {
    auto e = quant::load_calibration(args.eval, 0, rows, image_options);
    if (!e.ok()) return report(e.status());
    eval_batches = std::move(*e);
  }
  auto q = quant::quantize_static(**graph, *calib, qo);
  if (!q.ok()) return report(q.status());
  const double calibrated_s = seconds_since(t0);

  quant::ReportInput ri;
  ri.model = args.model;
  ri.options = qo;
  ri.result = &*q;
  ri.calibration_samples = count_samples(*calib);
  ri.evaluation_samples = count_samples(eval_batches);
  {
    const std::vector<ir::Tensor> subset =
        quant::first_samples(*calib, quant::kSensitivitySamples, quant::kSensitivityElements);
    auto reference = quant::run_output0(*q->fp32, subset, /*optimize=*/false, args.threads);
    if (!reference.ok()) return report(reference.status());
    auto sens = quant::layer_sensitivity(*q, subset, *reference, args.threads);
    if (!sens.ok()) return report(sens.status());
    ri.sensitivity = std::move(*sens);
    if (qo.precision == quant::Precision::kMixed) {
      auto int8_ms = quant::median_ms(*q->qdq, subset[0], kSpeedRuns, args.threads);
      if (!int8_ms.ok()) return report(int8_ms.status());
      const std::vector<ir::Tensor> promo =
          quant::first_samples(*calib, quant::kPromotionSamples, quant::kPromotionElements);
      auto promo_reference = quant::run_output0(*q->fp32, promo, /*optimize=*/false, args.threads);
      if (!promo_reference.ok()) return report(promo_reference.status());
      auto mixed = quant::promote_until(*q, ri.sensitivity, promo, *promo_reference, args.target_cosine, *promote,
                                        args.threads);
      if (!mixed.ok()) return report(mixed.status());
      auto final_ms = quant::median_ms(*q->qdq, subset[0], kSpeedRuns, args.threads);
      if (!final_ms.ok()) return report(final_ms.status());
      ri.mixed = std::move(*mixed);
      ri.int8_ms = *int8_ms;
      ri.final_ms = *final_ms;
    }
  }
  Status st = frontend::onnx::save_model(*q->qdq, args.output);
  if (!st.ok()) return report(st);

  auto rc = quant::evaluate_quantization(*q, *calib, args.threads);
  if (!rc.ok()) return report(rc.status());
  ri.calibration = std::move(*rc);
  if (!eval_batches.empty()) {
    auto re = quant::evaluate_quantization(*q, eval_batches, args.threads);
    if (!re.ok()) return report(re.status());
    ri.evaluation = std::move(*re);
  }
  if (!args.report.empty()) {
    st = write_text(args.report, quant::report_json(ri));
    if (!st.ok()) return report(st);
  }
  if (!args.html.empty()) {
    st = write_text(args.html, quant::report_html(ri));
    if (!st.ok()) return report(st);
  }

  std::printf("wrote %s (%zu nodes): %zu layers, %zu activation tensors, %d weights quantized (%s, %s, %s); "
              "calibrated on %lld samples in %.1f s\n",
              args.output.c_str(), q->qdq->nodes().size(), q->layers.size(), q->tensors.size(), q->weights_quantized,
              args.method.c_str(), args.act.c_str(), args.precision.c_str(),
              static_cast<long long>(ri.calibration_samples), calibrated_s);
  const quant::QuantizeReport& head = ri.evaluation ? *ri.evaluation : ri.calibration;
  std::printf("per layer (%s set; 'alone': output cosine with only that layer quantized):\n",
              ri.evaluation ? "held-out" : "calibration");
  for (size_t i = 0; i < head.layers.size(); ++i) {
    const auto& l = head.layers[i];
    std::printf("  %-32s %-18s cosine %.6f  snr %6.2f dB  max abs %-10.4g alone %.6f\n", l.layer.name.c_str(),
                l.layer.op.c_str(), l.error.cosine, l.error.snr_db, l.error.max_abs_error,
                i < ri.sensitivity.size() ? ri.sensitivity[i].output.cosine : 1.0);
  }
  std::printf("output (calibration): cosine %.6f  snr %.2f dB  max abs %.4g\n", ri.calibration.output.cosine,
              ri.calibration.output.snr_db, ri.calibration.output.max_abs_error);
  if (ri.evaluation) {
    std::printf("output (held-out, %lld samples): cosine %.6f  snr %.2f dB  max abs %.4g\n",
                static_cast<long long>(ri.evaluation_samples), ri.evaluation->output.cosine,
                ri.evaluation->output.snr_db, ri.evaluation->output.max_abs_error);
  } else {
    std::printf("no held-out set: pass --eval DIR to measure on data the calibration did not see\n");
  }
  std::printf("first layer below cosine 0.95: %s\n", head.first_below_0_95.empty() ? "none" : head.first_below_0_95.c_str());
  if (ri.mixed) {
    std::printf("mixed precision: %zu layers promoted to %s; output cosine %.6f -> %.6f, worst sample %.6f -> %.6f "
                "(target %.6g %s); %.2f ms -> %.2f ms\n",
                ri.mixed->promotions.size(), quant::promote_to_name(*promote), ri.mixed->before.cosine,
                ri.mixed->after.cosine, ri.mixed->worst_before, ri.mixed->worst_after, args.target_cosine,
                ri.mixed->target_met ? "met" : "NOT met", ri.int8_ms, ri.final_ms);
    for (const auto& p : ri.mixed->promotions)
      std::printf("  promoted %-32s alone cosine %.6f\n", p.name.c_str(), p.alone_cosine);
  }
  if (args.cle) std::printf("cross-layer equalization: %d conv pairs\n", q->equalized_pairs);
  if (args.bias_correction) std::printf("bias correction: %d layers\n", q->biases_corrected);
  if (!args.report.empty()) std::printf("report: %s\n", args.report.c_str());
  if (!args.html.empty()) std::printf("html: %s\n", args.html.c_str());
  return 0;
}

}  // namespace nfuse::cli
