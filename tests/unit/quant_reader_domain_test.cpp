// reader_domain (quant/reader_domain.h): where a tensor's lookups turn constant, its range may
// stop. Checked on the activations MobileNetV3-style networks use (HardSwish decomposed as
// x * Clip(x + 3, 0, 6) / 6, HardSigmoid, Relu), per-channel constants (the union of the
// channels' tails), and the cases that keep the range (a reader that is not a lookup, a function
// without a constant tail); then through quantize_static: the tensor's scale shrinks, and the
// report compares it with the float tensor clamped to the cut.
#include <gtest/gtest.h>

#include <cmath>

#include "pass_test_util.h"
#include "quant/quantize_graph.h"
#include "quant/reader_domain.h"

namespace nfuse::passes_test {
namespace {

enum class Act { kHardSwishDecomposed, kHardSigmoid, kRelu, kSigmoid, kChannelScaledHardSigmoid };

// x -> Conv -> c -> act(c) -> Conv -> y (and, with `second_reader`, c -> Conv -> y2 too).
std::unique_ptr<ir::Graph> model(Act act, bool second_reader = false) {
  OnnxBuilder b;
  b.input("x", kF, {1, 2, 6, 6});
  random_initializer(b, "w1", {2, 2, 1, 1}, kSeed, -0.5f, 0.5f);
  random_initializer(b, "w2", {2, 2, 1, 1}, kSeed + 1, -0.5f, 0.5f);
  b.node("Conv", {"x", "w1"}, {"c"}, "conv1");
  std::string a = "a";
  switch (act) {
    case Act::kHardSwishDecomposed:
      b.initializer("three", {}, {3.0f});
      b.initializer("zero", {}, {0.0f});
      b.initializer("six", {}, {6.0f});
      b.node("Add", {"c", "three"}, {"p"}, "add3");
      b.node("Clip", {"p", "zero", "six"}, {"r6"}, "relu6");
      b.node("Mul", {"c", "r6"}, {"m"}, "mul");
      b.node("Div", {"m", "six"}, {"a"}, "div6");
      break;
    case Act::kHardSigmoid: {
      auto& n = b.node("HardSigmoid", {"c"}, {"a"}, "hsig");
      set_float_attr(n, "alpha", 1.0f / 6);
      break;
    }
    case Act::kRelu: b.node("Relu", {"c"}, {"a"}, "relu"); break;
    case Act::kSigmoid: b.node("Sigmoid", {"c"}, {"a"}, "sig"); break;
    case Act::kChannelScaledHardSigmoid: {
      b.initializer("scale_c", {1, 2, 1, 1}, {1.0f, 2.0f});
      b.node("Mul", {"c", "scale_c"}, {"cs"}, "scale");
      auto& n = b.node("HardSigmoid", {"cs"}, {"a"}, "hsig");
      set_float_attr(n, "alpha", 1.0f / 6);
      break;
    }
  }
  b.node("Conv", {a, "w2"}, {"y"}, "conv2");
  out(b, "y");
  if (second_reader) {
    b.node("Conv", {"c", "w2"}, {"y2"}, "conv3");
    out(b, "y2");
  }
  return load(b);
}

std::optional<quant::Range> domain_of(Act act, quant::Range observed, bool second_reader = false) {
  auto g = model(act, second_reader);
  EXPECT_TRUE(g);
  // c read by lookup layers (by default the Conv writing c absorbs their region).
  auto plan = quant::plan_quantization(*g, quant::ActScheme::kU8Asymmetric, /*conv_regions=*/false);
  EXPECT_TRUE(plan.ok()) << plan.status().to_string();
  return quant::reader_domain(*g, *plan, "c", observed);
}

// A cut at the last grid point inside the tail (within one grid step of its edge), moved out by
// one 8-bit step of the cut range (`span`) for the zero point's rounding.
void expect_cut_at(float cut, float edge, float lo, float hi, float span, bool left) {
  const float step = (hi - lo) / (quant::kReaderDomainPoints - 1);
  const float margin = span / 255.0f;
  if (left) {
    EXPECT_LE(cut, edge - margin + 0.01f * step);
    EXPECT_GT(cut, edge - margin - 1.01f * step);
  } else {
    EXPECT_GE(cut, edge + margin - 0.01f * step);
    EXPECT_LT(cut, edge + margin + 1.01f * step);
  }
}

TEST(ReaderDomain, HardSwishDecomposedCutsBelowMinusThree) {
  const auto d = domain_of(Act::kHardSwishDecomposed, {-20.0f, 10.0f});
  ASSERT_TRUE(d);
  expect_cut_at(d->min, -3.0f, -20.0f, 10.0f, 13.0f, true);
  EXPECT_TRUE(std::isinf(d->max) && d->max > 0);  // no constant tail above: left open
}

TEST(ReaderDomain, HardSigmoidCutsBothSides) {
  const auto d = domain_of(Act::kHardSigmoid, {-20.0f, 10.0f});
  ASSERT_TRUE(d);
  expect_cut_at(d->min, -3.0f, -20.0f, 10.0f, 6.0f, true);
  expect_cut_at(d->max, 3.0f, -20.0f, 10.0f, 6.0f, false);
}

TEST(ReaderDomain, PerChannelConstantsTakeTheUnionOfTheTails) {
  // Channel 0: HardSigmoid(c) turns constant at -3 and 3; channel 1: HardSigmoid(2c) at -1.5, 1.5.
  const auto d = domain_of(Act::kChannelScaledHardSigmoid, {-20.0f, 10.0f});
  ASSERT_TRUE(d);
  expect_cut_at(d->min, -3.0f, -20.0f, 10.0f, 6.0f, true);
  expect_cut_at(d->max, 3.0f, -20.0f, 10.0f, 6.0f, false);
}

TEST(ReaderDomain, KeepsTheRange) {
  EXPECT_FALSE(domain_of(Act::kSigmoid, {-5.0f, 5.0f})) << "Sigmoid has no constant tail there";
  EXPECT_FALSE(domain_of(Act::kHardSwishDecomposed, {-2.0f, 10.0f})) << "the range ends before the tail";
  EXPECT_FALSE(domain_of(Act::kHardSigmoid, {-20.0f, 10.0f}, /*second_reader=*/true)) << "a Conv reads c too";
  // Relu with u8 is absorbed by the conv (its output is the quantized tensor, no lookup reads c).
  EXPECT_FALSE(domain_of(Act::kRelu, {-20.0f, 10.0f}));
}

std::vector<ir::Tensor> batches(int count) {
  std::vector<ir::Tensor> out;
  for (int i = 0; i < count; ++i) {
    ir::Tensor t = ir::Tensor::allocate(ir::DType::kF32, {1, 2, 6, 6});
    for (int64_t k = 0; k < t.numel(); ++k)
      t.data<float>()[k] = 12.0f * std::sin(0.37f * static_cast<float>(k + 7 * i));
    out.push_back(std::move(t));
  }
  return out;
}

// Through quantize_static: c's range stops near -3 (its observed minimum is far below), the
// report counts it, and the layer writing c is judged against the float c clamped to the cut
// (its cosine stays close to 1, where the unclamped comparison would count every value below
// -3 as error).
TEST(ReaderDomain, QuantizeCutsAndReportsAgainstTheClampedTensor) {
  auto g = model(Act::kHardSwishDecomposed);
  ASSERT_TRUE(g);
  quant::QuantizeOptions options;
  options.equalize_activations = false;
  options.method = quant::Method::kMinMax;
  options.conv_regions = false;  // c quantized, read by a lookup (by default the Conv absorbs the region)
  auto q = quant::quantize_static(*g, batches(4), options);
  ASSERT_TRUE(q.ok()) << q.status().to_string();
  EXPECT_EQ(q->ranges_cut_to_readers, 1);
  const quant::CalibratedTensor& c = q->calibrated.at("c");
  ASSERT_TRUE(std::isfinite(c.reader_cut.min));
  EXPECT_GT(c.range8.min, -3.2f);
  EXPECT_LE(c.range8.min, -3.0f);
  bool found = false;
  for (const auto& t : q->tensors) {
    if (t.name != "c") continue;
    found = true;
    // The lowest code dequantizes inside the tail (<= -3) and near it.
    const float lowest = static_cast<float>(0 - t.params.zero_point[0]) * t.params.scale[0];
    EXPECT_LE(lowest, -3.0f);
    EXPECT_GT(lowest, -3.3f);
  }
  EXPECT_TRUE(found);
  auto report = quant::evaluate_quantization(*q, batches(2), 1);
  ASSERT_TRUE(report.ok()) << report.status().to_string();
  int judged = 0;
  for (const auto& l : report->layers) {
    if (l.layer.output != "c") continue;
    ++judged;
    EXPECT_GT(l.error.cosine, 0.99) << l.layer.name;
  }
  EXPECT_EQ(judged, 1);
}

}  // namespace
}  // namespace nfuse::passes_test
