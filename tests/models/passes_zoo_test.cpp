// The graph passes on the model zoo: every model scripts/models.py builds, optimized with the
// default pipeline (passes::optimize, constant folding on the ref evaluator, verify after every
// pass), must still match PyTorch's output on the ref backend within the zoo tolerances.
// zoo_test.cpp reports missing model files; this test skips when the zoo is not built.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "backends/ref/interpreter.h"
#include "frontend/onnx/onnx_importer.h"
#include "passes/pass_manager.h"
#include "runtime/npy.h"
#include "runtime/session.h"
#include "support/tolerances.h"

namespace nfuse {
namespace {

namespace fs = std::filesystem;

fs::path zoo_dir() { return fs::path(NFUSE_BINARY_DIR) / "models"; }

TEST(PassesZoo, OptimizedModelsMatchPyTorch) {
  const fs::path manifest_path = zoo_dir() / "models.json";
  ASSERT_TRUE(fs::exists(manifest_path)) << manifest_path << " is missing: run `make models`";
  std::ifstream manifest_file(manifest_path);
  nlohmann::json manifest = nlohmann::json::parse(manifest_file, nullptr, /*allow_exceptions=*/false);
  ASSERT_TRUE(manifest.is_object() && manifest.contains("models"));
  for (const auto& entry : manifest["models"]) {
    const std::string name = entry.value("name", "");
    const fs::path onnx_path = zoo_dir() / entry["file"].get<std::string>();
    if (!fs::exists(onnx_path)) continue;
    auto graph = frontend::onnx::load_model(onnx_path.string());
    ASSERT_TRUE(graph.ok()) << name << ": " << graph.status().to_string();
    const size_t nodes_before = (*graph)->nodes().size();
    passes::OptimizeOptions options;
    options.evaluator = backends::ref::node_evaluator();
    options.verify_each = true;
    auto report = passes::optimize(**graph, options);
    ASSERT_TRUE(report.ok()) << name << ": " << report.status().to_string();
    std::map<std::string, size_t> per_pass;
    for (const auto& run : report->runs) per_pass[run.pass] += run.changes.size();
    std::string summary;
    for (const auto& [pass, n] : per_pass)
      if (n) summary += " " + pass + "=" + std::to_string(n);
    const size_t nodes_after = (*graph)->nodes().size();
    std::vector<std::string> out_names;
    for (const ir::Value* v : (*graph)->outputs()) out_names.push_back(v->name);

    auto session = runtime::Session::create(std::move(*graph), {});
    ASSERT_TRUE(session.ok()) << name << ": " << session.status().to_string();
    runtime::NamedTensors inputs;
    for (const auto& in : entry["inputs"]) {
      auto t = runtime::read_npy((zoo_dir() / in["file"].get<std::string>()).string());
      ASSERT_TRUE(t.ok()) << t.status().to_string();
      inputs.push_back({in["name"].get<std::string>(), *t});
    }
    const auto t0 = std::chrono::steady_clock::now();
    auto outputs = (*session)->run(inputs);
    const double run_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ASSERT_TRUE(outputs.ok()) << name << ": " << outputs.status().to_string();
    for (const auto& spec : entry["outputs"]) {
      const std::string out = spec["name"].get<std::string>();
      size_t idx = 0;
      while (idx < out_names.size() && out_names[idx] != out) ++idx;
      ASSERT_LT(idx, out_names.size()) << name << ": optimized graph lost output " << out;
      auto golden = runtime::read_npy((zoo_dir() / spec["golden"].get<std::string>()).string());
      ASSERT_TRUE(golden.ok()) << golden.status().to_string();
      const ir::Tensor& got = (*outputs)[idx];
      ASSERT_EQ(got.dims(), golden->dims()) << name << "/" << out;
      double dot = 0, ny = 0, ng = 0, max_err = 0, gmax = 0;
      for (int64_t i = 0; i < got.numel(); ++i) {
        const double a = got.get_double(i), b = golden->get_double(i);
        dot += a * b;
        ny += a * a;
        ng += b * b;
        max_err = std::max(max_err, std::isnan(a) ? INFINITY : std::fabs(a - b));
        gmax = std::max(gmax, std::fabs(b));
      }
      const double cosine = (ny == 0 && ng == 0) ? 1.0 : dot / std::sqrt(ny * ng);
      const double tol = test::model_max_abs_tol(gmax);
      std::printf("[passes-zoo] %-26s %-8s nodes %4zu -> %4zu  cos %.9f  max_abs_err %.3e (tol %.2e)  run %.1fs |%s\n",
                  name.c_str(), out.c_str(), nodes_before, nodes_after, cosine, max_err, tol, run_s, summary.c_str());
      std::fflush(stdout);
      EXPECT_GE(cosine, test::kModelCosineMin) << name << "/" << out;
      EXPECT_LE(max_err, tol) << name << "/" << out;
    }
  }
}

}  // namespace
}  // namespace nfuse
