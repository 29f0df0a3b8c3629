// Activation equalization keeps the float function, gives every channel of each rescaled tensor
// a share of the u8 range, finds each kind of pair (Conv -> depthwise, Conv -> element-wise
// region, region -> depthwise) and lowers the int8 error of a network whose channels differ in
// scale by 256x; the region it scales inside becomes one table per channel.
#include <gtest/gtest.h>

#include <cmath>

#include "ir/graph_copy.h"
#include "pass_test_util.h"
#include "quant/activation_equalize.h"
#include "quant/metrics.h"
#include "quant/quantize_graph.h"
#include "runtime/session.h"

namespace nfuse::passes_test {
namespace {

constexpr int64_t kC = 8;

void set_group(::onnx::NodeProto& n, int64_t g) {
  auto* a = n.add_attribute();
  a->set_name("group");
  a->set_type(::onnx::AttributeProto::INT);
  a->set_i(g);
}

// x -> conv1 (channel c scaled by 4^(c%4 - 2)) -> hardswish as Add/Clip/Mul/Div -> affine
// (scalar Mul, Add) -> dw1 (depthwise, c scaled back) -> Relu -> dw2 (depthwise) -> conv3 -> y.
// `side_output`: conv1's output is also a graph output (no pair may rescale it then).
std::unique_ptr<ir::Graph> network(bool side_output = false) {
  OnnxBuilder b;
  b.input("x", kF, {-1, 3, 9, 9});
  std::vector<float> w1 = random_values(kC * 27, kSeed, -0.5f, 0.5f);
  std::vector<float> wd = random_values(kC * 9, kSeed + 2, -0.5f, 0.5f);
  for (int64_t c = 0; c < kC; ++c) {
    const float s = std::pow(4.0f, static_cast<float>(c % 4 - 2));
    for (int64_t i = 0; i < 27; ++i) w1[static_cast<size_t>(c * 27 + i)] *= s;
    for (int64_t i = 0; i < 9; ++i) wd[static_cast<size_t>(c * 9 + i)] /= s;
  }
  b.initializer("w1", {kC, 3, 3, 3}, w1);
  random_initializer(b, "b1", {kC}, kSeed + 1, -0.1f, 0.1f);
  b.initializer("wd1", {kC, 1, 3, 3}, wd);
  random_initializer(b, "bd1", {kC}, kSeed + 3, -0.1f, 0.1f);
  random_initializer(b, "wd2", {kC, 1, 3, 3}, kSeed + 4, -0.5f, 0.5f);
  random_initializer(b, "w3", {4, kC, 1, 1}, kSeed + 5, -0.5f, 0.5f);
  b.initializer("three", {}, {3.0f});
  b.initializer("zero", {}, {0.0f});
  b.initializer("six", {}, {6.0f});
  b.initializer("gain", {}, {0.7f});
  b.initializer("shift", {}, {-0.2f});
  set_ints_attr(b.node("Conv", {"x", "w1", "b1"}, {"c1"}, "conv1"), "pads", {1, 1, 1, 1});
  b.node("Add", {"c1", "three"}, {"h1"}, "hs_add");
  b.node("Clip", {"h1", "zero", "six"}, {"h2"}, "hs_clip");
  b.node("Mul", {"c1", "h2"}, {"h3"}, "hs_mul");
  b.node("Div", {"h3", "six"}, {"h4"}, "hs_div");
  b.node("Mul", {"h4", "gain"}, {"h5"}, "affine_mul");
  b.node("Add", {"h5", "shift"}, {"h6"}, "affine_add");
  auto& d1 = b.node("Conv", {"h6", "wd1", "bd1"}, {"d1"}, "dw1");
  set_ints_attr(d1, "pads", {1, 1, 1, 1});
  set_group(d1, kC);
  b.node("Relu", {"d1"}, {"r1"}, "relu1");
  auto& d2 = b.node("Conv", {"r1", "wd2"}, {"d2"}, "dw2");
  set_ints_attr(d2, "pads", {1, 1, 1, 1});
  set_group(d2, kC);
  b.node("Conv", {"d2", "w3"}, {"y"}, "conv3");
  out(b, "y");
  if (side_output) out(b, "c1");
  return load(b);
}

std::vector<ir::Tensor> batches(uint32_t seed, int count) {
  std::vector<ir::Tensor> out;
  for (int i = 0; i < count; ++i) {
    ir::Tensor t = ir::Tensor::allocate(ir::DType::kF32, {2, 3, 9, 9});
    std::vector<float> v = random_values(t.numel(), seed + static_cast<uint32_t>(i), -2.0f, 2.0f);
    std::copy(v.begin(), v.end(), t.data<float>());
    out.push_back(t);
  }
  return out;
}

std::vector<ir::Tensor> run(const ir::Graph& g, const std::vector<ir::Tensor>& in, bool optimize) {
  auto r = quant::run_output0(g, in, optimize);
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  return r.ok() ? *r : std::vector<ir::Tensor>{};
}

quant::ChannelRanges ranges_of(const ir::Graph& g, const std::string& name, const std::vector<ir::Tensor>& in) {
  std::map<std::string, size_t> index;
  auto copy = quant::with_outputs(g, {name}, &index);
  EXPECT_TRUE(copy.ok());
  quant::ChannelRanges r;
  if (!copy.ok()) return r;
  runtime::SessionOptions so;
  so.backend = "cpu";
  so.optimize = false;
  auto s = runtime::Session::create(std::move(*copy), so);
  EXPECT_TRUE(s.ok()) << s.status().to_string();
  for (const auto& b : in) {
    auto outs = (*s)->run({{"x", b}});
    EXPECT_TRUE(outs.ok());
    EXPECT_TRUE(r.update((*outs)[index.at(name)]).ok());
  }
  return r;
}

// The smallest channel span over the tensor's span.
double worst_channel_share(const quant::ChannelRanges& r) {
  float lo = 0.0f, hi = 0.0f;
  for (size_t c = 0; c < r.lo.size(); ++c) {
    lo = std::min(lo, r.lo[c]);
    hi = std::max(hi, r.hi[c]);
  }
  double worst = 1.0;
  for (size_t c = 0; c < r.lo.size(); ++c) worst = std::min(worst, static_cast<double>(r.hi[c] - r.lo[c]) / (hi - lo));
  return worst;
}

TEST(ActivationEqualize, FindsEachKindOfPair) {
  auto g = network();
  ASSERT_TRUE(g);
  // conv1's region a lookup of its own (with conv regions conv1 absorbs it: no 8-bit c1 to equalize).
  auto plan = quant::plan_quantization(*g, quant::ActScheme::kU8Asymmetric, /*conv_regions=*/false);
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  std::vector<std::string> roots, outputs;
  for (const auto& l : plan->layers) {
    if (l.kind != quant::LayerKind::kLookup) continue;
    roots.push_back(l.inputs[0]);
    outputs.push_back(l.output);
  }
  ASSERT_EQ(roots, std::vector<std::string>{"c1"});
  const auto pairs = quant::activation_equalization_pairs(*g, roots, outputs);
  ASSERT_EQ(pairs.size(), 3u);
  std::map<std::string, quant::PairKind> kinds;
  for (const auto& p : pairs) kinds[p.tensor] = p.kind;
  EXPECT_EQ(kinds.at("c1"), quant::PairKind::kConvToLookup);
  EXPECT_EQ(kinds.at("r1"), quant::PairKind::kConvToDepthwise);
  EXPECT_EQ(kinds.at("h6"), quant::PairKind::kLookupToDepthwise);
  for (const auto& p : pairs) EXPECT_EQ(p.channels, kC);

  // A tensor something else also reads (a graph output) is not rescaled.
  auto side = network(/*side_output=*/true);
  ASSERT_TRUE(side);
  for (const auto& p : quant::activation_equalization_pairs(*side, {"c1"}, outputs)) EXPECT_NE(p.tensor, "c1");
}

TEST(ActivationEqualize, ScaleRule) {
  quant::ChannelRanges r;
  r.lo = {-4.0f, -0.5f, 0.0f, -1e-9f, -0.01f};
  r.hi = {8.0f, 1.0f, 2.0f, 1e-9f, 0.0f};
  const std::vector<float> s = quant::activation_scales(r);
  ASSERT_EQ(s.size(), 5u);
  EXPECT_FLOAT_EQ(s[0], 1.0f);  // reaches both ends
  EXPECT_FLOAT_EQ(s[1], 8.0f);  // to the larger end it can reach: 8 / 1, -4 / -0.5
  EXPECT_FLOAT_EQ(s[2], 4.0f);  // no negative side: up to H
  EXPECT_FLOAT_EQ(s[3], 1.0f);  // empty at u8 resolution
  // Only a negative tail, -0.01, against L = -4: up to L, not beyond the 1024 cap.
  EXPECT_FLOAT_EQ(s[4], 400.0f);
  // An end below kEndMargin of the span may grow to it: [-0.1, 10] with a channel in [-0.1, 1].
  quant::ChannelRanges tail;
  tail.lo = {-0.1f, -0.1f};
  tail.hi = {10.0f, 1.0f};
  const std::vector<float> t = quant::activation_scales(tail);
  EXPECT_FLOAT_EQ(t[1], std::min(10.0f / 1.0f, quant::kEndMargin * 10.1f / 0.1f));
}

TEST(ActivationEqualize, KeepsTheFunctionAndFillsEachChannel) {
  auto g = network();
  ASSERT_TRUE(g);
  const auto calib = batches(kSeed + 10, 4);
  const auto before = run(*g, calib, false);
  quant::QuantizeOptions o;
  o.equalize_activations = true;
  o.conv_regions = false;  // the conv -> lookup pair (by default conv1 absorbs the region)
  auto q = quant::quantize_static(*g, calib, o);
  ASSERT_TRUE(q.ok()) << q.status().to_string();
  EXPECT_EQ(q->activation_equalized_pairs, 3);
  EXPECT_GT(q->activation_equalized_channels, 0);
  expect_close(before, run(*q->fp32, calib, false), "the equalized float graph");
  EXPECT_TRUE(q->fp32->verify().ok());
  // conv1's 256x spread of channel scales is gone: every channel spans at least 1/8 of the
  // quantized tensor (the rescaled conv1 output; the region output; dw1's Relu output).
  quant::QuantizeOptions plain;
  plain.conv_regions = false;
  auto p = quant::quantize_static(*g, calib, plain);
  ASSERT_TRUE(p.ok());
  EXPECT_LT(worst_channel_share(ranges_of(*p->fp32, "c1", calib)), 0.02);
  EXPECT_GT(worst_channel_share(ranges_of(*q->fp32, "c1_equalized", calib)), 0.125);
  EXPECT_GT(worst_channel_share(ranges_of(*q->fp32, "h6_equalized", calib)), 0.125);
}

TEST(ActivationEqualize, LowersTheInt8ErrorWithOneTablePerChannel) {
  auto g = network();
  ASSERT_TRUE(g);
  const auto calib = batches(kSeed + 10, 4);
  const auto eval = batches(kSeed + 50, 3);
  const auto reference = run(*g, eval, false);
  double snr[2] = {0, 0};
  for (int eq = 0; eq < 2; ++eq) {
    quant::QuantizeOptions o;
    o.equalize_activations = eq != 0;
    o.conv_regions = false;  // the lookup this test is about
    auto q = quant::quantize_static(*g, calib, o);
    ASSERT_TRUE(q.ok()) << q.status().to_string();
    auto e = quant::evaluate_output(*q->qdq, eval, reference);
    ASSERT_TRUE(e.ok()) << e.status().to_string();
    snr[eq] = e->snr_db;
    // The integer graph: the region runs as a lookup, one table per channel once equalized.
    auto copy = ir::copy_graph(*q->qdq, false);
    ASSERT_TRUE(copy.ok());
    runtime::SessionOptions so;
    so.backend = "cpu";
    auto s = runtime::Session::create(std::move(*copy), so);
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    int per_channel = 0, lookups = 0;
    for (const auto& n : (*s)->graph().nodes()) {
      if (n->op_type != "QLinearLookup") continue;
      ++lookups;
      if (n->input(1)->constant->rank() == 2) ++per_channel;
    }
    EXPECT_EQ(lookups, 1);
    EXPECT_EQ(per_channel, eq);
    EXPECT_EQ(count_ops((*s)->graph(), "Mul"), 0) << "a float Mul left over";
  }
  EXPECT_GT(snr[1], snr[0] + 6.0) << "plain " << snr[0] << " dB, equalized " << snr[1] << " dB";
}

}  // namespace
}  // namespace nfuse::passes_test
