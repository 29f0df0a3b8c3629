// fuse_qdq_resize: DQ -> Resize(nearest) -> Q with identical parameters becomes a Resize of the
// quantized tensor, exact (0 steps), by scales and by sizes, u8 and s8, any nearest coordinate
// mode, and u16 / s16 with "com.microsoft" Q/DQ (W8A16 graphs); with other parameters on the two
// sides, a Resize of the input requantized first, as exact; and the declines (linear mode,
// per-axis input, tf_crop_and_resize, the Resize's output a graph output).
#include "passes/fuse_qdq_resize.h"

#include "qdq_fusion_test_util.h"

namespace nfuse::passes_test {
namespace {

struct Spec {
  int elem = kU8;
  std::string mode = "nearest";
  std::string ctm = "asymmetric";
  bool by_sizes = false;
  float y_scale = 0.02f;
  int64_t y_zp_u8 = 128;
  bool resize_output_is_graph_output = false;
  bool per_axis = false;
};

void check(const Spec& s, bool expect_fused, const std::string& what) {
  OnnxBuilder b(17);
  const int64_t zp = s.elem == kU8 ? 128 : 0;
  const std::string x = quantized_input(b, "x", {2, 3, 5, 7}, s.elem, 0.02f, zp);
  if (s.per_axis) dequantize_per_axis(b, "x", 3, s.elem, 0.02f, zp);
  b.initializer("roi", {0}, std::vector<float>{});
  if (s.by_sizes) {
    b.initializer("scales", {0}, std::vector<float>{});
    auto* sizes = b.model().mutable_graph()->add_initializer();
    sizes->set_name("sizes");
    sizes->set_data_type(::onnx::TensorProto::INT64);
    sizes->add_dims(4);
    for (int64_t v : {2, 3, 11, 20}) sizes->add_int64_data(v);
  } else {
    b.initializer("scales", {4}, {1.0f, 1.0f, 2.0f, 3.0f});
  }
  std::vector<std::string> ins = {x, "roi", "scales"};
  if (s.by_sizes) ins.push_back("sizes");
  auto& r = b.node("Resize", ins, {"r"}, "resize");
  set_string_attr(r, "mode", s.mode);
  set_string_attr(r, "coordinate_transformation_mode", s.ctm);
  quantized_output(b, "r", s.elem, s.y_scale, s.elem == kU8 ? s.y_zp_u8 : s.y_zp_u8 - 128);
  if (s.resize_output_is_graph_output) out(b, "r");
  // A Resize remains either way: when fused, the rewritten graph must give the QDQ graph's bytes
  // on ref and the same bytes on cpu.
  if (expect_fused) check_fusion(b, fuse_qdq_resize, "Resize", 1, 0.0f, 0.0, what);
  auto g = load(b);
  PassLog log;
  ASSERT_TRUE(fuse_qdq_resize(*g, log).ok());
  const ir::Node* rs = find_op(*g, "Resize");
  ASSERT_TRUE(rs);
  EXPECT_EQ(rs->input(0)->type.dtype != ir::DType::kF32, expect_fused) << what;
  // Requantized: the input's DequantizeLinear stays, feeding a copy of the output's QuantizeLinear
  // (the output's own is gone), so four remain as without the fusion.
  const bool requantized = s.y_scale != 0.02f || s.y_zp_u8 != 128;
  EXPECT_EQ(count_ops(*g, "DequantizeLinear") + count_ops(*g, "QuantizeLinear"), expect_fused && !requantized ? 2 : 4)
      << what;
  if (expect_fused && requantized) {
    const ir::Node* early_q = rs->input(0)->producer;
    ASSERT_TRUE(early_q && early_q->op_type == "QuantizeLinear") << what;
    EXPECT_EQ(early_q->input(0)->producer->op_type, "DequantizeLinear") << what;
  }
}

TEST(FuseQdqResize, Fuses) {
  check({}, true, "u8 by scales, asymmetric");
  check({.elem = kI8, .ctm = "half_pixel"}, true, "s8 by scales, half_pixel");
  check({.ctm = "align_corners", .by_sizes = true}, true, "u8 by sizes, align_corners");
}

// An FPN's upsampling in a W8A16 graph: 16-bit Q/DQ in "com.microsoft" (as ONNX Runtime writes
// them below opset 21); the Resize then gathers the 16-bit codes (and gives ref's bytes on cpu).
TEST(FuseQdqResize, FusesSixteenBit) {
  for (int elem : {::onnx::TensorProto::UINT16, ::onnx::TensorProto::INT16}) {
    const std::string what = elem == ::onnx::TensorProto::UINT16 ? "u16" : "s16";
    OnnxBuilder b(17);
    const int64_t zp = elem == ::onnx::TensorProto::UINT16 ? 32768 : -5;
    const std::string x = quantized_input(b, "x", {2, 3, 5, 7}, elem, 0.001f, zp);
    b.initializer("roi", {0}, std::vector<float>{});
    b.initializer("scales", {4}, {1.0f, 1.0f, 2.0f, 3.0f});
    auto& r = b.node("Resize", {x, "roi", "scales"}, {"r"}, "resize");
    set_string_attr(r, "mode", "nearest");
    set_string_attr(r, "coordinate_transformation_mode", "half_pixel");
    quantized_output(b, "r", elem, 0.001f, zp);
    for (auto& n : *b.model().mutable_graph()->mutable_node()) {
      if (n.op_type() == "QuantizeLinear" || n.op_type() == "DequantizeLinear") n.set_domain("com.microsoft");
    }
    auto* contrib = b.model().add_opset_import();
    contrib->set_domain("com.microsoft");
    contrib->set_version(1);
    check_fusion(b, fuse_qdq_resize, "Resize", 1, 0.0f, 0.0, what);
    auto g = load(b);
    ASSERT_TRUE(g) << what;
    PassLog log;
    ASSERT_TRUE(fuse_qdq_resize(*g, log).ok());
    const ir::Node* rs = find_op(*g, "Resize");
    ASSERT_TRUE(rs);
    EXPECT_EQ(rs->input(0)->type.dtype, elem == ::onnx::TensorProto::UINT16 ? ir::DType::kU16 : ir::DType::kI16)
        << what;
    EXPECT_EQ(count_ops(*g, "DequantizeLinear") + count_ops(*g, "QuantizeLinear"), 2) << what;
  }
}

// Other parameters after the Resize than before it: the input is requantized to them, then copied.
TEST(FuseQdqResize, FusesWithRequantization) {
  check({.y_scale = 0.03f}, true, "u8, other scale");
  check({.y_scale = 0.013f, .y_zp_u8 = 120}, true, "u8, other scale and zero point");
  check({.elem = kI8, .ctm = "half_pixel", .y_scale = 0.05f, .y_zp_u8 = 100}, true, "s8, other parameters");
  check({.ctm = "align_corners", .by_sizes = true, .y_zp_u8 = 120}, true, "u8 by sizes, other zero point");
}

TEST(FuseQdqResize, Declines) {
  check({.mode = "linear"}, false, "linear");
  check({.resize_output_is_graph_output = true}, false, "Resize output is a graph output");
  check({.per_axis = true}, false, "per-axis input");
  check({.ctm = "tf_crop_and_resize"}, false, "tf_crop_and_resize");
}

}  // namespace
}  // namespace nfuse::passes_test
