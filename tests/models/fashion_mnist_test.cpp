// fashion_mnist_cnn, the zoo's one trained model (scripts/models.py trains it on Debian's
// dataset-fashion-mnist): nfuse must classify the 10,000 test images as PyTorch did. Its FP32
// top-1 is recorded in fashion_mnist_cnn.meta.json; the same FP32 model on nfuse's cpu and ref
// backends (the whole test set, batched through the symbolic batch dimension) must land within
// kTop1Points of it. A missing file is a failure that says to
// run `make models`, never a skip.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "frontend/onnx/onnx_importer.h"
#include "ir/tensor.h"
#include "runtime/npy.h"
#include "runtime/session.h"

namespace nfuse {
namespace {

namespace fs = std::filesystem;

// FP32 on nfuse vs FP32 in PyTorch: only accumulation order differs, so at most a handful of
// near-tie images may flip (0.1 points = 10 of the 10,000 test images).
constexpr double kTop1Points = 0.1;
constexpr int64_t kBatch = 500;

const std::string kMakeModels =
    ": run `make models` (scripts/models.py trains fashion_mnist_cnn and writes build/models/fashion_mnist/)";

fs::path models_dir() { return fs::path(NFUSE_BINARY_DIR) / "models"; }

struct FashionData {
  nlohmann::json entry;
  fs::path onnx_path;
  std::string input_name;
};

// Reads fashion_mnist_cnn.meta.json; fails (fatally) when anything is missing.
void load_meta(FashionData* d) {
  const fs::path meta_path = models_dir() / "fashion_mnist_cnn.meta.json";
  ASSERT_TRUE(fs::exists(meta_path)) << meta_path << " is missing" << kMakeModels;
  std::ifstream f(meta_path);
  nlohmann::json meta = nlohmann::json::parse(f, nullptr, /*allow_exceptions=*/false);
  ASSERT_TRUE(meta.is_object() && meta.contains("entry")) << meta_path << " is malformed" << kMakeModels;
  d->entry = meta["entry"];
  ASSERT_TRUE(d->entry.contains("fp32_top1") && d->entry.contains("data"))
      << meta_path << " has no recorded accuracy or data" << kMakeModels;
  d->onnx_path = models_dir() / d->entry["file"].get<std::string>();
  ASSERT_TRUE(fs::exists(d->onnx_path)) << d->onnx_path << " is missing" << kMakeModels;
  d->input_name = d->entry["inputs"][0]["name"].get<std::string>();
}

Result<ir::Tensor> read_data(const FashionData& d, const std::string& key) {
  const nlohmann::json& data = d.entry["data"];
  const fs::path path = models_dir() / data["dir"].get<std::string>() / data["files"][key].get<std::string>();
  if (!fs::exists(path)) return not_found(path.string() + " is missing" + kMakeModels);
  return runtime::read_npy(path.string());
}

struct Top1 {
  int64_t correct = 0;
  int64_t count = 0;
  std::vector<int64_t> predictions;
  double points() const { return count ? 100.0 * static_cast<double>(correct) / static_cast<double>(count) : 0; }
};

// Runs `images` [N,1,28,28] through the model in batches of kBatch; top-1 against `labels` [N].
Result<Top1> classify(const FashionData& d, const std::string& backend, int threads, const ir::Tensor& images,
                      const ir::Tensor& labels) {
  NFUSE_ASSIGN_OR_RETURN(auto graph, frontend::onnx::load_model(d.onnx_path.string()));
  runtime::SessionOptions options;
  options.backend = backend;
  options.threads = threads;
  NFUSE_ASSIGN_OR_RETURN(auto session, runtime::Session::create(std::move(graph), options));
  const int64_t n = images.dim(0);
  const int64_t per_image = images.numel() / n;
  ir::Tensor images_copy = images;  // borrow() wants a mutable pointer; copies share the buffer
  Top1 r;
  for (int64_t start = 0; start < n; start += kBatch) {
    const int64_t b = std::min(kBatch, n - start);
    ir::Tensor batch = ir::Tensor::borrow(ir::DType::kF32, {b, 1, 28, 28},
                                          images_copy.data<float>() + start * per_image);
    NFUSE_ASSIGN_OR_RETURN(auto outputs, session->run({{d.input_name, batch}}));
    const ir::Tensor& logits = outputs[0];
    if (logits.dims() != std::vector<int64_t>{b, 10})
      return invalid_argument("logits have shape " + ir::dims_to_string(logits.dims()));
    for (int64_t i = 0; i < b; ++i) {
      const float* row = logits.data<float>() + i * 10;
      const int64_t pred = std::max_element(row, row + 10) - row;
      r.predictions.push_back(pred);
      r.correct += pred == labels.data<int64_t>()[start + i] ? 1 : 0;
      ++r.count;
    }
  }
  return r;
}

// Test images whose PyTorch argmax (from the recorded logits) differs from nfuse's.
int64_t disagreements(const Top1& got, const ir::Tensor& torch_logits) {
  int64_t n = 0;
  for (size_t i = 0; i < got.predictions.size(); ++i) {
    const float* row = torch_logits.data<float>() + static_cast<int64_t>(i) * 10;
    n += (std::max_element(row, row + 10) - row) != got.predictions[i] ? 1 : 0;
  }
  return n;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void check_backend(const std::string& backend, int threads, const std::string& images_key,
                   const std::string& labels_key, const std::string& top1_key) {
  FashionData d;
  ASSERT_NO_FATAL_FAILURE(load_meta(&d));
  auto images = read_data(d, images_key);
  ASSERT_TRUE(images.ok()) << images.status().to_string();
  auto labels = read_data(d, labels_key);
  ASSERT_TRUE(labels.ok()) << labels.status().to_string();
  auto torch_logits = read_data(d, "test_logits");
  ASSERT_TRUE(torch_logits.ok()) << torch_logits.status().to_string();
  ASSERT_EQ(images->dtype(), ir::DType::kF32);
  ASSERT_EQ(images->rank(), 4);
  ASSERT_EQ(images->dims()[1] * images->dims()[2] * images->dims()[3], 28 * 28);
  ASSERT_EQ(labels->dtype(), ir::DType::kI64);
  ASSERT_EQ(labels->dims(), std::vector<int64_t>{images->dim(0)});
  ASSERT_GE(torch_logits->dim(0), images->dim(0));  // the subsets are the first test images
  ASSERT_TRUE(d.entry.contains(top1_key)) << "no " << top1_key << " in the meta" << kMakeModels;
  const double torch_top1 = d.entry[top1_key].get<double>();

  auto t0 = std::chrono::steady_clock::now();
  auto got = classify(d, backend, threads, *images, *labels);
  const double run_s = seconds_since(t0);
  ASSERT_TRUE(got.ok()) << backend << ": " << got.status().to_string();
  const int64_t flips = disagreements(*got, *torch_logits);
  std::printf("[fashion_mnist %s t%d] %lld images: nfuse FP32 top-1 %.2f%%, PyTorch FP32 top-1 %.2f%%, "
              "%lld predictions differ from PyTorch's  (%.2fs)\n",
              backend.c_str(), threads, static_cast<long long>(got->count), got->points(), torch_top1,
              static_cast<long long>(flips), run_s);
  std::fflush(stdout);
  // The recorded accuracy is rounded to 0.01 points.
  EXPECT_LE(std::fabs(got->points() - torch_top1), kTop1Points + 0.005)
      << backend << ": nfuse top-1 " << got->points() << " vs PyTorch " << torch_top1;
  EXPECT_LE(static_cast<double>(flips), kTop1Points / 100.0 * static_cast<double>(got->count) + 1e-9)
      << backend << ": too many predictions differ from PyTorch's";
}

TEST(FashionMnist, CpuTop1MatchesPyTorchOnTestSet) {
  check_backend("cpu", 2, "test_images", "test_labels", "fp32_top1");
}

TEST(FashionMnist, RefTop1MatchesPyTorchOnTestSet) {
  check_backend("ref", 1, "test_images", "test_labels", "fp32_top1");
}

// The data files are what models.py says: counts, shapes, the calibration folder.
TEST(FashionMnist, DataFilesAreComplete) {
  FashionData d;
  ASSERT_NO_FATAL_FAILURE(load_meta(&d));
  const nlohmann::json& data = d.entry["data"];
  auto images = read_data(d, "test_images");
  ASSERT_TRUE(images.ok()) << images.status().to_string();
  EXPECT_EQ(images->dims(), (std::vector<int64_t>{data["test_count"].get<int64_t>(), 1, 28, 28}));
  auto eval_images = read_data(d, "eval_images");
  ASSERT_TRUE(eval_images.ok()) << eval_images.status().to_string();
  EXPECT_EQ(eval_images->dims(), (std::vector<int64_t>{data["eval_count"].get<int64_t>(), 1, 28, 28}));
  auto eval_labels = read_data(d, "eval_labels");
  ASSERT_TRUE(eval_labels.ok()) << eval_labels.status().to_string();
  EXPECT_EQ(eval_labels->dims(), (std::vector<int64_t>{data["eval_count"].get<int64_t>()}));
  const fs::path calib = models_dir() / data["dir"].get<std::string>() / data["calib_dir"].get<std::string>();
  ASSERT_TRUE(fs::is_directory(calib)) << calib << " is missing" << kMakeModels;
  int64_t count = 0;
  for (const auto& e : fs::directory_iterator(calib)) {
    if (e.path().extension() != ".npy") continue;
    ++count;
    if (count > 3) continue;  // spot-check a few
    auto t = runtime::read_npy(e.path().string());
    ASSERT_TRUE(t.ok()) << t.status().to_string();
    EXPECT_EQ(t->dtype(), ir::DType::kF32);
    EXPECT_EQ(t->dims(), (std::vector<int64_t>{1, 1, 28, 28})) << e.path();
  }
  EXPECT_EQ(count, data["calib_count"].get<int64_t>()) << calib << kMakeModels;
}

}  // namespace
}  // namespace nfuse
