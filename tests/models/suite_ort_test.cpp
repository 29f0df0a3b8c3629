// The published-model-class suite (scripts/suite_models.py: If-wrapped, Conv1d audio, STFT as
// Conv, FP16, FP16 with edge Casts out of order, dynamic quantization, TensorFlow-style NHWC with
// Max, inception/SE/grouped) on the cpu backend, against ONNX Runtime's outputs for the same
// input (scripts/ort_run.js; ORT's outputs, never nfuse's, are the reference).
//
// The tolerance rule, per output:
//   agree   when cosine(nfuse, ORT) >= 0.9999 and max |nfuse - ORT| <= 1e-3 * (max - min of ORT's
//           output), i.e. within a thousandth of the output's range;
//   or else when max |nfuse - ORT| <= ORT's own spread: the max |ORT(x) - ORT(x')| where x' is
//           the input with every element moved by one ulp (away from zero). A model whose output
//           moves that much under a 1-ulp change of its input (a dynamic quantizer's rounding
//           flipping a step) cannot be asked to agree more closely than that with another runtime.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "frontend/onnx/onnx_importer.h"
#include "ir/tensor.h"
#include "ort_peer.h"
#include "runtime/npy.h"
#include "runtime/session.h"

namespace nfuse {
namespace {

namespace fs = std::filesystem;

fs::path suite_dir() { return fs::path(NFUSE_BINARY_DIR) / "models" / "suite"; }

struct Agreement {
  double cosine = 1.0;
  double max_abs = 0.0;
  double range = 0.0;  // of the reference
};

Agreement agreement(const ir::Tensor& got, const ir::Tensor& ref) {
  Agreement a;
  double lo = std::numeric_limits<double>::infinity(), hi = -lo, dot = 0, ng = 0, nr = 0;
  for (int64_t i = 0; i < ref.numel(); ++i) {
    const double g = got.get_double(i), r = ref.get_double(i);
    lo = std::min(lo, r);
    hi = std::max(hi, r);
    dot += g * r;
    ng += g * g;
    nr += r * r;
    const double d = std::fabs(g - r);
    a.max_abs = std::isnan(d) ? INFINITY : std::max(a.max_abs, d);
  }
  a.range = ref.numel() ? hi - lo : 0.0;
  a.cosine = (ng == 0 && nr == 0) ? 1.0 : dot / std::sqrt(ng * nr);
  if (std::isnan(a.cosine)) a.cosine = -1;
  return a;
}

double max_abs_diff(const ir::Tensor& a, const ir::Tensor& b) {
  double m = 0;
  for (int64_t i = 0; i < a.numel(); ++i) m = std::max(m, std::fabs(a.get_double(i) - b.get_double(i)));
  return m;
}

// Every element moved one ulp away from zero (f32 or f16 bit patterns: the next magnitude up).
ir::Tensor one_ulp_up(const ir::Tensor& x) {
  ir::Tensor y = x.clone();
  if (y.dtype() == ir::DType::kF32) {
    float* p = y.data<float>();
    for (int64_t i = 0; i < y.numel(); ++i) p[i] = std::nextafter(p[i], p[i] < 0 ? -INFINITY : INFINITY);
  } else if (y.dtype() == ir::DType::kF16) {
    auto* p = static_cast<uint16_t*>(y.raw());
    for (int64_t i = 0; i < y.numel(); ++i)
      if ((p[i] & 0x7FFF) < 0x7BFF) ++p[i];  // the bit pattern's magnitude, below the largest finite
  }
  return y;
}

struct SuiteModel {
  std::string name, file, input_name, input_file;
};

std::vector<SuiteModel> suite_models() {
  std::ifstream f(suite_dir() / "suite.json");
  if (!f) return {};
  const nlohmann::json j = nlohmann::json::parse(f, nullptr, false);
  std::vector<SuiteModel> out;
  if (j.is_discarded() || !j.contains("models")) return out;
  for (const auto& m : j["models"]) {
    out.push_back({m["name"], m["file"], m["inputs"][0]["name"], m["inputs"][0]["file"]});
  }
  return out;
}

// One model on cpu and on ORT, compared by the rule above (a failure stops this model only).
void check_against_ort(const SuiteModel& m) {
  SCOPED_TRACE(m.name);
  {
    const fs::path model = suite_dir() / m.file, input = suite_dir() / m.input_file;
    auto x = runtime::read_npy(input.string());
    ASSERT_TRUE(x.ok()) << x.status().to_string();
    auto graph = frontend::onnx::load_model(model.string());
    ASSERT_TRUE(graph.ok()) << graph.status().to_string();
    runtime::SessionOptions o;
    o.backend = "cpu";
    auto session = runtime::Session::create(std::move(*graph), o);
    ASSERT_TRUE(session.ok()) << session.status().to_string();
    auto got = (*session)->run({{m.input_name, *x}});
    ASSERT_TRUE(got.ok()) << got.status().to_string();

    const fs::path dir = testing::ort_scratch_dir("suite_" + m.name);
    auto ort = testing::run_ort(model, {{m.input_name, input}}, dir);
    ASSERT_TRUE(ort.ok()) << ort.status().to_string();
    ASSERT_EQ(ort->size(), got->size());
    std::vector<ir::Tensor> ort_nudged;  // ORT on the 1-ulp input, computed when first needed
    for (size_t o_i = 0; o_i < got->size(); ++o_i) {
      const ir::Tensor& y = (*got)[o_i];
      const ir::Tensor& r = (*ort)[o_i];
      ASSERT_EQ(y.dims(), r.dims()) << "output " << o_i;
      ASSERT_EQ(y.dtype(), r.dtype()) << "output " << o_i;
      const Agreement a = agreement(y, r);
      const bool close = a.cosine >= 0.9999 && a.max_abs <= 1e-3 * a.range;
      std::printf("%-26s output %zu: cosine %.7f, max |nfuse - ORT| %.3g, ORT range %.3g%s\n", m.name.c_str(), o_i,
                  a.cosine, a.max_abs, a.range, close ? "" : " (checked against ORT's 1-ulp spread)");
      if (close) continue;
      if (ort_nudged.empty()) {
        const fs::path nudged_input = dir / "nudged.npy";
        ASSERT_TRUE(runtime::write_npy(nudged_input.string(), one_ulp_up(*x)).ok());
        const fs::path nudged_dir = dir / "nudged";
        fs::create_directories(nudged_dir);
        auto n = testing::run_ort(model, {{m.input_name, nudged_input}}, nudged_dir);
        ASSERT_TRUE(n.ok()) << n.status().to_string();
        ort_nudged = std::move(*n);
      }
      const double spread = max_abs_diff(r, ort_nudged[o_i]);
      EXPECT_LE(a.max_abs, spread) << "output " << o_i << ": cosine " << a.cosine << ", max |nfuse - ORT| " << a.max_abs
                                   << " over a range of " << a.range << " (1e-3 of it: " << 1e-3 * a.range
                                   << "), ORT's own spread under a 1-ulp input change " << spread;
    }
    fs::remove_all(dir);
  }
}

TEST(PublishedModelSuite, EveryModelAgreesWithOnnxRuntimeOnCpu) {
  const auto models = suite_models();
  ASSERT_GE(models.size(), 8u) << "no suite at " << suite_dir()
                               << ": run `make models` (scripts/suite_models.py writes it)";
  const std::string no_ort = testing::ort_unavailable_reason();
  ASSERT_TRUE(no_ort.empty()) << no_ort << " (`make models` installs it)";
  for (const SuiteModel& m : models) check_against_ort(m);
}

}  // namespace
}  // namespace nfuse
