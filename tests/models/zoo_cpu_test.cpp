// The model zoo on the `cpu` backend, at 1 and 2 threads: every model scripts/models.py builds,
// compared with PyTorch's output within the same bounds as the `ref` run in zoo_test.cpp.
// A missing file is a failure that says to run `make models`, never a skip.
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
    "espcn_x4",     "lstm_2layer",  "transformer_encoder",
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

// Loads the model and makes a cpu-backend session; fails the test (fatally) on any error.
std::unique_ptr<runtime::Session> open_session(const fs::path& onnx_path, int threads) {
  auto graph = frontend::onnx::load_model(onnx_path.string());
  EXPECT_TRUE(graph.ok()) << graph.status().to_string();
  if (!graph.ok()) return nullptr;
  runtime::SessionOptions options;
  options.backend = "cpu";
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

struct ZooCpuCase {
  const char* model;
  int threads;
};

void PrintTo(const ZooCpuCase& c, std::ostream* os) { *os << c.model << "_t" << c.threads; }

std::vector<ZooCpuCase> zoo_cpu_cases() {
  std::vector<ZooCpuCase> cases;
  for (const char* m : kZooModels)
    for (int t : {1, 2}) cases.push_back({m, t});
  return cases;
}

class ZooCpuModel : public ::testing::TestWithParam<ZooCpuCase> {};

TEST_P(ZooCpuModel, MatchesPyTorch) {
  const std::string name = GetParam().model;
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
  std::unique_ptr<runtime::Session> session = open_session(onnx_path, threads);
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
    std::printf("[zoo cpu t%d] %-26s %-10s cos %.9f  max_abs_err %.3e (tol %.2e)  load %.2fs  run %.2fs\n", threads, name.c_str(),
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

INSTANTIATE_TEST_SUITE_P(ZooCpu, ZooCpuModel, ::testing::ValuesIn(zoo_cpu_cases()),
                         [](const ::testing::TestParamInfo<ZooCpuCase>& info) {
                           return std::string(info.param.model) + "_t" + std::to_string(info.param.threads);
                         });

}  // namespace
}  // namespace nfuse
