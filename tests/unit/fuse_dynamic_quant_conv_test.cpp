// fuse_dynamic_quant on convolutions: ONNX Runtime's DynamicQuantizeLinear -> ConvInteger -> Cast
// -> Mul(Mul(x_scale, w_scale)) [-> Add bias [1, M, 1, 1]] becomes one nfuse.DynamicQuantConv,
// and the cpu backend runs it on the int8 GEMM bit-exactly with the reference interpreter on the
// unfused graph: u8 and s8 weights, per-tensor and per-channel zero points and scales, 3x3 with
// padding and stride, grouped, 1x1 (the direct path), 1-D (lifted to 2-D), depthwise (the f32
// depthwise kernel on exact integers, small planes through the padded copy, large ones mapped in
// place, whole or in row strips), all-zero input; s8 weights with zero points of 0 (the W * X
// path with its float epilogue, where the CPU has the kernel) strided, grouped, 1x1 and 1-D; Relu,
// Clip and Sigmoid after the pattern fused into the node on every path.
#include "passes/fuse_dynamic_quant.h"

#include "kernels/cpu_features.h"
#include "pass_test_util.h"
#include "support/context_round_trip.h"

namespace nfuse::passes_test {
namespace {

constexpr int kU8 = ::onnx::TensorProto::UINT8;
constexpr int kI8 = ::onnx::TensorProto::INT8;

struct ConvVariant {
  int weight_type = kU8;
  bool per_channel = false;  // zero point [M] and scale [M, 1, 1]
  bool zero_zp = false;
  bool bias = true;
  int64_t c = 5, m = 6, kernel = 3, stride = 1, pad = 1, group = 1;
  int64_t h = 9, w = 11;  // x's spatial size (w alone when one_d)
  bool one_d = false;
  bool scale_on_last_axis = false;  // scale [M]: broadcasts along W, not M, so no fusion
  std::string activation = "";      // "Relu", "Clip" (0..6) or "Sigmoid" after the pattern: fused too
};

std::vector<int64_t> spatial(const ConvVariant& v, int64_t h, int64_t w) {
  return v.one_d ? std::vector<int64_t>{w} : std::vector<int64_t>{h, w};
}

// [1, M] + ones for the spatial axes: a per-channel operand as the graph broadcasts it.
std::vector<int64_t> channel_dims(const ConvVariant& v, bool batch) {
  std::vector<int64_t> d = batch ? std::vector<int64_t>{1, v.m} : std::vector<int64_t>{v.m};
  d.insert(d.end(), v.one_d ? 1 : 2, 1);
  return d;
}

OnnxBuilder conv_model(const ConvVariant& v) {
  OnnxBuilder b;
  std::vector<int64_t> xd{2, v.c};
  for (int64_t s : spatial(v, v.h, v.w)) xd.push_back(s);
  b.input("x", kF, xd);
  b.node("DynamicQuantizeLinear", {"x"}, {"xq", "xs", "xzp"}, "dq");
  std::vector<int64_t> wd{v.m, v.c / v.group};
  for (int64_t s : spatial(v, v.kernel, v.kernel)) wd.push_back(s);
  std::vector<int64_t> w(static_cast<size_t>(numel(wd)));
  std::mt19937 rng(17);
  const bool u8 = v.weight_type == kU8;
  std::uniform_int_distribution<int> dist(u8 ? 0 : -127, u8 ? 255 : 127);
  for (int64_t& e : w) e = dist(rng);
  int_initializer(b, "w", v.weight_type, wd, w);
  std::vector<int64_t> zp(static_cast<size_t>(v.per_channel ? v.m : 1));
  for (int64_t& z : zp) z = v.zero_zp ? 0 : dist(rng) / 3;
  int_initializer(b, "wzp", v.weight_type, v.per_channel ? std::vector<int64_t>{v.m} : std::vector<int64_t>{}, zp);
  const std::vector<int64_t> scale_dims = v.scale_on_last_axis ? std::vector<int64_t>{v.m}
                                          : v.per_channel      ? channel_dims(v, false)
                                                               : std::vector<int64_t>{};
  b.initializer("ws", scale_dims, random_values(v.per_channel || v.scale_on_last_axis ? v.m : 1, 3, 0.001f, 0.01f));
  auto& conv = b.node("ConvInteger", {"xq", "w", "xzp", "wzp"}, {"acc"}, "conv");
  const size_t rank = v.one_d ? 1 : 2;
  set_ints_attr(conv, "strides", std::vector<int64_t>(rank, v.stride));
  set_ints_attr(conv, "pads", std::vector<int64_t>(2 * rank, v.pad));
  if (v.group > 1) set_int_attr(conv, "group", v.group);
  set_int_attr(b.node("Cast", {"acc"}, {"accf"}, "cast"), "to", kF);
  b.node("Mul", {"xs", "ws"}, {"s"}, "scales");
  b.node("Mul", {"accf", "s"}, {v.bias ? "scaled" : v.activation.empty() ? "y" : "pre"}, "mul");
  const std::string y = v.activation.empty() ? "y" : "pre";
  if (v.bias) {
    random_initializer(b, "b", channel_dims(v, true), 5);
    b.node("Add", {"scaled", "b"}, {y}, "add");
  }
  if (v.activation == "Clip") {
    b.initializer("lo", {}, {0.0f});
    b.initializer("hi", {}, {6.0f});
    b.node("Clip", {y, "lo", "hi"}, {"y"}, "act");
  } else if (!v.activation.empty()) {
    b.node(v.activation, {y}, {"y"}, "act");
  }
  out(b, "y");
  return b;
}

const ConvVariant kVariants[] = {
    {},                                     // u8, per tensor, 3x3 pad 1
    {.weight_type = kI8, .zero_zp = true},  // quantize_dynamic's default
    {.weight_type = kI8, .per_channel = true, .bias = false, .stride = 2},
    {.weight_type = kU8, .per_channel = true, .c = 6, .group = 2},  // grouped
    {.weight_type = kI8, .c = 7, .m = 9, .kernel = 1, .pad = 0},    // 1x1: the direct path
    {.weight_type = kU8, .per_channel = true, .kernel = 5, .stride = 3, .pad = 2, .one_d = true},
    {.weight_type = kU8, .per_channel = true, .c = 6, .m = 6, .group = 6},                 // depthwise 3x3
    {.weight_type = kI8, .c = 8, .m = 8, .kernel = 5, .stride = 2, .pad = 2, .group = 8},  // depthwise 5x5 s2
    // Depthwise planes too large for the padded copy, quantized in place into the scratch plane:
    // 4 planes are row strips at 2 threads, whole planes at 1; 16 planes are whole planes on both.
    {.weight_type = kU8, .per_channel = true, .c = 2, .m = 2, .group = 2, .h = 120, .w = 97},
    {.weight_type = kI8,
     .c = 3,
     .m = 3,
     .kernel = 5,
     .stride = 2,
     .pad = 2,
     .group = 3,
     .h = 131,
     .w = 100,
     .activation = "Clip"},
    {.weight_type = kU8, .c = 16, .m = 16, .stride = 2, .group = 16, .h = 112, .w = 112, .activation = "Relu"},
    // s8 weights with zero points of 0: the W * X path where the CPU has it (AVX-512 VNNI).
    {.weight_type = kI8, .per_channel = true, .zero_zp = true, .c = 6, .m = 26, .stride = 2, .group = 2},
    {.weight_type = kI8, .zero_zp = true, .c = 16, .m = 20, .kernel = 1, .pad = 0},
    {.weight_type = kI8, .per_channel = true, .zero_zp = true, .kernel = 5, .stride = 3, .pad = 2, .one_d = true},
    // Activations fused into the node: Relu / Clip as the epilogue's clamp (exact), on each path.
    {.weight_type = kI8, .zero_zp = true, .activation = "Clip"},
    {.weight_type = kU8, .c = 16, .m = 20, .kernel = 1, .pad = 0, .activation = "Relu"},
    {.weight_type = kU8, .per_channel = true, .c = 6, .m = 6, .group = 6, .activation = "Clip"},
};
// Not bit-exact (the cpu Sigmoid is a polynomial): fused, on the cpu kernel, within tolerance.
const ConvVariant kSigmoidVariant{.weight_type = kI8, .zero_zp = true, .activation = "Sigmoid"};

TEST(FuseDynamicQuantConv, EveryWeightFormFusesAndRunsOnTheCpuKernel) {
  for (size_t i = 0; i <= std::size(kVariants); ++i) {
    const ConvVariant& v = i < std::size(kVariants) ? kVariants[i] : kSigmoidVariant;
    const std::string what = "variant " + std::to_string(i);
    std::unique_ptr<ir::Graph> after;
    const auto lines = check_pass(conv_model(v), fuse_dynamic_quant, what, &after);
    ASSERT_TRUE(after) << what;
    EXPECT_EQ(count_ops(*after, "DynamicQuantConv"), 1) << what;
    for (const char* gone : {"DynamicQuantizeLinear", "ConvInteger", "Cast", "Mul", "Add"})
      EXPECT_EQ(count_ops(*after, gone), 0) << what << ": " << gone << " left";
    ASSERT_FALSE(lines.empty()) << what;

    const PipelineRun r = run_pipeline_against_ref(conv_model(v), "cpu", what);
    ASSERT_TRUE(r.session) << what;
    EXPECT_EQ(count_ops(r.session->graph(), "DynamicQuantConv"), 1) << what;
    if (!v.activation.empty()) {
      EXPECT_EQ(count_ops(r.session->graph(), v.activation), 0) << what << ": not fused";
    }
    EXPECT_TRUE(r.reference_nodes.empty()) << what << ": " << r.reference_nodes.front();
  }
}

TEST(FuseDynamicQuantConv, TheCpuKernelIsBitExactWithTheUnfusedGraph) {
  for (size_t vi = 0; vi < std::size(kVariants); ++vi) {
    const ConvVariant& v = kVariants[vi];
    auto reference = load(conv_model(v));
    ASSERT_TRUE(reference);
    runtime::SessionOptions o;
    o.backend = "cpu";
    for (int threads : {1, 2}) {
      o.threads = threads;
      auto s = runtime::Session::create(load(conv_model(v)), o);
      ASSERT_TRUE(s.ok()) << s.status().to_string();
      for (uint32_t seed : {1u, 2u, 3u}) {
        const std::string what =
            "variant " + std::to_string(vi) + ", threads " + std::to_string(threads) + ", seed " + std::to_string(seed);
        ir::Tensor x = ir::Tensor::allocate(ir::DType::kF32, reference->inputs()[0]->type.shape.static_dims().value());
        // seed 2: all positive (zero point 0); seed 3: all zero (scale 0).
        const std::vector<float> r = random_values(x.numel(), seed,
                                                   seed == 3   ? 0.0f
                                                   : seed == 2 ? 0.5f
                                                               : -3.0f,
                                                   seed == 3 ? 0.0f : 5.0f);
        std::copy(r.begin(), r.end(), x.data<float>());
        auto expected = backends::ref::interpret_graph(*reference, {x});
        ASSERT_TRUE(expected.ok()) << what << ": " << expected.status().to_string();
        auto got = (*s)->run({{"x", x}});
        ASSERT_TRUE(got.ok()) << what << ": " << got.status().to_string();
        ASSERT_EQ((*got)[0].dims(), (*expected)[0].dims()) << what;
        for (int64_t i = 0; i < (*expected)[0].numel(); ++i)
          ASSERT_EQ((*got)[0].data<float>()[i], (*expected)[0].data<float>()[i]) << what << ", element " << i;
      }
    }
  }
}

TEST(FuseDynamicQuantConv, AScaleThatBroadcastsAlongWidthIsNotFused) {
  const ConvVariant v{.per_channel = true, .m = 11, .scale_on_last_axis = true};  // output width 11
  OnnxBuilder b = conv_model(v);
  auto g = load(b);
  ASSERT_TRUE(g);
  passes::PassLog log;
  ASSERT_TRUE(fuse_dynamic_quant(*g, log).ok());
  EXPECT_TRUE(log.empty());
  EXPECT_EQ(count_ops(*g, "ConvInteger"), 1);
}

// A context binary of the fused graph reads every prepacked buffer (panels, column sums, the
// depthwise path's centred weights) from the file: W * X (where the CPU has it) and X * W, u8 and
// s8, grouped, depthwise.
TEST(FuseDynamicQuantConv, ContextBinariesReadThePackedWeights) {
  for (size_t vi : {size_t{0}, size_t{1}, size_t{3}, size_t{6}}) {
    const ConvVariant& v = kVariants[vi];
    std::unique_ptr<ir::Graph> g = load(conv_model(v));
    ASSERT_TRUE(g);
    ir::Tensor x = ir::Tensor::allocate(ir::DType::kF32, g->inputs()[0]->type.shape.static_dims().value());
    const std::vector<float> r = random_values(x.numel(), 5, -3.0f, 5.0f);
    std::copy(r.begin(), r.end(), x.data<float>());
    const bool depthwise = v.group == v.m && v.group > 1;
    testing::expect_packed_round_trip({"dynconv" + std::to_string(vi), load(conv_model(v)), {{"x", x}}}, "cpu",
                                      depthwise ? std::vector<std::string>{"q8.dyn.dw.centered|"}
                                                : std::vector<std::string>{"q8.dyn.colsum|", "q8.dynconv."});
    // AVX2 has no W * X kernel: the X * W panels (on NEON the first round already packed those).
    if (depthwise || !kernels::isa_supported(kernels::Isa::kAvx2Fma)) continue;
    kernels::ScopedIsaOverride avx2(kernels::Isa::kAvx2Fma);
    testing::expect_packed_round_trip({"dynconv_xw" + std::to_string(vi), std::move(g), {{"x", x}}}, "cpu",
                                      {"q8.dyn.colsum|", "q8.dynconv.gemm."});
  }
}

}  // namespace
}  // namespace nfuse::passes_test
