// A QDQ model written by another tool: scripts/make_foreign_qdq.py exports a small CNN from
// PyTorch (dynamic batch, so Shape / Gather / Unsqueeze / Cast / ConstantOfShape / Concat /
// Reshape shape arithmetic) and quantizes it the way ONNX Runtime's quantize_static (QDQ,
// per-channel) does: int8 weight and int32 bias initializers behind DequantizeLinear (bias
// scale = x_scale * w_scale), u8 Q/DQ pairs on activations, QDQ around Add, a Relu dropped into
// the u8 zero point or kept before the QuantizeLinear. nfuse must import it, fuse its three
// Convs into QLinearConv (identified by their int8 weights), fold the shape arithmetic at plan
// time, and match within one output quantization step both goldens written with the model:
// ONNX Runtime's outputs (when it was installed at `make models` time) and a numpy simulation of
// the QDQ graph. model_float_shape.onnx is the same model with its Shape nodes reading the float
// tensors before QuantizeLinear (fake-quant-on-inputs exporters): same goldens, and the same
// fusions (the shape_through_quantize pass moves those Shapes onto the quantized tensors).
// A missing model fails (run `make models`).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "compile/plan.h"
#include "frontend/onnx/onnx_importer.h"
#include "models/ort_peer.h"
#include "runtime/npy.h"
#include "runtime/session.h"

namespace nfuse {
namespace {

namespace fs = std::filesystem;

const std::string kMakeModels = ": run `make models` (scripts/make_foreign_qdq.py writes build/models/foreign_qdq/)";

fs::path foreign_dir() { return fs::path(NFUSE_BINARY_DIR) / "models" / "foreign_qdq"; }

struct Foreign {
  nlohmann::json meta;
  ir::Tensor input;                 // [16, 3, 32, 32]
  ir::Tensor golden_numpy;          // [16, 10]
  std::optional<ir::Tensor> golden_ort;
  float step = 0;
};

void load_foreign(Foreign* f) {
  const fs::path meta_path = foreign_dir() / "meta.json";
  ASSERT_TRUE(fs::exists(meta_path)) << meta_path << " is missing" << kMakeModels;
  std::ifstream in(meta_path);
  f->meta = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  ASSERT_TRUE(f->meta.is_object() && f->meta.contains("output_scale") && f->meta.contains("conv_weights"))
      << meta_path << " is malformed" << kMakeModels;
  f->step = f->meta["output_scale"].get<float>();
  auto x = runtime::read_npy((foreign_dir() / "input.npy").string());
  ASSERT_TRUE(x.ok()) << x.status().to_string() << kMakeModels;
  f->input = *x;
  auto g = runtime::read_npy((foreign_dir() / "golden_numpy.npy").string());
  ASSERT_TRUE(g.ok()) << g.status().to_string() << kMakeModels;
  f->golden_numpy = *g;
  if (fs::exists(foreign_dir() / "golden_ort.npy")) {
    auto o = runtime::read_npy((foreign_dir() / "golden_ort.npy").string());
    ASSERT_TRUE(o.ok()) << o.status().to_string();
    f->golden_ort = *o;
  } else if (testing::ort_unavailable_reason().empty()) {
    // ORT was installed after `make models`: run it now.
    const fs::path dir = testing::ort_scratch_dir("foreign_qdq");
    auto o = testing::run_ort(foreign_dir() / "model.onnx", {{"x", foreign_dir() / "input.npy"}}, dir);
    ASSERT_TRUE(o.ok()) << o.status().to_string();
    ASSERT_EQ(o->size(), 1u);
    f->golden_ort = (*o)[0];
    fs::remove_all(dir);
  }
}

// Rows [begin, end) of a [N, ...] f32 tensor.
ir::Tensor rows(const ir::Tensor& t, int64_t begin, int64_t end) {
  std::vector<int64_t> dims = t.dims();
  const int64_t row = t.numel() / dims[0];
  dims[0] = end - begin;
  ir::Tensor out = ir::Tensor::allocate(ir::DType::kF32, dims);
  std::copy(t.data<float>() + begin * row, t.data<float>() + end * row, out.data<float>());
  return out;
}

// Largest |a - b| over `b`'s rows [begin, begin + a.dim(0)).
double max_diff(const ir::Tensor& a, const ir::Tensor& b, int64_t begin = 0) {
  const ir::Tensor r = rows(b, begin, begin + a.dim(0));
  EXPECT_EQ(a.dims(), r.dims());
  if (a.dims() != r.dims()) return INFINITY;
  double d = 0;
  for (int64_t k = 0; k < a.numel(); ++k) d = std::max(d, std::fabs(double{a.data<float>()[k]} - double{r.data<float>()[k]}));
  return d;
}

constexpr const char* kModels[] = {"model.onnx", "model_float_shape.onnx"};

Result<std::unique_ptr<runtime::Session>> cpu_session(const std::string& file = "model.onnx") {
  NFUSE_ASSIGN_OR_RETURN(auto graph, frontend::onnx::load_model((foreign_dir() / file).string()));
  runtime::SessionOptions so;
  so.backend = "cpu";
  so.threads = 1;
  return runtime::Session::create(std::move(graph), so);
}

TEST(QdqForeign, ConvsFuseIntoQLinearConv) {
  Foreign f;
  ASSERT_NO_FATAL_FAILURE(load_foreign(&f));
  const std::vector<std::string> want = f.meta["conv_weights"].get<std::vector<std::string>>();
  ASSERT_EQ(want.size(), 3u);
  for (const char* file : kModels) {
    SCOPED_TRACE(file);
    auto s = cpu_session(file);
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    std::set<std::string> fused_weights;
    std::map<std::string, int> ops;
    for (const auto& n : (*s)->graph().nodes()) {
      ++ops[n->op_type];
      if (n->op_type == "QLinearConv" && n->input(3)) fused_weights.insert(n->input(3)->name);
    }
    std::string hist;
    for (const auto& [op, k] : ops) hist += " " + op + ":" + std::to_string(k);
    std::printf("[qdq foreign] %s optimized:%s\n", file, hist.c_str());
    std::fflush(stdout);
    for (const std::string& w : want) EXPECT_TRUE(fused_weights.count(w)) << "no QLinearConv runs the weight " << w;
    EXPECT_EQ(ops["QLinearConv"], 3);
    EXPECT_EQ(ops["Conv"], 0) << "a Conv stayed in float";
    EXPECT_EQ(ops["Add"], 0) << "an Add stayed in float";
  }
}

// The shape arithmetic depends on the batch only: with the batch known it folds at plan time.
void check_plan_folds(const char* file) {
  SCOPED_TRACE(file);
  auto s = cpu_session(file);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  static const std::set<std::string> kShapeOps = {"Shape", "Gather", "Unsqueeze", "Concat", "Cast",
                                                   "ConstantOfShape", "Mul", "Div", "Sub"};
  for (int64_t batch : {1, 16}) {
    auto plan = (*s)->prepare({{"x", {batch, 3, 32, 32}}});
    ASSERT_TRUE(plan.ok()) << plan.status().to_string();
    std::vector<std::string> run_shape_ops;
    int steps_nodes = 0;
    for (const auto& step : (*plan)->steps) {
      for (const ir::Node* n : step.partition.nodes) {
        ++steps_nodes;
        if (kShapeOps.count(n->op_type)) run_shape_ops.push_back(n->op_type + " '" + n->name + "'");
      }
    }
    std::printf("[qdq foreign] %s batch %lld: %d nodes run, %d folded at plan time\n", file,
                static_cast<long long>(batch), steps_nodes, (*plan)->folded_nodes);
    EXPECT_TRUE(run_shape_ops.empty()) << "batch " << batch << ": shape arithmetic runs: " << run_shape_ops.front();
    EXPECT_GE((*plan)->folded_nodes, 12);
  }
}

TEST(QdqForeign, ShapeArithmeticFoldsAtPlanTime) {
  Foreign f;
  ASSERT_NO_FATAL_FAILURE(load_foreign(&f));
  for (const char* file : kModels) check_plan_folds(file);
}

// The whole batch, then each row alone (the shape arithmetic sees another batch size).
void check_matches(const Foreign& f, const char* file) {
  SCOPED_TRACE(file);
  auto s = cpu_session(file);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  auto all = (*s)->run({{"x", f.input}});
  ASSERT_TRUE(all.ok()) << all.status().to_string();
  ASSERT_EQ(all->size(), 1u);
  double d_numpy = max_diff((*all)[0], f.golden_numpy);
  double d_ort = f.golden_ort ? max_diff((*all)[0], *f.golden_ort) : 0;
  for (int64_t i = 0; i < f.input.dim(0); ++i) {
    auto one = (*s)->run({{"x", rows(f.input, i, i + 1)}});
    ASSERT_TRUE(one.ok()) << one.status().to_string();
    d_numpy = std::max(d_numpy, max_diff((*one)[0], f.golden_numpy, i));
    if (f.golden_ort) d_ort = std::max(d_ort, max_diff((*one)[0], *f.golden_ort, i));
  }
  std::printf("[qdq foreign] %s: max |nfuse - numpy QDQ| %.3e (%.2f steps of %.4e); ", file, d_numpy,
              d_numpy / double{f.step}, double{f.step});
  if (f.golden_ort) {
    std::printf("max |nfuse - ORT| %.3e (%.2f steps)\n", d_ort, d_ort / double{f.step});
  } else {
    std::printf("no ORT golden (%s)\n", testing::ort_unavailable_reason().c_str());
  }
  std::fflush(stdout);
  EXPECT_LE(d_numpy, double{f.step} * 1.0001);
  EXPECT_LE(d_ort, double{f.step} * 1.0001);
}

TEST(QdqForeign, MatchesOrtAndNumpyWithinOneStep) {
  Foreign f;
  ASSERT_NO_FATAL_FAILURE(load_foreign(&f));
  ASSERT_EQ(f.input.dim(0), f.golden_numpy.dim(0));
  for (const char* file : kModels) check_matches(f, file);
}

}  // namespace
}  // namespace nfuse
