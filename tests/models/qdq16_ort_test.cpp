// W8A16 QDQ models exported by nfuse run on ONNX Runtime 1.30: below opset 21 the 16-bit
// QuantizeLinear / DequantizeLinear are written in ORT's "com.microsoft" domain (with its opset
// import), as ORT's own quantizer writes them; at opset 21 they stay standard. ORT's outputs
// match nfuse's ref within one output quantization step, and the exported file imports back into
// nfuse bit for bit. Skips (saying what to install) where ORT is absent.
#include <gtest/gtest.h>

#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "frontend/onnx/onnx_exporter.h"
#include "frontend/onnx/onnx_importer.h"
#include "models/ort_peer.h"
#include "runtime/npy.h"
#include "runtime/session.h"
#include "support/w8a16_graph.h"

namespace nfuse {
namespace {

namespace fs = std::filesystem;
using testing::W8A16GraphBuilder;
using testing::W8A16Spec;

Result<std::vector<ir::Tensor>> run_ref(std::unique_ptr<ir::Graph> g, const ir::Tensor& x) {
  runtime::SessionOptions so;
  so.optimize = false;  // the QDQ graph as built
  NFUSE_ASSIGN_OR_RETURN(auto s, runtime::Session::create(std::move(g), so));
  return s->run({{"x", x}});
}

// The graph as nfuse's quantizer emits it: default-domain 16-bit Q/DQ recorded at `opset`.
std::unique_ptr<ir::Graph> graph_at(const W8A16Spec& s, bool conv, int opset) {
  auto g = conv ? W8A16GraphBuilder(s).conv() : W8A16GraphBuilder(s).matmul(6, 40, 9);
  if (!g) return nullptr;
  g->opsets[""] = opset;
  for (auto& n : g->nodes()) n->opset = opset;
  return g;
}

float y_step(const ir::Graph& g) {
  for (const auto& n : g.nodes())
    if (n->name == "dequant_y") return n->input(1)->constant->data<float>()[0];
  return 0.0f;
}

void check_export(const W8A16Spec& s, bool conv, int opset, const std::string& name) {
  SCOPED_TRACE(name);
  auto g = graph_at(s, conv, opset);
  ASSERT_NE(g, nullptr);
  auto bytes = frontend::onnx::export_model_bytes(*g, {});
  ASSERT_TRUE(bytes.ok()) << bytes.status().to_string();
  ::onnx::ModelProto m;
  ASSERT_TRUE(m.ParseFromString(*bytes));
  int contrib_qdq = 0, std_qdq16 = 0;
  for (const auto& n : m.graph().node()) {
    if (n.op_type() != "QuantizeLinear" && n.op_type() != "DequantizeLinear") continue;
    const bool wide =
        n.name() == "quant_x" || n.name() == "dequant_x" || n.name() == "quant_y" || n.name() == "dequant_y";
    if (n.domain() == "com.microsoft") ++contrib_qdq;
    else if (wide) ++std_qdq16;
  }
  int ms_version = -1, default_version = -1;
  for (const auto& op : m.opset_import()) {
    if (op.domain() == "com.microsoft") ms_version = static_cast<int>(op.version());
    if (op.domain().empty()) default_version = static_cast<int>(op.version());
  }
  EXPECT_EQ(default_version, opset);
  if (opset < 21) {
    EXPECT_EQ(contrib_qdq, 4);  // x's and y's Q and DQ; the s8 weight and i32 bias DQ stay standard
    EXPECT_EQ(std_qdq16, 0);
    EXPECT_EQ(ms_version, 1);
  } else {
    EXPECT_EQ(contrib_qdq, 0);
    EXPECT_EQ(ms_version, -1);
  }

  // Back into nfuse: the same outputs bit for bit (the importer reads opsets up to 17, so the
  // opset-21 file is checked on ORT only).
  const ir::Tensor x = testing::w8a16_input(*g, s.x_range, 99);
  const float step = y_step(*g);
  auto ref = run_ref(std::move(g), x);
  ASSERT_TRUE(ref.ok()) << ref.status().to_string();
  if (opset <= 17) {
    auto g2 = frontend::onnx::load_model_from_bytes(bytes->data(), bytes->size(), ".");
    ASSERT_TRUE(g2.ok()) << g2.status().to_string();
    auto back = run_ref(std::move(*g2), x);
    ASSERT_TRUE(back.ok()) << back.status().to_string();
    ASSERT_EQ((*ref)[0].numel(), (*back)[0].numel());
    for (int64_t i = 0; i < (*ref)[0].numel(); ++i) ASSERT_EQ((*ref)[0].data<float>()[i], (*back)[0].data<float>()[i]);
  }

  const std::string reason = testing::ort_unavailable_reason();
  if (!reason.empty()) {
    std::printf("%s\n", reason.c_str());
    GTEST_SKIP() << reason;
  }
  const fs::path dir = testing::ort_scratch_dir("qdq16_" + name);
  const fs::path model = dir / "model.onnx";
  {
    std::ofstream f(model, std::ios::binary);
    f.write(bytes->data(), static_cast<std::streamsize>(bytes->size()));
  }
  ASSERT_TRUE(runtime::write_npy((dir / "x.npy").string(), x).ok());
  auto ort = testing::run_ort(model, {{"x", dir / "x.npy"}}, dir);
  ASSERT_TRUE(ort.ok()) << ort.status().to_string();
  ASSERT_EQ(ort->size(), 1u);
  const ir::Tensor &a = (*ref)[0], &b = (*ort)[0];
  ASSERT_EQ(a.dims(), b.dims());
  double max_err = 0;
  int64_t differ = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    const double d = std::fabs(double{a.data<float>()[i]} - double{b.data<float>()[i]});
    max_err = std::max(max_err, d);
    differ += d > 0;
  }
  std::printf("[w8a16 ort] %s: max |nfuse - ort| %.3e (one step %.3e), %ld of %ld differ\n", name.c_str(), max_err,
              double{step}, differ, a.numel());
  EXPECT_LE(max_err, step * 1.0001);
  fs::remove_all(dir);
}

TEST(Qdq16Ort, ConvOpset13WritesComMicrosoftQdq) { check_export({}, true, 13, "conv_s16_opset13"); }

TEST(Qdq16Ort, ConvU16Opset13) {
  check_export({.x_unsigned = true, .y_unsigned = true, .bias = "float"}, true, 13, "conv_u16_opset13");
}

TEST(Qdq16Ort, ConvOpset21StaysStandard) { check_export({}, true, 21, "conv_s16_opset21"); }

TEST(Qdq16Ort, MatMulOpset13) { check_export({.x_unsigned = true}, false, 13, "matmul_u16_opset13"); }

}  // namespace
}  // namespace nfuse
