// Post-training static INT8 quantization of fashion_mnist_cnn (src/quant/quantize_graph.h):
// calibrate on the recorded calibration images, export the QDQ model, import it again and run
// it on the cpu backend (integer QLinearConv kernels) over the whole 10,000-image test set; its
// top-1 must stay within kTop1Points of the recorded FP32 top-1. A missing file is a failure
// that says to run `make models`, never a skip.
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
#include "quant/calib_data.h"
#include "quant/quantize_graph.h"
#include "runtime/npy.h"
#include "runtime/session.h"

namespace nfuse {
namespace {

namespace fs = std::filesystem;

// INT8 vs FP32 top-1 on the test set, in points.
constexpr double kTop1Points = 0.5;
constexpr int64_t kCalibImages = 300;
constexpr int64_t kBatch = 500;

const std::string kMakeModels =
    ": run `make models` (scripts/models.py trains fashion_mnist_cnn and writes build/models/fashion_mnist/)";

fs::path models_dir() { return fs::path(NFUSE_BINARY_DIR) / "models"; }

struct Fashion {
  fs::path onnx;
  fs::path data_dir;
  fs::path calib_dir;
  double fp32_top1 = 0;
  ir::Tensor images;
  ir::Tensor labels;
};

void load_fashion(Fashion* f) {
  const fs::path meta_path = models_dir() / "fashion_mnist_cnn.meta.json";
  ASSERT_TRUE(fs::exists(meta_path)) << meta_path << " is missing" << kMakeModels;
  std::ifstream in(meta_path);
  nlohmann::json meta = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  ASSERT_TRUE(meta.is_object() && meta.contains("entry")) << meta_path << " is malformed" << kMakeModels;
  const nlohmann::json& e = meta["entry"];
  ASSERT_TRUE(e.contains("fp32_top1") && e.contains("data")) << meta_path << " has no accuracy or data" << kMakeModels;
  f->fp32_top1 = e["fp32_top1"].get<double>();
  f->onnx = models_dir() / e["file"].get<std::string>();
  ASSERT_TRUE(fs::exists(f->onnx)) << f->onnx << " is missing" << kMakeModels;
  const nlohmann::json& d = e["data"];
  f->data_dir = models_dir() / d["dir"].get<std::string>();
  f->calib_dir = f->data_dir / d["calib_dir"].get<std::string>();
  ASSERT_TRUE(fs::is_directory(f->calib_dir)) << f->calib_dir << " is missing" << kMakeModels;
  const fs::path images = f->data_dir / d["files"]["test_images"].get<std::string>();
  const fs::path labels = f->data_dir / d["files"]["test_labels"].get<std::string>();
  ASSERT_TRUE(fs::exists(images)) << images << " is missing" << kMakeModels;
  ASSERT_TRUE(fs::exists(labels)) << labels << " is missing" << kMakeModels;
  auto im = runtime::read_npy(images.string());
  ASSERT_TRUE(im.ok()) << im.status().to_string();
  auto lb = runtime::read_npy(labels.string());
  ASSERT_TRUE(lb.ok()) << lb.status().to_string();
  ASSERT_EQ(im->dtype(), ir::DType::kF32);
  ASSERT_EQ(lb->dtype(), ir::DType::kI64);
  ASSERT_EQ(lb->dims(), std::vector<int64_t>{im->dim(0)});
  f->images = *im;
  f->labels = *lb;
}

// Top-1 (points) of the model at `path` on the cpu backend; counts the integer convolutions it ran
// (QLinearConv, or nfuse.QLinearConvRegion where the Relu runs on the accumulator: s8, whose
// symmetric range cannot imply it).
Result<double> top1(const std::string& path, const Fashion& f, int* qlinear_convs) {
  NFUSE_ASSIGN_OR_RETURN(auto graph, frontend::onnx::load_model(path));
  const std::string input = graph->inputs()[0]->name;
  runtime::SessionOptions so;
  so.backend = "cpu";
  so.threads = 2;
  NFUSE_ASSIGN_OR_RETURN(auto session, runtime::Session::create(std::move(graph), so));
  *qlinear_convs = 0;
  for (const auto& n : session->graph().nodes())
    *qlinear_convs += n->op_type == "QLinearConv" || n->op_type == "QLinearConvRegion";
  int64_t correct = 0;
  const std::vector<ir::Tensor> batches = quant::split_batches(f.images, kBatch);
  int64_t row = 0;
  for (const auto& b : batches) {
    NFUSE_ASSIGN_OR_RETURN(auto outs, session->run({{input, b}}));
    const ir::Tensor& logits = outs[0];
    if (logits.dims() != std::vector<int64_t>{b.dim(0), 10})
      return invalid_argument("logits have shape " + ir::dims_to_string(logits.dims()));
    for (int64_t i = 0; i < b.dim(0); ++i, ++row) {
      const float* r = logits.data<float>() + i * 10;
      correct += (std::max_element(r, r + 10) - r) == f.labels.data<int64_t>()[row] ? 1 : 0;
    }
  }
  return 100.0 * static_cast<double>(correct) / static_cast<double>(row);
}

void check_method(quant::Method method, quant::ActScheme act = quant::ActScheme::kU8Asymmetric) {
  Fashion f;
  ASSERT_NO_FATAL_FAILURE(load_fashion(&f));
  auto graph = frontend::onnx::load_model(f.onnx.string());
  ASSERT_TRUE(graph.ok()) << graph.status().to_string();
  auto calib = quant::load_npy_batches(f.calib_dir.string(), kCalibImages, 100);
  ASSERT_TRUE(calib.ok()) << calib.status().to_string() << kMakeModels;
  quant::QuantizeOptions options;
  options.method = method;
  options.act = act;
  auto q = quant::quantize_static(**graph, *calib, options);
  ASSERT_TRUE(q.ok()) << q.status().to_string();
  int weighted = 0;
  for (const auto& l : q->layers) weighted += l.kind == quant::LayerKind::kWeighted;
  EXPECT_EQ(weighted, 5);  // 4 Conv, 1 Gemm (and the 2 MaxPools between them)

  const fs::path dir = fs::temp_directory_path() / ("nfuse_quantize_fashion_" + std::string(quant::method_name(method)) + (act == quant::ActScheme::kS8Symmetric ? "_s8" : ""));
  fs::create_directories(dir);
  const fs::path out = dir / "fashion_mnist_cnn.int8.onnx";
  Status st = frontend::onnx::save_model(*q->qdq, out.string());
  ASSERT_TRUE(st.ok()) << st.to_string();

  int qconvs = 0;
  auto int8 = top1(out.string(), f, &qconvs);
  ASSERT_TRUE(int8.ok()) << int8.status().to_string();
  int fconvs = 0;
  auto fp32 = top1(f.onnx.string(), f, &fconvs);
  ASSERT_TRUE(fp32.ok()) << fp32.status().to_string();
  std::printf("[quantize fashion_mnist %s %s] %lld calibration images: INT8 top-1 %.2f%%, nfuse FP32 top-1 %.2f%%, "
              "recorded FP32 top-1 %.2f%% (%d QLinearConv)\n",
              std::string(quant::method_name(method)).c_str(), act == quant::ActScheme::kS8Symmetric ? "s8" : "u8",
              static_cast<long long>(kCalibImages), *int8, *fp32, f.fp32_top1, qconvs);
  std::fflush(stdout);
  EXPECT_EQ(qconvs, 4) << "every Conv should run on the integer kernel";
  EXPECT_LE(std::fabs(*int8 - f.fp32_top1), kTop1Points + 0.005);
  fs::remove_all(dir);
}

TEST(QuantizeFashion, MinMaxInt8Top1NearFp32) { check_method(quant::Method::kMinMax); }

TEST(QuantizeFashion, MseInt8Top1NearFp32) { check_method(quant::Method::kMse); }

// Per-tensor choice among the methods (range_selection.h), the CLI's default.
TEST(QuantizeFashion, AutoInt8Top1NearFp32) { check_method(quant::Method::kAuto); }

// Entropy clips activations hardest; graph inputs are calibrated with minmax (QuantizeOptions::
// minmax_inputs), without which the background mass of every image is clipped (84% top-1).
TEST(QuantizeFashion, EntropyInt8Top1NearFp32) { check_method(quant::Method::kEntropy); }

// s8 symmetric activations: the Relus stay apart from the Convs, which still fuse.
TEST(QuantizeFashion, S8MinMaxInt8Top1NearFp32) {
  check_method(quant::Method::kMinMax, quant::ActScheme::kS8Symmetric);
}

}  // namespace
}  // namespace nfuse
