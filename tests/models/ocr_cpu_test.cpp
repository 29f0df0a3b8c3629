// The real PaddleOCR detector on the cpu backend, on the fusion backend (every chain it can run
// fused) and under the partitioner, against ref, on the demo's real text image: the probability
// maps agree closely and the binarized text map (threshold 0.3) is the same.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "frontend/onnx/onnx_importer.h"
#include "runtime/npy.h"
#include "runtime/session.h"

namespace nfuse {
namespace {

namespace fs = std::filesystem;

Result<ir::Tensor> run_det(const std::string& backend, const ir::Tensor& input) {
  const fs::path model = fs::path(NFUSE_BINARY_DIR) / "models" / "ocr" / "ocr_det.onnx";
  NFUSE_ASSIGN_OR_RETURN(auto graph, frontend::onnx::load_model(model.string()));
  runtime::SessionOptions options;
  options.backend = backend;
  NFUSE_ASSIGN_OR_RETURN(auto session, runtime::Session::create(std::move(graph), options));
  NFUSE_ASSIGN_OR_RETURN(auto outputs, session->run({{"x", input}}));
  return outputs[0];
}

TEST(OcrCpu, DetectorMatchesRef) {
  const fs::path input_path = fs::path(NFUSE_BINARY_DIR) / "models" / "ocr" / "ocr_det.input.npy";
  ASSERT_TRUE(fs::exists(input_path)) << input_path << " is missing: run `make models`";
  auto input = runtime::read_npy(input_path.string());
  ASSERT_TRUE(input.ok()) << input.status().to_string();
  auto ref = run_det("ref", *input);
  ASSERT_TRUE(ref.ok()) << ref.status().to_string();
  for (const char* backend : {"cpu", "fusion", "auto"}) {
    auto got = run_det(backend, *input);
    ASSERT_TRUE(got.ok()) << backend << ": " << got.status().to_string();
    ASSERT_EQ(ref->dims(), got->dims());
    double max_diff = 0.0;
    int64_t both = 0, either = 0;
    for (int64_t i = 0; i < ref->numel(); ++i) {
      const float r = ref->data<float>()[i], c = got->data<float>()[i];
      ASSERT_TRUE(std::isfinite(c)) << backend << ": index " << i;
      max_diff = std::max(max_diff, static_cast<double>(std::fabs(r - c)));
      both += (r > 0.3f) && (c > 0.3f);
      either += (r > 0.3f) || (c > 0.3f);
    }
    const double iou = either ? static_cast<double>(both) / static_cast<double>(either) : 1.0;
    std::printf("ocr_det %s vs ref: max abs diff %.3g, text-map IoU %.6f\n", backend, max_diff, iou);
    EXPECT_LE(max_diff, 1e-3) << backend;
    EXPECT_GE(iou, 0.999) << backend;
  }
}

}  // namespace
}  // namespace nfuse
