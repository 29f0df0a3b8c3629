// fuse_qdq_conv_transpose: DQ -> ConvTranspose (kernel == stride) -> Q becomes a 1x1 QLinearConv
// and a DepthToSpace, within one output step of the QDQ graph on ref and bit for bit between ref
// and cpu after it: u8 and s8, per-tensor and per-axis-1 weights, float / int32 / no bias, 2x2
// and 3x3 blocks, non-square inputs, a Relu the output range implies, 16-bit (W8A16); and the declines
// (overlapping taps, pads, groups, output_padding, a Relu that would clamp, per-axis-0 weights).
#include "passes/fuse_qdq_conv_transpose.h"

#include <random>

#include "qdq_fusion_test_util.h"

namespace nfuse::passes_test {
namespace {

constexpr int kI32 = ::onnx::TensorProto::INT32;

struct Spec {
  int elem = kU8;
  int64_t ci = 8, co = 5, k = 2, stride = 2;
  bool per_channel = true;
  int64_t w_axis = 1;
  std::string bias = "float";  // "none", "float", "int32"
  bool relu = false;
  int64_t y_zp_u8 = 128;  // u8 output zero point (s8: minus 128)
  int64_t group = 1;
  std::vector<int64_t> pads = {};
  std::vector<int64_t> output_padding = {};
};

constexpr float kXScale = 0.02f, kYScale = 0.03f;

OnnxBuilder build(const Spec& s) {
  OnnxBuilder b(17);
  const int64_t x_zp = s.elem == kU8 ? 120 : 3;
  const std::string x = quantized_input(b, "x", {1, s.ci, 5, 7}, s.elem, kXScale, x_zp);
  const int64_t cog = s.co / s.group;
  const std::vector<int64_t> wd = {s.ci, cog, s.k, s.k};
  const int64_t channels = s.per_channel ? wd[static_cast<size_t>(s.w_axis)] : 1;
  std::vector<float> ws;
  for (int64_t i = 0; i < channels; ++i) ws.push_back(0.004f + 0.0007f * static_cast<float>(i % 5));
  const std::vector<int64_t> wsd = s.per_channel ? std::vector<int64_t>{channels} : std::vector<int64_t>{};
  b.initializer("w_scale", wsd, ws);
  int_initializer(b, "w_zp", kI8, wsd, std::vector<int64_t>(ws.size(), 0));
  std::vector<int64_t> w;
  std::mt19937 rng(kSeed);
  std::uniform_int_distribution<int> d(-127, 127);
  for (int64_t i = 0; i < numel(wd); ++i) w.push_back(d(rng));
  int_initializer(b, "w_q", kI8, wd, w);
  auto& dqw = b.node("DequantizeLinear", {"w_q", "w_scale", "w_zp"}, {"w_dq"}, "dqw");
  if (s.per_channel) set_int_attr(dqw, "axis", s.w_axis);
  std::vector<std::string> in = {x, "w_dq"};
  if (s.bias == "float") {
    random_initializer(b, "bias", {s.co}, 7, -0.5f, 0.5f);
    in.push_back("bias");
  } else if (s.bias == "int32") {
    std::vector<int64_t> bq;
    for (int64_t i = 0; i < s.co; ++i) bq.push_back((i * 7919) % 4001 - 2000);
    std::vector<float> bs;
    for (int64_t i = 0; i < s.co; ++i) bs.push_back(kXScale * ws[s.per_channel ? static_cast<size_t>(i) : 0]);
    int_initializer(b, "bias_q", kI32, {s.co}, bq);
    b.initializer("bias_scale", {s.co}, bs);
    auto& dqb = b.node("DequantizeLinear", {"bias_q", "bias_scale"}, {"bias_dq"}, "dqb");
    set_int_attr(dqb, "axis", 0);
    in.push_back("bias_dq");
  }
  auto& ct = b.node("ConvTranspose", in, {"c"}, "deconv");
  set_ints_attr(ct, "kernel_shape", {s.k, s.k});
  set_ints_attr(ct, "strides", {s.stride, s.stride});
  if (!s.pads.empty()) set_ints_attr(ct, "pads", s.pads);
  if (!s.output_padding.empty()) set_ints_attr(ct, "output_padding", s.output_padding);
  if (s.group != 1) set_int_attr(ct, "group", s.group);
  std::string y = "c";
  if (s.relu) {
    b.node("Relu", {"c"}, {"a"}, "relu");
    y = "a";
  }
  quantized_output(b, y, s.elem, kYScale, s.elem == kU8 ? s.y_zp_u8 : s.y_zp_u8 - 128);
  return b;
}

void check(const Spec& s, bool expect_fused, const std::string& what) {
  check_fusion(build(s), fuse_qdq_conv_transpose, "DepthToSpace", expect_fused ? 1 : 0, kYScale, 2.0, what);
  auto g = load(build(s));
  ASSERT_TRUE(g);
  PassLog log;
  ASSERT_TRUE(fuse_qdq_conv_transpose(*g, log).ok());
  EXPECT_EQ(count_ops(*g, "ConvTranspose"), expect_fused ? 0 : 1) << what;
  EXPECT_EQ(count_ops(*g, "QLinearConv"), expect_fused ? 1 : 0) << what;
}

TEST(FuseQdqConvTranspose, Fuses) {
  check({}, true, "u8, per-axis-1 weights, float bias, 2x2");
  check({.elem = kI8, .per_channel = false, .bias = "none"}, true, "s8, per-tensor weights, no bias");
  check({.ci = 4, .co = 3, .k = 3, .stride = 3, .bias = "int32"}, true, "u8, 3x3 blocks, int32 bias");
  check({.relu = true, .y_zp_u8 = 0}, true, "u8, Relu implied by a zero point of 0");
  // The QLinearConv and the DepthToSpace of bytes have cpu kernels (no reference fallback).
  expect_fused_runs_on_cpu(build({}), fuse_qdq_conv_transpose, "u8", 2);
  expect_fused_runs_on_cpu(build({.elem = kI8, .k = 3, .stride = 3}), fuse_qdq_conv_transpose, "s8 3x3");
}

// W8A16: 16-bit x and y with ONNX Runtime's "com.microsoft" Q/DQ become nfuse.QLinearConv16 and
// a DepthToSpace of the 16-bit codes; a Relu before a symmetric s16 output becomes its clamp.
TEST(FuseQdqConvTranspose, FusesSixteenBit) {
  for (int elem : {::onnx::TensorProto::UINT16, ::onnx::TensorProto::INT16}) {
    for (bool relu : {false, true}) {
      const std::string what = std::string(elem == ::onnx::TensorProto::UINT16 ? "u16" : "s16") + (relu ? " relu" : "");
      OnnxBuilder b = build({.elem = elem, .relu = relu});
      for (auto& n : *b.model().mutable_graph()->mutable_node()) {
        if ((n.op_type() == "QuantizeLinear" || n.op_type() == "DequantizeLinear") && n.name() != "dqw")
          n.set_domain("com.microsoft");
      }
      auto* contrib = b.model().add_opset_import();
      contrib->set_domain("com.microsoft");
      contrib->set_version(1);
      check_fusion(b, fuse_qdq_conv_transpose, "DepthToSpace", 1, kYScale, 2.0, what);
      auto g = load(b);
      ASSERT_TRUE(g) << what;
      PassLog log;
      ASSERT_TRUE(fuse_qdq_conv_transpose(*g, log).ok());
      EXPECT_EQ(count_ops(*g, "QLinearConv16"), 1) << what;
      EXPECT_EQ(count_ops(*g, "ConvTranspose") + count_ops(*g, "Relu"), 0) << what;
      expect_fused_runs_on_cpu(b, fuse_qdq_conv_transpose, what);
    }
  }
}

TEST(FuseQdqConvTranspose, Declines) {
  check({.k = 3, .stride = 2}, false, "overlapping taps");
  check({.pads = {1, 1, 1, 1}}, false, "pads");
  check({.co = 6, .group = 2}, false, "group 2");
  check({.output_padding = {1, 1}}, false, "output_padding");
  check({.relu = true, .y_zp_u8 = 128}, false, "a Relu that clamps");
  check({.co = 8, .w_axis = 0}, false, "per-axis-0 weights");
}

}  // namespace
}  // namespace nfuse::passes_test
