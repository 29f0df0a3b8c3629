// `nfuse quantize MODEL --calib DIR -o OUT.onnx --report REPORT.json [--method ...] [--act u8|s8]
// [--percentile P] [--calib-limit N] [--eval DIR]`: post-training static INT8 quantization into
// a standard QDQ ONNX model (src/quant/quantize_graph.h) and a per-layer error report measured
// on the cpu backend's integer path against the float model.
#include <cstdio>
#include <fstream>

#include "cli_common.h"
#include "commands.h"
#include "frontend/onnx/onnx_exporter.h"
#include "quant/calib_data.h"
#include "quant/quantize_graph.h"

namespace nfuse::cli {

namespace {

constexpr int64_t kBatchRows = 100;

Status write_text(const std::string& path, const std::string& text) {
  std::ofstream f(path);
  f << text << "\n";
  f.close();
  if (!f) return unavailable("cannot write '" + path + "'");
  return ok_status();
}

}  // namespace

int cmd_quantize(const QuantizeArgs& args) {
  quant::QuantizeOptions qo;
  auto method = quant::parse_method(args.method);
  if (!method.ok()) return report(method.status());
  qo.method = *method;
  auto act = quant::parse_act_scheme(args.act);
  if (!act.ok()) return report(act.status());
  if (*act == quant::ActScheme::kS16Symmetric) return report(unsupported("--act: only u8 and s8 are supported"));
  qo.act = *act;
  qo.method_options.percentile = args.percentile;
  qo.threads = args.threads;

  auto graph = load(args.model);
  if (!graph.ok()) return report(graph.status());
  auto calib = quant::load_npy_batches(args.calib, args.calib_limit, kBatchRows);
  if (!calib.ok()) return report(calib.status());
  auto q = quant::quantize_static(**graph, *calib, qo);
  if (!q.ok()) return report(q.status());
  Status st = frontend::onnx::save_model(*q->qdq, args.output);
  if (!st.ok()) return report(st);

  std::vector<ir::Tensor> eval_batches = *calib;
  if (!args.eval.empty()) {
    auto e = quant::load_npy_batches(args.eval, 0, kBatchRows);
    if (!e.ok()) return report(e.status());
    eval_batches = std::move(*e);
  }
  auto r = quant::evaluate_quantization(*q, eval_batches, args.threads);
  if (!r.ok()) return report(r.status());
  if (!args.report.empty()) {
    st = write_text(args.report, quant::report_json(*r, qo));
    if (!st.ok()) return report(st);
  }
  std::printf("wrote %s (%zu nodes): %zu layers, %zu activation tensors, %d weights quantized (%s, %s)\n",
              args.output.c_str(), q->qdq->nodes().size(), q->layers.size(), q->tensors.size(),
              q->weights_quantized, args.method.c_str(), args.act.c_str());
  for (const auto& l : r->layers) {
    std::printf("  %-24s %-6s cosine %.6f  snr %6.2f dB  max abs %.4g\n", l.layer.name.c_str(), l.layer.op.c_str(),
                l.error.cosine, l.error.snr_db, l.error.max_abs_error);
  }
  std::printf("output: cosine %.6f  snr %.2f dB  max abs %.4g; first layer below 0.95: %s\n", r->output.cosine,
              r->output.snr_db, r->output.max_abs_error,
              r->first_below_0_95.empty() ? "none" : r->first_below_0_95.c_str());
  if (!args.report.empty()) std::printf("report: %s\n", args.report.c_str());
  return 0;
}

}  // namespace nfuse::cli
