// QDQ interoperability with ONNX Runtime: nfuse's own quantizer (quant::quantize_static) writes
// a standard QDQ model of fashion_mnist_cnn and of mobilenet_v2; ONNX Runtime (onnxruntime-node,
// an independent implementation with its own QDQ -> QLinear fusions) and nfuse's cpu backend
// (QDQ fused into QLinearConv, integer kernels) run it on held-out inputs and must agree within
// one quantization step of the last activation DequantizeLinear before the output. Calibration
// and held-out data are real: the Fashion-MNIST calibration/test images, and for mobilenet_v2 the
// scikit-image photos of build/models/calib224{,_heldout} (scripts/make_calib224.py).
// A missing model or data file fails (run `make models`); a missing ORT skips.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "frontend/onnx/onnx_exporter.h"
#include "frontend/onnx/onnx_importer.h"
#include "models/ort_peer.h"
#include "quant/calib_data.h"
#include "quant/quantize_graph.h"
#include "runtime/npy.h"
#include "runtime/session.h"

namespace nfuse {
namespace {

namespace fs = std::filesystem;

const std::string kMakeModels = ": run `make models` (scripts/models.py, scripts/make_calib224.py write build/models/)";

fs::path models_dir() { return fs::path(NFUSE_BINARY_DIR) / "models"; }

// The scale of the last DequantizeLinear of an activation (non-constant input) in topological
// order: the quantization step of the tensor the float tail (if any) starts from.
float final_dq_scale(const ir::Graph& g) {
  float scale = 0.0f;
  for (const auto& n : g.nodes()) {
    if (n->op_type != "DequantizeLinear" || !n->input(0) || n->input(0)->is_constant()) continue;
    const ir::Value* s = n->input(1);
    if (s && s->is_constant() && s->constant->numel() == 1) scale = s->constant->to_float_vector()[0];
  }
  return scale;
}

int count_ops(const ir::Graph& g, const std::string& op) {
  int k = 0;
  for (const auto& n : g.nodes()) k += n->op_type == op;
  return k;
}

struct Case {
  std::string name;
  fs::path fp32;
  std::vector<ir::Tensor> calib;    // batches for quantize_static
  std::vector<ir::Tensor> heldout;  // each run once on both engines
};

// Quantizes, saves, runs on nfuse (cpu) and ORT, compares; prints the observed differences.
void check_case(const Case& c) {
  auto fp32 = frontend::onnx::load_model(c.fp32.string());
  ASSERT_TRUE(fp32.ok()) << fp32.status().to_string();
  const int convs = count_ops(**fp32, "Conv");
  const std::string input = (*fp32)->inputs()[0]->name;
  auto q = quant::quantize_static(**fp32, c.calib, {});
  ASSERT_TRUE(q.ok()) << q.status().to_string();
  const float step = final_dq_scale(*q->qdq);
  ASSERT_GT(step, 0.0f) << "the QDQ model has no activation DequantizeLinear";

  const fs::path dir = testing::ort_scratch_dir("qdq_" + c.name);
  const fs::path model = dir / (c.name + ".int8.onnx");
  Status st = frontend::onnx::save_model(*q->qdq, model.string());
  ASSERT_TRUE(st.ok()) << st.to_string();

  auto g = frontend::onnx::load_model(model.string());
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  runtime::SessionOptions so;
  so.backend = "cpu";
  so.threads = 1;
  auto session = runtime::Session::create(std::move(*g), so);
  ASSERT_TRUE(session.ok()) << session.status().to_string();
  const int qconvs = count_ops((*session)->graph(), "QLinearConv");
  EXPECT_EQ(qconvs, convs) << "every Conv of the QDQ model should run as QLinearConv on the cpu backend";
  EXPECT_EQ(count_ops((*session)->graph(), "Conv"), 0);

  double max_diff = 0, max_abs = 0;
  int64_t n_out = 0, n_diff = 0;
  for (size_t i = 0; i < c.heldout.size(); ++i) {
    const fs::path in = dir / ("in_" + std::to_string(i) + ".npy");
    ASSERT_TRUE(runtime::write_npy(in.string(), c.heldout[i]).ok());
    auto ours = (*session)->run({{input, c.heldout[i]}});
    ASSERT_TRUE(ours.ok()) << ours.status().to_string();
    const fs::path out_dir = dir / ("ort_" + std::to_string(i));
    fs::create_directories(out_dir);
    auto ort = testing::run_ort(model, {{input, in}}, out_dir);
    ASSERT_TRUE(ort.ok()) << ort.status().to_string();
    ASSERT_EQ(ort->size(), ours->size());
    for (size_t k = 0; k < ours->size(); ++k) {
      const ir::Tensor& a = (*ours)[k];
      const ir::Tensor& b = (*ort)[k];
      ASSERT_EQ(a.dims(), b.dims()) << "output " << k;
      ASSERT_EQ(b.dtype(), ir::DType::kF32);
      for (int64_t e = 0; e < a.numel(); ++e) {
        const double d = std::fabs(double{a.data<float>()[e]} - double{b.data<float>()[e]});
        max_diff = std::max(max_diff, d);
        max_abs = std::max(max_abs, std::fabs(double{b.data<float>()[e]}));
        n_diff += d != 0;
        ++n_out;
      }
    }
  }
  std::printf("[qdq ort %s] %d QLinearConv / %d Conv; %lld outputs over %zu held-out inputs: max |nfuse - ORT| %.3e "
              "(%.3f steps of the final DQ scale %.4e), %lld differ, max |y| %.3g\n",
              c.name.c_str(), qconvs, convs, static_cast<long long>(n_out), c.heldout.size(), max_diff,
              max_diff / double{step}, double{step}, static_cast<long long>(n_diff), max_abs);
  std::fflush(stdout);
  EXPECT_LE(max_diff, double{step} * 1.0001);
  fs::remove_all(dir);
}

TEST(QdqOrt, FashionMnistQuantizedByNfuseMatchesOrt) {
  const std::string reason = testing::ort_unavailable_reason();
  if (!reason.empty()) {
    std::printf("%s\n", reason.c_str());
    GTEST_SKIP() << reason;
  }
  const fs::path meta_path = models_dir() / "fashion_mnist_cnn.meta.json";
  ASSERT_TRUE(fs::exists(meta_path)) << meta_path << " is missing" << kMakeModels;
  std::ifstream meta_in(meta_path);
  const nlohmann::json meta = nlohmann::json::parse(meta_in, nullptr, /*allow_exceptions=*/false);
  ASSERT_TRUE(meta.is_object() && meta.contains("entry") && meta["entry"].contains("data")) << meta_path << kMakeModels;
  const nlohmann::json& e = meta["entry"];
  const fs::path data = models_dir() / e["data"]["dir"].get<std::string>();
  Case c;
  c.name = "fashion_mnist_cnn";
  c.fp32 = models_dir() / e["file"].get<std::string>();
  ASSERT_TRUE(fs::exists(c.fp32)) << c.fp32 << " is missing" << kMakeModels;
  auto calib = quant::load_npy_batches((data / e["data"]["calib_dir"].get<std::string>()).string(), 300, 100);
  ASSERT_TRUE(calib.ok()) << calib.status().to_string() << kMakeModels;
  c.calib = std::move(*calib);
  // Held out: the first 256 test images (never calibrated on), two batches of 128.
  const fs::path images = data / e["data"]["files"]["test_images"].get<std::string>();
  auto im = runtime::read_npy(images.string());
  ASSERT_TRUE(im.ok()) << im.status().to_string() << kMakeModels;
  std::vector<ir::Tensor> batches = quant::split_batches(*im, 128);
  ASSERT_GE(batches.size(), 2u);
  c.heldout = {batches[0], batches[1]};
  check_case(c);
}

TEST(QdqOrt, MobilenetV2QuantizedByNfuseMatchesOrt) {
  const std::string reason = testing::ort_unavailable_reason();
  if (!reason.empty()) {
    std::printf("%s\n", reason.c_str());
    GTEST_SKIP() << reason;
  }
  Case c;
  c.name = "mobilenet_v2";
  c.fp32 = models_dir() / "mobilenet_v2.onnx";
  ASSERT_TRUE(fs::exists(c.fp32)) << c.fp32 << " is missing" << kMakeModels;
  // The model's batch is static (1): one image per calibration batch.
  auto calib = quant::load_npy_batches((models_dir() / "calib224").string(), 0, 1);
  ASSERT_TRUE(calib.ok()) << calib.status().to_string() << kMakeModels;
  ASSERT_GE(calib->size(), 8u) << kMakeModels;
  c.calib = std::move(*calib);
  auto held = quant::load_npy_batches((models_dir() / "calib224_heldout").string(), 0, 1);
  ASSERT_TRUE(held.ok()) << held.status().to_string() << kMakeModels;
  c.heldout = std::move(*held);
  check_case(c);
}

}  // namespace
}  // namespace nfuse
