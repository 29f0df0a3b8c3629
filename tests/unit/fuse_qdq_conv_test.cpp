#include "passes/fuse_qdq_conv.h"
#include "backends/ref/interpreter.h"

#include <cstring>

#include "pass_test_util.h"

namespace nfuse::passes_test {
namespace {

constexpr int kU8 = ::onnx::TensorProto::UINT8;
constexpr int kI8 = ::onnx::TensorProto::INT8;
constexpr int kI32 = ::onnx::TensorProto::INT32;

struct Spec {
  int64_t c = 8, co = 16, k = 3;
  bool x_signed = false;
  bool per_channel = false;
  std::string bias = "float";   // "none", "float", "int32" (DQ with scale x_scale * w_scale), "int32_off" (other scale)
  std::string act = "none";     // "none", "Relu", "Relu6"
  int64_t y_zp = 0;             // in the output type (u8 unless x_signed)
  float y_scale = 0.05f;
  bool w_constant = true;
  int64_t w_zp = 0;
  int64_t w_axis = 0;
  bool conv_output_used_twice = false;
  bool x_dq_used_twice = false;
};

constexpr float kXScale = 0.02f;

std::vector<float> w_scales(const Spec& s) {
  std::vector<float> v;
  for (int64_t i = 0; i < (s.per_channel ? s.co : 1); ++i) v.push_back(0.004f + 0.0005f * static_cast<float>(i % 7));
  return v;
}

// x (f32) -> Q -> DQ -> Conv(DQ(w), bias) [-> act] -> Q(y_scale, y_zp) -> DQ -> z (f32)
OnnxBuilder build(const Spec& s) {
  OnnxBuilder b(17);
  const int qx = s.x_signed ? kI8 : kU8;
  b.input("x", kF, {1, s.c, 9, 8});
  b.initializer("x_scale", {}, {kXScale});
  int_initializer(b, "x_zp", qx, {}, {s.x_signed ? 3 : 120});
  b.node("QuantizeLinear", {"x", "x_scale", "x_zp"}, {"x_q"}, "qx");
  b.node("DequantizeLinear", {"x_q", "x_scale", "x_zp"}, {"x_dq"}, "dqx");
  const std::vector<int64_t> wd = {s.co, s.c, s.k, s.k};
  const std::vector<float> ws = w_scales(s);
  const std::vector<int64_t> wsd = s.per_channel ? std::vector<int64_t>{s.co} : std::vector<int64_t>{};
  b.initializer("w_scale", wsd, ws);
  int_initializer(b, "w_zp", kI8, wsd, std::vector<int64_t>(ws.size(), s.w_zp));
  if (s.w_constant) {
    std::vector<int64_t> w;
    std::mt19937 rng(kSeed);
    std::uniform_int_distribution<int> d(-127, 127);
    for (int64_t i = 0; i < numel(wd); ++i) w.push_back(d(rng));
    int_initializer(b, "w_q", kI8, wd, w);
  } else {
    b.input("w", kF, wd);
    b.node("QuantizeLinear", {"w", "w_scale", "w_zp"}, {"w_q"}, "qw");
  }
  auto& dqw = b.node("DequantizeLinear", {"w_q", "w_scale", "w_zp"}, {"w_dq"}, "dqw");
  if (s.per_channel) set_int_attr(dqw, "axis", s.w_axis);
  std::vector<std::string> conv_in = {"x_dq", "w_dq"};
  if (s.bias == "float") {
    random_initializer(b, "bias", {s.co}, 7, -0.5f, 0.5f);
    conv_in.push_back("bias");
  } else if (s.bias == "int32" || s.bias == "int32_off") {
    std::vector<int64_t> bq;
    for (int64_t i = 0; i < s.co; ++i) bq.push_back((i * 7919) % 4001 - 2000);
    std::vector<float> bs;
    for (float w : ws) bs.push_back(kXScale * w * (s.bias == "int32" ? 1.0f : 1.5f));
    int_initializer(b, "bias_q", kI32, {s.co}, bq);
    b.initializer("bias_scale", s.per_channel ? std::vector<int64_t>{s.co} : std::vector<int64_t>{}, bs);
    auto& dqb = b.node("DequantizeLinear", {"bias_q", "bias_scale"}, {"bias_dq"}, "dqb");
    if (s.per_channel) set_int_attr(dqb, "axis", 0);
    conv_in.push_back("bias_dq");
  }
  auto& conv = b.node("Conv", conv_in, {"c"}, "conv");
  set_ints_attr(conv, "pads", {s.k / 2, s.k / 2, s.k / 2, s.k / 2});
  std::string y = "c";
  if (s.act == "Relu") {
    b.node("Relu", {"c"}, {"a"}, "act");
    y = "a";
  } else if (s.act == "Relu6") {
    b.initializer("lo", {}, {0.0f});
    b.initializer("hi", {}, {6.0f});
    b.node("Clip", {"c", "lo", "hi"}, {"a"}, "act");
    y = "a";
  }
  if (s.act == "HardSwish" || s.act == "Sigmoid") {
    b.node(s.act, {"c"}, {"a"}, "act");
    y = "a";
  } else if (s.act == "equalized_hardswish") {
    // Activation equalization's per-channel Mul, then HardSwish as x * Clip(x + 3, 0, 6) / 6.
    std::vector<float> eq;
    for (int64_t i = 0; i < s.co; ++i) eq.push_back(0.5f + 0.25f * static_cast<float>(i % 5));
    b.initializer("eq", {1, s.co, 1, 1}, eq);
    b.initializer("three", {}, {3.0f});
    b.initializer("zero", {}, {0.0f});
    b.initializer("six", {}, {6.0f});
    b.node("Mul", {"c", "eq"}, {"m"}, "eq_mul");
    b.node("Add", {"m", "three"}, {"m3"}, "add3");
    b.node("Clip", {"m3", "zero", "six"}, {"cl"}, "clip");
    b.node("Mul", {"m", "cl"}, {"mc"}, "mul");
    b.node("Div", {"mc", "six"}, {"a"}, "div6");
    y = "a";
  }
  b.initializer("y_scale", {}, {s.y_scale});
  int_initializer(b, "y_zp", s.x_signed ? kI8 : kU8, {}, {s.y_zp});
  b.node("QuantizeLinear", {y, "y_scale", "y_zp"}, {"y_q"}, "qy");
  b.node("DequantizeLinear", {"y_q", "y_scale", "y_zp"}, {"z"}, "dqy");
  out(b, "z");
  if (s.conv_output_used_twice) {
    b.node("Sigmoid", {"c"}, {"side"}, "side");
    out(b, "side");
  }
  if (s.x_dq_used_twice) {
    b.node("Relu", {"x_dq"}, {"side_x"}, "side_x");
    out(b, "side_x");
  }
  return b;
}

// Runs the pass and compares the ref outputs before and after: within one output quantization
// step (y_scale) everywhere, identical for most elements. Returns the rewritten graph.
std::unique_ptr<ir::Graph> check(const Spec& s, bool expect_fused, const std::string& what,
                                 const char* fused_op = "QLinearConv") {
  SCOPED_TRACE(what);
  const OnnxBuilder b = build(s);
  auto before = load(b);
  auto after = load(b);
  if (!before || !after) return nullptr;
  PassLog log;
  Status st = fuse_qdq_conv(*after, log);
  if (st.ok()) st = fuse_qdq_conv_region(*after, log);
  EXPECT_TRUE(st.ok()) << st.to_string();
  Status v = after->verify();
  EXPECT_TRUE(v.ok()) << v.to_string();
  EXPECT_EQ(count_ops(*after, fused_op), expect_fused ? 1 : 0);
  EXPECT_EQ(count_ops(*after, "Conv"), expect_fused ? 0 : 1);
  EXPECT_EQ(log.size(), expect_fused ? 1u : 0u);
  const std::vector<ir::Tensor> inputs = random_inputs(*before, kSeed);
  auto expected = backends::ref::interpret_graph(*before, inputs);
  auto got = backends::ref::interpret_graph(*after, inputs);
  EXPECT_TRUE(expected.ok() && got.ok());
  if (!expected.ok() || !got.ok()) return nullptr;
  const ir::Tensor& e = (*expected)[0];
  const ir::Tensor& g = (*got)[0];
  EXPECT_EQ(e.dims(), g.dims());
  int64_t differ = 0;
  for (int64_t i = 0; i < e.numel(); ++i) {
    const double d = std::fabs(e.get_double(i) - g.get_double(i));
    EXPECT_LE(d, s.y_scale * 1.0001) << "flat index " << i;
    if (d > 0) ++differ;
    if (d > s.y_scale * 1.0001) break;
  }
  EXPECT_LE(differ * 50, e.numel()) << differ << " of " << e.numel() << " outputs differ by one step";
  return after;
}

TEST(FuseQdqConv, PerTensorFloatBias) { check({}, true, "u8, per-tensor, float bias"); }

TEST(FuseQdqConv, PerChannelInt32Bias) {
  auto g = check({.x_signed = true, .per_channel = true, .bias = "int32"}, true, "s8, per-channel, int32 bias");
  ASSERT_NE(g, nullptr);
  // The int32 bias initializer itself becomes B.
  const ir::Node* q = find_op(*g, "QLinearConv");
  ASSERT_NE(q, nullptr);
  ASSERT_EQ(q->num_inputs(), 9);
  EXPECT_EQ(q->input(8)->name, "bias_q");
  EXPECT_EQ(count_ops(*g, "DequantizeLinear"), 1);  // dqx, dqw and dqb went; the output DQ stays
}

TEST(FuseQdqConv, BiasVariants) {
  check({.bias = "none"}, true, "no bias");
  check({.per_channel = true, .bias = "int32_off"}, true, "int32 bias with another scale: requantized");
  check({.k = 1}, true, "1x1");
}

TEST(FuseQdqConv, ImpliedActivations) {
  check({.act = "Relu"}, true, "Relu, u8 y_zp 0");
  check({.act = "Relu6", .y_scale = 6.0f / 255.0f}, true, "Relu6 over [0, 6] u8");
  check({.x_signed = true, .act = "Relu", .y_zp = -128}, true, "Relu, s8 y_zp -128");
}

// An activation the output range does not imply is no QLinearConv (no clamp attribute is
// invented); it runs as the one step of a QLinearConvRegion.
TEST(FuseQdqConv, ActivationsThatClampBecomeRegions) {
  check({.act = "Relu", .y_zp = 128}, true, "Relu with u8 y_zp 128", "QLinearConvRegion");
  check({.x_signed = true, .act = "Relu", .y_zp = 0}, true, "Relu with s8 y_zp 0", "QLinearConvRegion");
  check({.act = "Relu6", .y_scale = 0.05f}, true, "Relu6 narrower than the range", "QLinearConvRegion");
}

TEST(FuseQdqConv, ConditionsNotMet) {
  check({.w_constant = false}, false, "weights not constant");
  check({.w_zp = 1}, false, "w_zp != 0");
  check({.c = 16, .per_channel = true, .w_axis = 1}, false, "per-axis scale on axis 1");
  check({.conv_output_used_twice = true}, false, "conv output with a second float consumer");
}

// A Conv whose float output runs through an element-wise region before its QuantizeLinear (what
// quantization writes where the Conv absorbed its activation) becomes nfuse.QLinearConvRegion:
// every node of the region goes, and the ref kernels give the QDQ graph's output within a step.
TEST(FuseQdqConv, RegionAfterConv) {
  auto g = check({.per_channel = true, .bias = "int32", .act = "equalized_hardswish", .y_zp = 10, .y_scale = 0.02f},
                 true, "u8, equalized HardSwish decomposed", "QLinearConvRegion");
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(count_ops(*g, "Mul") + count_ops(*g, "Add") + count_ops(*g, "Clip") + count_ops(*g, "Div"), 0);
  const ir::Node* f = find_op(*g, "QLinearConvRegion");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->domain, "nfuse");
  EXPECT_EQ(f->attrs.get_strings("ops").size(), 5u);
  EXPECT_EQ(f->num_inputs(), 9 + 3);  // the per-channel Mul's constant, 3 and 6 (Clip's bounds are params)
  check({.x_signed = true, .bias = "none", .act = "HardSwish", .y_zp = -100, .y_scale = 0.02f}, true,
        "s8, HardSwish op, no bias (B of zeros)", "QLinearConvRegion");
  check({.k = 1, .act = "Sigmoid", .y_scale = 1.0f / 255.0f}, true, "1x1, Sigmoid", "QLinearConvRegion");
  // The region's input read by something else too: the Conv's output would need its own Q/DQ.
  check({.act = "HardSwish", .conv_output_used_twice = true}, false, "conv output also read outside the region",
        "QLinearConvRegion");
}

TEST(FuseQdqConv, SharedInputDequantizeStays) {
  auto g = check({.x_dq_used_twice = true}, true, "x's DQ has another consumer");
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(count_ops(*g, "Relu"), 1);
  const ir::Node* dq = nullptr;
  for (const auto& n : g->nodes())
    if (n->name == "dqx") dq = n.get();
  EXPECT_NE(dq, nullptr);
}

// In the default pipeline the pass runs before fuse_activation (which would take the Relu), and
// the fused graph runs bit-exactly on cpu (QLinearConv's int8 kernel) and ref.
TEST(FuseQdqConv, DefaultPipelineAndCpuBackend) {
  const OnnxBuilder b = build({.per_channel = true, .act = "Relu"});
  auto g = load(b);
  ASSERT_NE(g, nullptr);
  OptimizeOptions opt;
  opt.evaluator = ref_evaluator();
  opt.verify_each = true;
  auto report = optimize(*g, opt);
  ASSERT_TRUE(report.ok()) << report.status().to_string();
  EXPECT_EQ(report->num_changes("fuse_qdq_conv"), 1u);
  EXPECT_EQ(count_ops(*g, "QLinearConv"), 1);
  const std::vector<ir::Tensor> inputs = random_inputs(*g, kSeed);
  runtime::NamedTensors named;
  for (size_t i = 0; i < inputs.size(); ++i) named.push_back({g->inputs()[i]->name, inputs[i]});
  std::vector<ir::Tensor> outs[2];
  int i = 0;
  for (const char* backend : {"ref", "cpu"}) {
    runtime::SessionOptions so;
    so.backend = backend;
    so.threads = 2;
    auto s = runtime::Session::create(load(b), so);
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    auto r = (*s)->run(named);
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    outs[i++] = *r;
  }
  ASSERT_EQ(outs[0][0].numel(), outs[1][0].numel());
  for (int64_t k = 0; k < outs[0][0].numel(); ++k) ASSERT_EQ(outs[0][0].get_double(k), outs[1][0].get_double(k)) << k;
}

}  // namespace
}  // namespace nfuse::passes_test
