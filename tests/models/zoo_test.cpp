// The model zoo end to end: every model scripts/models.py builds is imported, run on `ref`, on
// `cpu` and `fusion` (1 and 2 threads) and under `auto`, and compared with PyTorch's output; the real PaddleOCR models (scripts/
// fetch_ocr_models.sh, inputs from scripts/make_demo_image.py) must load, run and give sane,
// finite outputs. A missing file is a failure that says to run `make models`, never a skip.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "frontend/onnx/onnx_importer.h"
#include "ir/tensor.h"
#include "runtime/npy.h"
#include "runtime/session.h"
#include "support/tolerances.h"

namespace nfuse {
namespace {

namespace fs = std::filesystem;

// The models scripts/models.py builds; a model missing from its manifest fails here.
const char* const kZooModels[] = {
    "mobilenet_v1", "mobilenet_v2", "mobilenet_v2_bn",           "mobilenet_v3_large",
    "resnet18",     "resnet50",     "lraspp_mobilenet_v3_large", "yolo_tiny",
    "espcn_x4",     "lstm_2layer",  "transformer_encoder",       "fashion_mnist_cnn",
};

const std::string kMakeModels =
    "; run `make models` (scripts/models.py, scripts/fetch_ocr_models.sh and "
    "scripts/make_demo_image.py write build/models/)";

fs::path models_dir() { return fs::path(NFUSE_BINARY_DIR) / "models"; }

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

struct Comparison {
  double cosine = 0;
  double max_abs_err = 0;
  double golden_max_abs = 0;
  int64_t first_bad = -1;  // first element over the bound or not finite
};

Comparison compare(const ir::Tensor& got, const ir::Tensor& golden) {
  Comparison c;
  const float* y = got.data<float>();
  const float* g = golden.data<float>();
  double dot = 0, ny = 0, ng = 0;
  for (int64_t i = 0; i < golden.numel(); ++i) c.golden_max_abs = std::max(c.golden_max_abs, std::fabs(double{g[i]}));
  double tol = test::model_max_abs_tol(c.golden_max_abs);
  for (int64_t i = 0; i < golden.numel(); ++i) {
    double a = y[i], b = g[i];
    dot += a * b;
    ny += a * a;
    ng += b * b;
    double err = std::fabs(a - b);
    if (!(err <= tol) && c.first_bad < 0) c.first_bad = i;  // NaN lands here too
    if (!(err <= c.max_abs_err)) c.max_abs_err = std::isnan(err) ? INFINITY : err;
  }
  // Two all-zero tensors agree; one zero and one not do not.
  c.cosine = (ny == 0 && ng == 0) ? 1.0 : dot / std::sqrt(ny * ng);
  if (std::isnan(c.cosine)) c.cosine = -1;
  return c;
}

// Loads the model and makes a session; fails the test (fatally) on any error.
std::unique_ptr<runtime::Session> open_session(const fs::path& onnx_path, const std::string& backend = "ref",
                                               int threads = 1) {
  auto graph = frontend::onnx::load_model(onnx_path.string());
  EXPECT_TRUE(graph.ok()) << graph.status().to_string();
  if (!graph.ok()) return nullptr;
  runtime::SessionOptions options;
  options.backend = backend;
  options.threads = threads;
  auto session = runtime::Session::create(std::move(*graph), options);
  EXPECT_TRUE(session.ok()) << session.status().to_string();
  if (!session.ok()) return nullptr;
  return std::move(*session);
}

Result<ir::Tensor> read_required_npy(const fs::path& path) {
  if (!fs::exists(path)) return not_found(path.string() + " is missing" + kMakeModels);
  return runtime::read_npy(path.string());
}

// Every zoo model on ref, on the optimized cpu backend at 1 and 2 threads, on the fusion backend
// (forced: every chain it can run) at 1 and 2 threads, and under the partitioner (auto).
struct ZooCase {
  const char* model;
  const char* backend;
  int threads;
};

void PrintTo(const ZooCase& c, std::ostream* os) { *os << c.model << "_" << c.backend << "_t" << c.threads; }

std::vector<ZooCase> zoo_cases() {
  std::vector<ZooCase> cases;
  for (const char* m : kZooModels) {
    cases.push_back({m, "ref", 1});
    cases.push_back({m, "cpu", 1});
    cases.push_back({m, "cpu", 2});
    cases.push_back({m, "fusion", 1});  // every chain fusion can run, the rest on cpu
    cases.push_back({m, "fusion", 2});
    cases.push_back({m, "auto", 1});    // the partitioner's plan
  }
  return cases;
}

class ZooModel : public ::testing::TestWithParam<ZooCase> {};

TEST_P(ZooModel, MatchesPyTorch) {
  const std::string name = GetParam().model;
  const std::string backend = GetParam().backend;
  const int threads = GetParam().threads;
  const fs::path dir = models_dir();
  const fs::path manifest_path = dir / "models.json";
  ASSERT_TRUE(fs::exists(manifest_path)) << manifest_path << " is missing" << kMakeModels;
  std::ifstream manifest_file(manifest_path);
  nlohmann::json manifest = nlohmann::json::parse(manifest_file, nullptr, /*allow_exceptions=*/false);
  ASSERT_TRUE(manifest.is_object() && manifest.contains("models") && manifest["models"].is_array())
      << manifest_path << " is not a models.py manifest" << kMakeModels;
  const nlohmann::json* entry = nullptr;
  for (const auto& m : manifest["models"])
    if (m.value("name", "") == name) entry = &m;
  ASSERT_NE(entry, nullptr) << name << " is not in " << manifest_path << kMakeModels;

  const fs::path onnx_path = dir / (*entry)["file"].get<std::string>();
  ASSERT_TRUE(fs::exists(onnx_path)) << onnx_path << " is missing" << kMakeModels;
  const auto& input_spec = (*entry)["inputs"][0];
  auto input = read_required_npy(dir / input_spec["file"].get<std::string>());
  ASSERT_TRUE(input.ok()) << input.status().to_string();

  auto t0 = std::chrono::steady_clock::now();
  std::unique_ptr<runtime::Session> session = open_session(onnx_path, backend, threads);
  ASSERT_NE(session, nullptr);
  double load_s = seconds_since(t0);

  t0 = std::chrono::steady_clock::now();
  auto outputs = session->run({{input_spec["name"].get<std::string>(), *input}});
  double run_s = seconds_since(t0);
  ASSERT_TRUE(outputs.ok()) << name << ": " << outputs.status().to_string();
  const auto& graph_outputs = session->graph().outputs();
  ASSERT_EQ(outputs->size(), (*entry)["outputs"].size());

  for (const auto& out_spec : (*entry)["outputs"]) {
    const std::string out_name = out_spec["name"].get<std::string>();
    size_t index = graph_outputs.size();
    for (size_t i = 0; i < graph_outputs.size(); ++i)
      if (graph_outputs[i]->name == out_name) index = i;
    ASSERT_LT(index, graph_outputs.size()) << name << ": the imported graph has no output '" << out_name << "'";
    const ir::Tensor& got = (*outputs)[index];
    auto golden = read_required_npy(dir / out_spec["golden"].get<std::string>());
    ASSERT_TRUE(golden.ok()) << golden.status().to_string();
    ASSERT_EQ(got.dtype(), ir::DType::kF32) << name << "/" << out_name;
    ASSERT_EQ(got.dims(), golden->dims()) << name << "/" << out_name << ": shape " << ir::dims_to_string(got.dims())
                                          << ", golden " << ir::dims_to_string(golden->dims());

    Comparison c = compare(got, *golden);
    double tol = test::model_max_abs_tol(c.golden_max_abs);
    std::printf("[zoo %s t%d] %-26s %-10s cos %.9f  max_abs_err %.3e (tol %.2e)  load %.2fs  run %.2fs\n",
                backend.c_str(), threads, name.c_str(),
                out_name.c_str(), c.cosine, c.max_abs_err, tol, load_s, run_s);
    std::fflush(stdout);
    EXPECT_GE(c.cosine, test::kModelCosineMin) << name << "/" << out_name;
    EXPECT_LE(c.max_abs_err, tol) << name << "/" << out_name;
    if (c.first_bad >= 0) {
      ADD_FAILURE() << name << "/" << out_name << ": first element over the bound at flat index " << c.first_bad
                    << ": got " << got.data<float>()[c.first_bad] << ", golden " << golden->data<float>()[c.first_bad];
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Zoo, ZooModel, ::testing::ValuesIn(zoo_cases()),
                         [](const ::testing::TestParamInfo<ZooCase>& info) {
                           return std::string(info.param.model) + "_" + info.param.backend + "_t" +
                                  std::to_string(info.param.threads);
                         });

// ---------------------------------------------------------------------------------------------
// Real PaddleOCR models (PP-OCRv4 det/rec, mobile v2.0 cls) at the demo's fixed shapes.

struct OcrCase {
  const char* name;
  std::vector<int64_t> input_dims;
  std::vector<int64_t> output_dims;
};

void PrintTo(const OcrCase& c, std::ostream* os) { *os << "ocr_" << c.name; }

const OcrCase kOcrCases[] = {
    {"det", {1, 3, 960, 960}, {1, 1, 960, 960}},  // DBNet probability map
    {"rec", {1, 3, 48, 320}, {1, 40, 6625}},      // CTC: width/8 steps x (blank + 6623 keys + space)
    {"cls", {1, 3, 48, 192}, {1, 2}},             // text direction 0 / 180 degrees
};

// The text the recogniser must read from the demo line (skimage.data.page()'s heading).
const char* const kDemoLineText = "Region-based segmentation";

std::vector<std::string> read_lines(const fs::path& path) {
  std::vector<std::string> lines;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// Greedy CTC decoding: argmax per step, merge repeats, drop blanks (0); the last class is ' '.
std::string ctc_decode(const ir::Tensor& probs, const std::vector<std::string>& keys) {
  const int64_t steps = probs.dim(1), classes = probs.dim(2);
  const float* p = probs.data<float>();
  std::string text;
  int64_t prev = -1;
  for (int64_t t = 0; t < steps; ++t) {
    int64_t best = 0;
    for (int64_t c = 1; c < classes; ++c)
      if (p[t * classes + c] > p[t * classes + best]) best = c;
    if (best != prev && best != 0) {
      size_t k = static_cast<size_t>(best - 1);
      text += k < keys.size() ? keys[k] : (best == classes - 1 ? " " : "?");
    }
    prev = best;
  }
  return text;
}

void check_ocr_semantics(const std::string& name, const ir::Tensor& y, const fs::path& dir) {
  const float* p = y.data<float>();
  if (name == "det") {
    int64_t text_pixels = 0;
    for (int64_t i = 0; i < y.numel(); ++i) {
      EXPECT_TRUE(p[i] >= 0.f && p[i] <= 1.f) << "det probability out of [0,1] at " << i << ": " << p[i];
      if (p[i] > 0.3f) ++text_pixels;
    }
    double frac = static_cast<double>(text_pixels) / static_cast<double>(y.numel());
    std::printf("[zoo] ocr_det: %.2f%% of pixels are text (p > 0.3; ONNX Runtime: 6.96%%)\n", 100 * frac);
    EXPECT_GT(frac, 0.02) << "the detector finds (almost) no text in the demo image";
    EXPECT_LT(frac, 0.20) << "the detector marks most of the demo image as text";
  } else if (name == "rec" || name == "cls") {
    const int64_t classes = y.dim(y.rank() - 1);
    for (int64_t row = 0; row < y.numel() / classes; ++row) {
      double sum = 0;
      for (int64_t c = 0; c < classes; ++c) sum += p[row * classes + c];
      EXPECT_NEAR(sum, 1.0, 1e-3) << name << ": softmax row " << row << " does not sum to 1";
    }
    if (name == "cls") {
      std::printf("[zoo] ocr_cls: p(0 deg) %.6f  p(180 deg) %.6f\n", p[0], p[1]);
      EXPECT_GT(p[0], 0.9f) << "the upright demo line must be classified as 0 degrees";
    } else {
      const fs::path keys_path = dir / "ocr_keys.txt";
      ASSERT_TRUE(fs::exists(keys_path)) << keys_path << " is missing" << kMakeModels;
      std::string text = ctc_decode(y, read_lines(keys_path));
      std::printf("[zoo] ocr_rec: read \"%s\"\n", text.c_str());
      EXPECT_EQ(text, kDemoLineText);
    }
  }
}

class OcrModel : public ::testing::TestWithParam<OcrCase> {};

TEST_P(OcrModel, RunsAtFixedShape) {
  const OcrCase& c = GetParam();
  const std::string name = c.name;
  const fs::path dir = models_dir() / "ocr";
  const fs::path onnx_path = dir / ("ocr_" + name + ".onnx");
  ASSERT_TRUE(fs::exists(onnx_path)) << onnx_path << " is missing" << kMakeModels;
  auto input = read_required_npy(dir / ("ocr_" + name + ".input.npy"));
  ASSERT_TRUE(input.ok()) << input.status().to_string();
  ASSERT_EQ(input->dims(), c.input_dims) << "demo input has the wrong shape" << kMakeModels;

  auto t0 = std::chrono::steady_clock::now();
  std::unique_ptr<runtime::Session> session = open_session(onnx_path);
  ASSERT_NE(session, nullptr);
  double load_s = seconds_since(t0);
  ASSERT_EQ(session->graph().inputs().size(), 1u);
  const std::string input_name = session->graph().inputs()[0]->name;

  t0 = std::chrono::steady_clock::now();
  auto outputs = session->run({{input_name, *input}});
  double run_s = seconds_since(t0);
  ASSERT_TRUE(outputs.ok()) << "ocr_" << name << ": " << outputs.status().to_string();
  ASSERT_EQ(outputs->size(), 1u);
  const ir::Tensor& y = (*outputs)[0];
  ASSERT_EQ(y.dtype(), ir::DType::kF32);
  ASSERT_EQ(y.dims(), c.output_dims) << "ocr_" << name << ": output " << ir::dims_to_string(y.dims());
  int64_t non_finite = 0;
  for (int64_t i = 0; i < y.numel(); ++i) non_finite += std::isfinite(y.data<float>()[i]) ? 0 : 1;
  std::printf("[zoo] ocr_%-22s in %s out %s  non-finite %lld  load %.2fs  run %.2fs\n", name.c_str(),
              ir::dims_to_string(c.input_dims).c_str(), ir::dims_to_string(y.dims()).c_str(),
              static_cast<long long>(non_finite), load_s, run_s);
  std::fflush(stdout);
  ASSERT_EQ(non_finite, 0) << "ocr_" << name << " produced NaN or Inf";
  check_ocr_semantics(name, y, dir);
}

INSTANTIATE_TEST_SUITE_P(Ocr, OcrModel, ::testing::ValuesIn(kOcrCases),
                         [](const ::testing::TestParamInfo<OcrCase>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace nfuse
