// W8A16 (16-bit activations, 8-bit weights): fuse_qdq_conv / fuse_qdq_matmul turn 16-bit QDQ
// chains (default-domain opset-21 Q/DQ or ORT's "com.microsoft" ones) into nfuse.QLinearConv16 /
// nfuse.QLinearMatMul16; the fused graph matches the QDQ graph on ref within one output step;
// the cpu backend's kernels (qs16 GEMM, direct depthwise) equal ref bit for bit on awkward conv
// shapes and extreme values; and W8A16 is far more accurate than W8A8 on the same data.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>

#include "backends/ref/ref_kernel.h"
#include "backends/run_profile.h"
#include "ir/infer_shapes.h"
#include "kernels/cpu_features.h"
#include "passes/fuse_qdq_conv.h"
#include "passes/fuse_qdq_matmul.h"
#include "runtime/session.h"
#include "support/w8a16_graph.h"

namespace nfuse {
namespace {

using testing::W8A16GraphBuilder;
using testing::W8A16Spec;

constexpr uint32_t kSeed = 20261129;

int count_ops(const ir::Graph& g, const std::string& op, const std::string& domain = "") {
  int n = 0;
  for (const auto& node : g.nodes()) n += node->op_type == op && node->domain == domain;
  return n;
}

std::string describe(const W8A16Spec& s) {
  char buf[300];
  std::snprintf(buf, sizeof buf,
                "seed=%u n=%ld c=%ld co=%ld %ldx%ld k=%ld s=%ld p=%ld d=%ld g=%ld bits=%d x_u=%d y_u=%d "
                "contrib=%d pc=%d bias=%s relu=%d clamps=%d",
                kSeed, s.n, s.c, s.co, s.h, s.w, s.k, s.stride, s.pad, s.dilation, s.group, s.bits, s.x_unsigned,
                s.y_unsigned, s.contrib, s.per_channel, s.bias.c_str(), s.relu, s.relu_clamps);
  return buf;
}

// `fused_on_optimized` (optional): whether a QLinearConv16 / QLinearMatMul16 ran, and none of
// them on its reference kernel (read from the profile while the session, which owns the
// profiled nodes, is alive).
Result<std::vector<ir::Tensor>> run(std::unique_ptr<ir::Graph> g, const ir::Tensor& x, const char* backend,
                                    bool optimize, bool* fused_on_optimized = nullptr, int threads = 2) {
  runtime::SessionOptions so;
  so.backend = backend;
  so.optimize = optimize;
  so.threads = threads;
  NFUSE_ASSIGN_OR_RETURN(auto s, runtime::Session::create(std::move(g), so));
  backends::RunProfile profile;
  auto out = s->run({{"x", x}}, fused_on_optimized ? &profile : nullptr);
  if (fused_on_optimized) {
    bool fused = false, on_ref = false;
    for (const auto& t : profile.nodes) {
      if (t.node->domain == "nfuse" && (t.node->op_type == "QLinearConv16" || t.node->op_type == "QLinearMatMul16")) {
        fused = true;
        on_ref = on_ref || t.reference;
      }
    }
    *fused_on_optimized = fused && !on_ref;
  }
  return out;
}

// The pass fuses the chain; the fused graph's output is within one y step of the QDQ graph's.
void check_fusion(const W8A16Spec& s, bool conv, const std::string& fused_op) {
  SCOPED_TRACE(describe(s));
  auto before = conv ? W8A16GraphBuilder(s).conv() : W8A16GraphBuilder(s).matmul(5, 37, 19);
  auto after = conv ? W8A16GraphBuilder(s).conv() : W8A16GraphBuilder(s).matmul(5, 37, 19);
  ASSERT_TRUE(before && after);
  passes::PassLog log;
  Status st = conv ? passes::fuse_qdq_conv(*after, log) : passes::fuse_qdq_matmul(*after, log);
  ASSERT_TRUE(st.ok()) << st.to_string();
  ASSERT_TRUE(after->verify().ok());
  EXPECT_EQ(count_ops(*after, fused_op, "nfuse"), 1);
  EXPECT_EQ(count_ops(*after, conv ? "Conv" : "MatMul"), 0);
  ASSERT_EQ(log.size(), 1u);
  std::printf("  %s\n", log.lines()[0].c_str());
  const ir::Tensor x = testing::w8a16_input(*before, s.x_range, kSeed);
  const ir::Value* y_scale = nullptr;
  for (const auto& n : before->nodes())
    if (n->name == "dequant_y") y_scale = n->input(1);
  ASSERT_NE(y_scale, nullptr);
  const double step = y_scale->constant->data<float>()[0];
  auto e = run(std::move(before), x, "ref", false);
  auto g = run(std::move(after), x, "ref", false);
  ASSERT_TRUE(e.ok() && g.ok()) << e.status().to_string() << " " << g.status().to_string();
  int64_t differ = 0;
  const ir::Tensor &a = (*e)[0], &b = (*g)[0];
  ASSERT_EQ(a.dims(), b.dims());
  for (int64_t i = 0; i < a.numel(); ++i) {
    const double d = std::fabs(a.get_double(i) - b.get_double(i));
    ASSERT_LE(d, step * 1.0001) << "flat index " << i;
    differ += d > 0;
  }
  EXPECT_LE(differ * 50, a.numel()) << differ << " of " << a.numel() << " differ by one step";
}

TEST(Qdq16Fusion, ConvDefaultDomainOpset21) {
  check_fusion({}, true, "QLinearConv16");
  check_fusion({.x_unsigned = true, .y_unsigned = true, .bias = "float"}, true, "QLinearConv16");
  check_fusion({.per_channel = false, .bias = "none"}, true, "QLinearConv16");
  check_fusion({.relu = true}, true, "QLinearConv16");  // y_zp = -32768: Relu implied
}

TEST(Qdq16Fusion, ConvComMicrosoftDomain) {
  check_fusion({.contrib = true}, true, "QLinearConv16");
  check_fusion({.x_unsigned = true, .contrib = true, .relu = true}, true, "QLinearConv16");
}

TEST(Qdq16Fusion, MatMulBothDomains) {
  check_fusion({}, false, "QLinearMatMul16");
  check_fusion({.x_unsigned = true, .y_unsigned = true, .contrib = true}, false, "QLinearMatMul16");
}

// A Relu that clamps (y_zp in the middle of the range: a mixed-precision graph's int16 layer
// that absorbed its Relu) fuses as the op's output clamp, y_min = y_zp, within one step of the
// QDQ graph; a Clip with its quantized bounds. An 8-bit chain with a clamping Relu stays unfused.
TEST(Qdq16Fusion, ClampingReluFusesAsOutputClamp) {
  for (const bool u : {false, true}) {
    const W8A16Spec s{.y_unsigned = u, .relu = true, .relu_clamps = true};
    check_fusion(s, true, "QLinearConv16");
    auto g = W8A16GraphBuilder(s).conv();
    ASSERT_NE(g, nullptr);
    passes::PassLog log;
    ASSERT_TRUE(passes::fuse_qdq_conv(*g, log).ok());
    int found = 0;
    for (const auto& n : g->nodes()) {
      if (n->op_type != "QLinearConv16") continue;
      ++found;
      EXPECT_EQ(n->attrs.get_int("y_min", -1), u ? 32768 : 0);
      EXPECT_EQ(n->attrs.get_int("y_max", -1), u ? 65535 : 32767);
    }
    EXPECT_EQ(found, 1);
  }
  auto g8 = W8A16GraphBuilder({.bits = 8, .y_unsigned = true, .relu = true, .relu_clamps = true}).conv();
  ASSERT_NE(g8, nullptr);
  passes::PassLog log;
  ASSERT_TRUE(passes::fuse_qdq_conv(*g8, log).ok());
  EXPECT_EQ(count_ops(*g8, "QLinearConv"), 0);
}

// y_min / y_max out of y's type range, or crossed, are refused by shape inference.
TEST(Qdq16Fusion, OutputClampOutsideTheTypeIsRefused) {
  for (auto [lo, hi] : {std::pair<int64_t, int64_t>{-40000, 0}, {0, 40000}, {5, 4}}) {
    auto g = W8A16GraphBuilder({}).conv();
    ASSERT_NE(g, nullptr);
    passes::PassLog log;
    ASSERT_TRUE(passes::fuse_qdq_conv(*g, log).ok());
    for (auto& n : g->nodes()) {
      if (n->op_type != "QLinearConv16") continue;
      n->attrs.set("y_min", lo);
      n->attrs.set("y_max", hi);
    }
    const Status st = ir::infer_shapes(*g);
    EXPECT_FALSE(st.ok()) << lo << " " << hi;
    EXPECT_NE(st.message().find("y_min"), std::string::npos) << st.to_string();
  }
}

// The 8-bit path is unchanged: W8A8 chains still become the ONNX QLinearConv / QLinearMatMul.
TEST(Qdq16Fusion, EightBitChainsStillBecomeOnnxOps) {
  auto g = W8A16GraphBuilder({.bits = 8, .x_unsigned = true, .y_unsigned = true}).conv();
  ASSERT_NE(g, nullptr);
  passes::PassLog log;
  ASSERT_TRUE(passes::fuse_qdq_conv(*g, log).ok());
  EXPECT_EQ(count_ops(*g, "QLinearConv"), 1);
  EXPECT_EQ(count_ops(*g, "QLinearConv16", "nfuse"), 0);
}

// The default pipeline on cpu (qs16 kernels, not the reference fallback) equals ref bit for bit.
// extreme: 1 x alternates between the 16-bit extremes, 2 x is +32767 everywhere.
void check_cpu_vs_ref(const W8A16Spec& s, bool conv = true, int extreme = 0) {
  SCOPED_TRACE(describe(s) + " extreme=" + std::to_string(extreme));
  auto g1 = conv ? W8A16GraphBuilder(s).conv() : W8A16GraphBuilder(s).matmul(33, 300, 21);
  auto g2 = conv ? W8A16GraphBuilder(s).conv() : W8A16GraphBuilder(s).matmul(33, 300, 21);
  ASSERT_TRUE(g1 && g2);
  ir::Tensor x = testing::w8a16_input(*g1, s.x_range, kSeed);
  for (int64_t i = 0; extreme && i < x.numel(); ++i) {  // x saturates to the 16-bit extremes
    x.data<float>()[i] = (extreme == 2 || i % 3 == 0 ? 4.0f : -4.0f) * s.x_range;
  }
  bool fused_on_cpu = false;
  auto r = run(std::move(g1), x, "ref", true);
  auto c = run(std::move(g2), x, "cpu", true, &fused_on_cpu, 3);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_TRUE(fused_on_cpu) << "no W8A16 op ran on the cpu kernels";
  const ir::Tensor &a = (*r)[0], &b = (*c)[0];
  ASSERT_EQ(a.dims(), b.dims());
  for (int64_t i = 0; i < a.numel(); ++i) {
    ASSERT_EQ(a.data<float>()[i], b.data<float>()[i]) << "first mismatch at " << i;
  }
}

// Dense convs on every ISA variant this CPU runs (the AVX-512 VNNI build takes the weights-times-
// activations GEMM, the others the activations-times-weights one): 1x1 convs read in place with
// full 32-column panels and a tail, K long enough to be chunked, strided and padded windows.
TEST(Qdq16Cpu, DenseConvShapesOnEveryIsaBitExact) {
  for (kernels::Isa isa : {kernels::Isa::kAvx512, kernels::Isa::kAvx2Fma, kernels::Isa::kScalar}) {
    if (!kernels::isa_supported(isa)) continue;
    SCOPED_TRACE(kernels::isa_name(isa));
    kernels::ScopedIsaOverride force_isa(isa);
    check_cpu_vs_ref({.c = 40, .co = 19, .h = 9, .w = 8, .k = 1, .pad = 0});  // 72 columns: 2 panels + 8
    check_cpu_vs_ref({.c = 300, .co = 9, .h = 5, .w = 13, .k = 1, .pad = 0, .x_unsigned = true}, true, 1);
    check_cpu_vs_ref({.c = 7, .co = 12, .h = 17, .w = 23, .stride = 2, .pad = 1, .y_unsigned = true});
    check_cpu_vs_ref({.c = 64, .co = 20, .h = 6, .w = 6, .bias = "none", .w_min = true, .y_range = 2000.0f}, true,
                     2);  // every |w| = 128: K chunked so int32 partial sums cannot overflow
    // Padded 3x3 windows over output rows of 70 columns (W * X tiles of 32, 32 and 6 per row), an
    // odd channel count, dilation.
    check_cpu_vs_ref({.c = 9, .co = 19, .h = 7, .w = 70, .x_unsigned = true});
    check_cpu_vs_ref({.c = 12, .co = 8, .h = 9, .w = 40, .pad = 2, .dilation = 2, .y_unsigned = true}, true, 1);
    // A fused clamping Relu (y_min = y_zp) on both GEMM orientations, s16 and u16.
    check_cpu_vs_ref({.c = 40, .co = 19, .h = 9, .w = 8, .k = 1, .pad = 0, .relu = true, .relu_clamps = true});
    check_cpu_vs_ref(
        {.c = 7, .co = 12, .h = 17, .w = 23, .stride = 2, .y_unsigned = true, .relu = true, .relu_clamps = true});
  }
}

TEST(Qdq16Cpu, AwkwardConvShapesBitExact) {
  check_cpu_vs_ref({});
  check_cpu_vs_ref({.c = 3, .co = 5, .h = 7, .w = 9, .x_unsigned = true, .y_unsigned = true});
  check_cpu_vs_ref({.c = 8, .co = 17, .h = 5, .w = 6, .k = 1, .pad = 0, .bias = "none"});  // 1x1 in place
  check_cpu_vs_ref({.n = 2, .c = 4, .co = 31, .h = 13, .w = 10, .k = 5, .stride = 2, .pad = 2, .x_unsigned = true});
  check_cpu_vs_ref({.c = 6, .co = 9, .h = 8, .w = 8, .pad = 2, .dilation = 2, .group = 3, .contrib = true});
  check_cpu_vs_ref({.c = 16, .co = 16, .h = 11, .w = 7, .stride = 2, .group = 16, .relu = true});  // depthwise
  check_cpu_vs_ref({.c = 4, .co = 8, .h = 6, .w = 5, .group = 4, .x_unsigned = true, .per_channel = false});
  check_cpu_vs_ref({.c = 15, .co = 33, .h = 1, .w = 1, .k = 1, .pad = 0, .y_unsigned = true});
}

// x saturated to the 16-bit extremes with K = 64 * 9 = 576 (more than one 256-element K chunk of
// the GEMM). Random weights keep the sums moderate; accumulators beyond int32 (same-sign extreme
// products) are tested at kernel level (Qs16Gemm.ExtremeValuesOverflowInt32).
TEST(Qdq16Cpu, ExtremeInputsLongK) {
  check_cpu_vs_ref({.c = 64, .co = 20, .h = 6, .w = 6}, true, 1);
  check_cpu_vs_ref({.c = 64, .co = 20, .h = 6, .w = 6, .x_unsigned = true}, true, 1);
  check_cpu_vs_ref({}, false, 1);
}

// Every weight -128 and x at +32767: acc = 576 * 32767 * -128 (+ bias) ~ -2.4e9, beyond int32;
// y's range is wide enough that the outputs are not saturated.
TEST(Qdq16Cpu, AccumulatorBeyondInt32) {
  const W8A16Spec s{.c = 64, .co = 20, .h = 6, .w = 6, .bias = "none", .w_min = true, .y_range = 2000.0f};
  check_cpu_vs_ref(s, true, 2);
  // The outputs are not saturated (else a wrong accumulator could still give the same bytes).
  auto g = W8A16GraphBuilder(s).conv();
  ASSERT_NE(g, nullptr);
  ir::Tensor x = testing::w8a16_input(*g, s.x_range, kSeed);
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = 4.0f * s.x_range;
  auto y = run(std::move(g), x, "cpu", true);
  ASSERT_TRUE(y.ok()) << y.status().to_string();
  float lo = 0.0f;
  for (int64_t i = 0; i < (*y)[0].numel(); ++i) lo = std::min(lo, (*y)[0].data<float>()[i]);
  EXPECT_LT(lo, -500.0f);
  EXPECT_GT(lo, -1990.0f);
}

void check_depthwise_cases() {
  for (int64_t k : {3, 5})
    for (int64_t stride : {1, 2}) {
      check_cpu_vs_ref({.c = 6, .co = 6, .h = 9, .w = 300, .k = k, .stride = stride, .pad = k / 2, .group = 6});
      check_cpu_vs_ref({.c = 4,
                        .co = 8,
                        .h = 7,
                        .w = 13,
                        .k = k,
                        .stride = stride,
                        .pad = k,
                        .group = 4,
                        .x_unsigned = true,
                        .y_unsigned = true});
    }
  check_cpu_vs_ref({.c = 5, .co = 5, .h = 12, .w = 19, .pad = 2, .dilation = 2, .group = 5});
  // Planes narrower than 32 output columns run as one flat row (MobileNet's late layers: 14x14,
  // 7x7, stride 2 from 14 to 7, an odd height whose last row stride 2 never reads).
  check_cpu_vs_ref({.c = 6, .co = 6, .h = 7, .w = 7, .pad = 1, .group = 6});
  check_cpu_vs_ref({.c = 6, .co = 6, .h = 14, .w = 14, .stride = 2, .pad = 1, .group = 6, .x_unsigned = true});
  check_cpu_vs_ref({.c = 3, .co = 3, .h = 15, .w = 31, .k = 5, .stride = 2, .pad = 2, .group = 3});
  check_cpu_vs_ref({.c = 4, .co = 4, .h = 1, .w = 20, .k = 1, .group = 4, .y_unsigned = true});
  // A fused clamping Relu: the register loop's interior, its edges and the generic loop.
  check_cpu_vs_ref(
      {.c = 6, .co = 6, .h = 9, .w = 300, .k = 5, .pad = 2, .group = 6, .relu = true, .relu_clamps = true});
  check_cpu_vs_ref({.c = 4,
                    .co = 4,
                    .h = 7,
                    .w = 40,
                    .stride = 2,
                    .group = 4,
                    .x_unsigned = true,
                    .y_unsigned = true,
                    .relu = true,
                    .relu_clamps = true});
  check_cpu_vs_ref(
      {.c = 5, .co = 5, .h = 8, .w = 19, .pad = 2, .dilation = 2, .group = 5, .relu = true, .relu_clamps = true});
  check_cpu_vs_ref({.c = 8, .co = 8, .h = 6, .w = 520, .group = 8, .x_unsigned = true}, true, 1);
  check_cpu_vs_ref({.c = 8, .co = 8, .h = 6, .w = 40, .group = 8}, true, 2);
  check_cpu_vs_ref({.c = 5,
                    .co = 5,
                    .h = 6,
                    .w = 17,
                    .group = 5,
                    .bias = "float",
                    .w_min = true,
                    .y_range = 1e6f,
                    .bias_scale = 1e6f},
                   true, 2);
}

// Depthwise on the column-run loop: kernels 3 and 5, strides 1 and 2, pads past the window,
// dilation, narrow planes as one flat row, rows wider than one 256-column chunk, u16 and s16, channel multipliers,
// extreme inputs; and a float bias so large that its int64 value makes the channel's sum exceed int32 (those channels
// take the int64 accumulator, the zero-bias ones int32), outputs not saturated. On every ISA variant of the qs16-dwconv
// kernels this CPU runs.
TEST(Qdq16Cpu, DepthwiseColumnRunsBitExact) {
  for (kernels::Isa isa : {kernels::Isa::kAvx512, kernels::Isa::kAvx2Fma, kernels::Isa::kScalar}) {
    if (!kernels::isa_supported(isa)) continue;
    SCOPED_TRACE(kernels::isa_name(isa));
    kernels::ScopedIsaOverride force_isa(isa);
    check_depthwise_cases();
  }
}

TEST(Qdq16Cpu, MatMulBitExact) {
  check_cpu_vs_ref({}, false);
  check_cpu_vs_ref({.x_unsigned = true, .y_unsigned = true, .contrib = true}, false);
}

// Signal-to-noise ratio of y against the f32 Conv with the same (dequantized) weights and bias:
// what activation quantization costs. W8A16 must beat W8A8 by far (~48 dB in theory).
double snr_db(const ir::Tensor& ref, const ir::Tensor& got) {
  double s = 0, e = 0;
  for (int64_t i = 0; i < ref.numel(); ++i) {
    const double r = ref.get_double(i), d = got.get_double(i) - r;
    s += r * r;
    e += d * d;
  }
  return 10.0 * std::log10(s / std::max(e, 1e-30));
}

TEST(Qdq16Accuracy, W8A16ConvFarMoreAccurateThanW8A8) {
  double snr[2];
  for (int bits : {8, 16}) {
    W8A16Spec s{.c = 16, .co = 24, .h = 15, .w = 13, .bits = bits, .bias = "float"};
    auto g = W8A16GraphBuilder(s).conv();
    ASSERT_NE(g, nullptr);
    const ir::Tensor x = testing::w8a16_input(*g, s.x_range, kSeed);
    // The float reference: the same graph without the activation Q/DQ pairs.
    W8A16Spec fs = s;
    fs.float_acts = true;
    auto fref = W8A16GraphBuilder(fs).conv();
    ASSERT_NE(fref, nullptr);
    auto want = run(std::move(fref), x, "ref", false);
    auto got = run(std::move(g), x, "cpu", true);
    ASSERT_TRUE(want.ok()) << want.status().to_string();
    ASSERT_TRUE(got.ok()) << got.status().to_string();
    snr[bits == 16] = snr_db((*want)[0], (*got)[0]);
  }
  std::printf("[w8a16] conv 16->24 ch, 3x3: SNR vs f32 activations: W8A8 %.1f dB, W8A16 %.1f dB\n", snr[0], snr[1]);
  EXPECT_GT(snr[1], snr[0] + 30.0);
}

}  // namespace
}  // namespace nfuse
