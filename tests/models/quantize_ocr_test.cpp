// Post-training static INT8 quantization (mixed precision allowed) of the real PaddleOCR text
// detector (DBNet, MobileNetV3 backbone, opset 11: the quantizer converts it to 13), calibrated
// on real photos of text (build/models/ocr_calib, made by scripts/make_calib_images.py) and
// judged on held-out ones (build/models/ocr_eval): on every held-out image the quantized
// probability map run on the cpu backend's integer kernels must keep a cosine >= kMinCosine with
// the FP32 map, and the binarized text map (prob > 0.3, as PaddleOCR's DB post-processing
// thresholds it) an IoU >= kMinIou. The reference is the float model run by its own session,
// never the QDQ path. A missing file is a failure saying to run `make models`.
//
// Plain INT8 cannot reach the targets on this model (entropy u8, the best method, 22:10 UTC
// 2026-11-29, worst held-out image: cosine 0.641, IoU 0.42; minmax 0.454 / 0.218, percentile
// 0.265 / 0.089, mse 0.257 / 0.115, sqnr 0.410 / 0.223, minmax s8 0.118 / 0.049): the 1x1 Conv
// before each stride-2 depthwise Conv (p2o.Conv.2 -> hardswish -> p2o.Conv.3) has per-channel
// ranges from 3 to 159, so one per-tensor scale leaves half the channels below one quantization
// step, and the model amplifies small errors (1% input noise alone costs 0.04 of output cosine).
// Mixed precision promotes the sensitive layers to float until every promotion sample meets
// kPromotionTarget (above kMinCosine, a margin for unseen images).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "frontend/onnx/onnx_exporter.h"
#include "frontend/onnx/onnx_importer.h"
#include "quant/calib_data.h"
#include "quant/mixed_precision.h"
#include "quant/quantize_graph.h"
#include "runtime/session.h"

namespace nfuse {
namespace {

namespace fs = std::filesystem;

constexpr double kMinCosine = 0.99;
constexpr double kMinIou = 0.95;
constexpr float kTextThreshold = 0.3f;
constexpr int64_t kCalibImages = 12;
constexpr double kPromotionTarget = 0.998;
constexpr int kThreads = 1;  // ctest runs tests in parallel on 2 cores; idle pool workers spin

const std::string kMakeModels =
    ": run `make models` (scripts/fetch_ocr_models.sh and scripts/make_calib_images.py write build/models/)";

fs::path models_dir() { return fs::path(NFUSE_BINARY_DIR) / "models"; }

// The PaddleOCR detector's preprocessing (scripts/make_demo_image.py): RGB, (x/255 - mean) / std
// with the ImageNet mean and std, NCHW, here at 960x960.
quant::ImageOptions det_preprocessing() {
  quant::ImageOptions o;
  o.height = o.width = 960;
  o.mean = {0.485f * 255, 0.456f * 255, 0.406f * 255};
  o.std_dev = {0.229f * 255, 0.224f * 255, 0.225f * 255};
  return o;
}

// Output 0 of the model at `path` for each batch, on the cpu backend with its passes (which
// fuse a QDQ model's Q/DQ pairs into integer kernels).
Result<std::vector<ir::Tensor>> run_cpu(const std::string& path, const std::vector<ir::Tensor>& batches) {
  NFUSE_ASSIGN_OR_RETURN(auto graph, frontend::onnx::load_model(path));
  const std::string input = graph->inputs()[0]->name;
  runtime::SessionOptions so;
  so.backend = "cpu";
  so.threads = kThreads;
  NFUSE_ASSIGN_OR_RETURN(auto session, runtime::Session::create(std::move(graph), so));
  std::vector<ir::Tensor> out;
  for (const auto& b : batches) {
    NFUSE_ASSIGN_OR_RETURN(auto outs, session->run({{input, b}}));
    out.push_back(outs[0]);
  }
  return out;
}

struct MapAgreement {
  double cosine = 0;
  double iou = 0;
};

// Cosine of the two maps and IoU of their text masks, in double.
MapAgreement compare_maps(const float* fp32, const float* int8, int64_t n) {
  double dot = 0, na = 0, nb = 0;
  int64_t both = 0, either = 0;
  for (int64_t i = 0; i < n; ++i) {
    dot += static_cast<double>(fp32[i]) * int8[i];
    na += static_cast<double>(fp32[i]) * fp32[i];
    nb += static_cast<double>(int8[i]) * int8[i];
    const bool a = fp32[i] > kTextThreshold, b = int8[i] > kTextThreshold;
    both += a && b;
    either += a || b;
  }
  MapAgreement m;
  m.cosine = na > 0 && nb > 0 ? dot / std::sqrt(na * nb) : (na == nb ? 1.0 : 0.0);
  m.iou = either ? static_cast<double>(both) / static_cast<double>(either) : 1.0;
  return m;
}

// Quantizes the detector with `method` / `act` and mixed precision, runs FP32 and the quantized
// model on every held-out image and checks kMinCosine / kMinIou on each.
void check_detector(quant::Method method, quant::ActScheme act) {
  const fs::path model = models_dir() / "ocr" / "ocr_det.onnx";
  ASSERT_TRUE(fs::exists(model)) << model << " is missing" << kMakeModels;
  const quant::ImageOptions pre = det_preprocessing();
  // One image per batch: a 960x960 batch with every observed activation kept is large.
  auto calib = quant::load_calibration((models_dir() / "ocr_calib").string(), kCalibImages, 1, pre);
  ASSERT_TRUE(calib.ok()) << calib.status().to_string() << kMakeModels;
  auto eval = quant::load_calibration((models_dir() / "ocr_eval").string(), 0, 1, pre);
  ASSERT_TRUE(eval.ok()) << eval.status().to_string() << kMakeModels;

  auto graph = frontend::onnx::load_model(model.string());
  ASSERT_TRUE(graph.ok()) << graph.status().to_string();
  quant::QuantizeOptions options;
  options.method = method;
  options.act = act;
  options.threads = kThreads;
  options.precision = quant::Precision::kMixed;
  const auto t0 = std::chrono::steady_clock::now();
  auto q = quant::quantize_static(**graph, *calib, options);
  ASSERT_TRUE(q.ok()) << q.status().to_string();
  {
    const auto sens_data = quant::first_samples(*calib, quant::kSensitivitySamples, quant::kSensitivityElements);
    auto sens_ref = quant::run_output0(*q->fp32, sens_data, /*optimize=*/false, kThreads);
    ASSERT_TRUE(sens_ref.ok()) << sens_ref.status().to_string();
    auto sens = quant::layer_sensitivity(*q, sens_data, *sens_ref, kThreads);
    ASSERT_TRUE(sens.ok()) << sens.status().to_string();
    const auto promo = quant::first_samples(*calib, quant::kPromotionSamples, quant::kPromotionElements);
    auto promo_ref = quant::run_output0(*q->fp32, promo, /*optimize=*/false, kThreads);
    ASSERT_TRUE(promo_ref.ok()) << promo_ref.status().to_string();
    auto work = quant::layer_work(*q, calib->front().dims());
    ASSERT_TRUE(work.ok()) << work.status().to_string();
    auto mixed =
        quant::promote_until(*q, *sens, *work, promo, *promo_ref, kPromotionTarget, quant::PromoteTo::kFloat, kThreads);
    ASSERT_TRUE(mixed.ok()) << mixed.status().to_string();
    std::printf("[quantize ocr_det] %zu of %zu layers promoted to float; worst promotion-sample cosine %.5f -> %.5f\n",
                mixed->promotions.size(), q->layers.size(), mixed->worst_before, mixed->worst_after);
    EXPECT_TRUE(mixed->target_met);
  }
  const std::string tag =
      std::string(quant::method_name(method)) + (act == quant::ActScheme::kS8Symmetric ? "_s8" : "_u8");
  std::printf("[quantize ocr_det %s] calibrated on %zu images in %.1f s\n", tag.c_str(), calib->size(),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  std::fflush(stdout);
  const fs::path dir = fs::temp_directory_path() / ("nfuse_quantize_ocr_" + tag);
  fs::create_directories(dir);
  const fs::path out = dir / "ocr_det.int8.onnx";
  Status st = frontend::onnx::save_model(*q->qdq, out.string());
  ASSERT_TRUE(st.ok()) << st.to_string();

  auto fp32 = run_cpu(model.string(), *eval);
  ASSERT_TRUE(fp32.ok()) << fp32.status().to_string();
  auto int8 = run_cpu(out.string(), *eval);
  ASSERT_TRUE(int8.ok()) << int8.status().to_string();
  ASSERT_EQ(fp32->size(), int8->size());
  double worst_cosine = 1, worst_iou = 1;
  for (size_t i = 0; i < fp32->size(); ++i) {
    const ir::Tensor& a = (*fp32)[i];
    const ir::Tensor& b = (*int8)[i];
    ASSERT_EQ(a.dims(), b.dims());
    const MapAgreement m = compare_maps(a.data<float>(), b.data<float>(), a.numel());
    worst_cosine = std::min(worst_cosine, m.cosine);
    worst_iou = std::min(worst_iou, m.iou);
    std::printf("[quantize ocr_det %s] eval image %zu: cosine %.5f, text-map IoU %.4f\n", tag.c_str(), i, m.cosine,
                m.iou);
    EXPECT_GE(m.cosine, kMinCosine) << "eval image " << i;
    EXPECT_GE(m.iou, kMinIou) << "eval image " << i;
  }
  std::printf("[quantize ocr_det %s] worst of %zu held-out images: cosine %.5f, IoU %.4f\n", tag.c_str(), fp32->size(),
              worst_cosine, worst_iou);
  std::fflush(stdout);
  fs::remove_all(dir);
}

TEST(QuantizeOcr, DetectorMixedKeepsTextMapOnHeldOutPhotos) {
  check_detector(quant::Method::kEntropy, quant::ActScheme::kU8Asymmetric);
}

}  // namespace
}  // namespace nfuse
