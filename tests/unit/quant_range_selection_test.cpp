// --method auto (range_selection.h): the candidates are the distinct ranges of the five methods,
// and the chosen one is the argmin of the reader's output error, recomputed here with the
// 1x1 convolution and the u8 fake quantization restated in the test; a tensor read only by an
// element-wise op is judged on its own error; quantize_static records the chosen methods.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "pass_test_util.h"
#include "quant/observer.h"
#include "quant/quant_plan.h"
#include "quant/quantize_graph.h"
#include "quant/range_selection.h"

namespace nfuse::passes_test {
namespace {

constexpr int64_t kC = 2, kH = 16, kW = 16, kCo = 3;

// Channel 0: dense values in [-1, 1]; channel 1: mostly near 0 with rare large outliers. Each
// batch holds its own outliers, so clipping them costs something on every batch.
ir::Tensor skewed_batch(uint32_t seed) {
  ir::Tensor t = ir::Tensor::allocate(ir::DType::kF32, {1, kC, kH, kW});
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  float* p = t.data<float>();
  for (int64_t i = 0; i < kH * kW; ++i) p[i] = u(rng);
  for (int64_t i = 0; i < kH * kW; ++i) p[kH * kW + i] = (i % 61 == 7) ? 12.0f * u(rng) : 0.05f * u(rng);
  return t;
}

// x -> Conv 1x1 (w) -> y, or x -> Add(x, x) -> Conv 1x1 -> y when `w` is empty (a layer
// joined to no weighted layer is not quantized at all).
std::unique_ptr<ir::Graph> reader_graph(const std::vector<float>& w) {
  OnnxBuilder b;
  b.input("x", kF, {1, kC, kH, kW});
  if (w.empty()) {
    b.node("Add", {"x", "x"}, {"s"}, "add");
    b.initializer("w", {kCo, kC, 1, 1}, random_values(kCo * kC, kSeed, -1.0f, 1.0f));
    b.node("Conv", {"s", "w"}, {"y"}, "conv");
  } else {
    b.initializer("w", {kCo, kC, 1, 1}, w);
    b.node("Conv", {"x", "w"}, {"y"}, "conv");
  }
  out(b, "y");
  return load(b);
}

// u8 asymmetric fake quantization as quant_params.h defines it, restated.
std::vector<float> fake_quantize_u8(const ir::Tensor& x, quant::Range r) {
  const float lo = std::min(r.min, 0.0f), hi = std::max(r.max, 0.0f);
  const float scale = (hi - lo) / 255.0f;
  const float zp = std::clamp(std::nearbyint(-lo / scale), 0.0f, 255.0f);
  std::vector<float> out(static_cast<size_t>(x.numel()));
  for (size_t i = 0; i < out.size(); ++i) {
    const float q = std::clamp(std::nearbyint(x.data<float>()[i] / scale) + zp, 0.0f, 255.0f);
    out[i] = (q - zp) * scale;
  }
  return out;
}

std::vector<double> conv1x1(const std::vector<float>& x, const std::vector<float>& w) {
  std::vector<double> y(static_cast<size_t>(kCo * kH * kW), 0.0);
  for (int64_t o = 0; o < kCo; ++o)
    for (int64_t c = 0; c < kC; ++c)
      for (int64_t i = 0; i < kH * kW; ++i)
        y[static_cast<size_t>(o * kH * kW + i)] +=
            static_cast<double>(w[static_cast<size_t>(o * kC + c)]) * x[static_cast<size_t>(c * kH * kW + i)];
  return y;
}

double sq_distance(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0.0;
  for (size_t i = 0; i < a.size(); ++i) s += (a[i] - b[i]) * (a[i] - b[i]);
  return s;
}

struct Selection {
  std::vector<quant::RangeCandidate> candidates;
  size_t chosen = 0;
  std::vector<double> scores;
};

Selection select_on(const ir::Graph& g, const std::vector<ir::Tensor>& data) {
  Selection s;
  quant::Observer obs;
  for (const auto& t : data) EXPECT_TRUE(obs.update(t.data<float>(), static_cast<size_t>(t.numel())).ok());
  quant::MethodOptions mo;
  mo.symmetric = false;
  auto cands = quant::range_candidates(obs, mo);
  EXPECT_TRUE(cands.ok()) << cands.status().to_string();
  if (!cands.ok()) return s;
  s.candidates = *cands;
  auto plan = quant::plan_quantization(g, quant::ActScheme::kU8Asymmetric);
  EXPECT_TRUE(plan.ok()) << plan.status().to_string();
  if (!plan.ok()) return s;
  auto sel = quant::RangeSelector::create(g, *plan, quant::ActScheme::kU8Asymmetric, {{"x", s.candidates}}, 1);
  EXPECT_TRUE(sel.ok()) << sel.status().to_string();
  if (!sel.ok()) return s;
  EXPECT_EQ((*sel)->needed(), std::vector<std::string>{"x"});
  for (const auto& t : data) EXPECT_TRUE((*sel)->observe({{"x", &t}}).ok());
  s.chosen = (*sel)->choose().at("x");
  s.scores = (*sel)->scores("x");
  return s;
}

std::vector<ir::Tensor> skewed_data() {
  std::vector<ir::Tensor> data;
  for (uint32_t i = 0; i < 4; ++i) data.push_back(skewed_batch(kSeed + i));
  return data;
}

TEST(RangeSelection, CandidatesAreTheDistinctMethodRanges) {
  quant::Observer obs;
  for (const auto& t : skewed_data()) ASSERT_TRUE(obs.update(t.data<float>(), static_cast<size_t>(t.numel())).ok());
  quant::MethodOptions mo;
  mo.symmetric = false;
  auto c = quant::range_candidates(obs, mo);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  ASSERT_GE(c->size(), 2u);  // the outliers make the searches clip
  EXPECT_EQ((*c)[0].method, quant::Method::kMinMax);
  EXPECT_EQ((*c)[0].range.min, obs.min());
  EXPECT_EQ((*c)[0].range.max, obs.max());
  for (size_t i = 0; i < c->size(); ++i) {
    auto r = obs.range((*c)[i].method, mo);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->min, (*c)[i].range.min);
    EXPECT_EQ(r->max, (*c)[i].range.max);
    for (size_t j = 0; j < i; ++j)
      EXPECT_FALSE((*c)[i].range.min == (*c)[j].range.min && (*c)[i].range.max == (*c)[j].range.max);
  }
  // All zeros: every method gives [0, 0], one candidate.
  quant::Observer flat;
  const std::vector<float> zeros(100, 0.0f);
  ASSERT_TRUE(flat.update(zeros).ok());
  auto one = quant::range_candidates(flat, mo);
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->size(), 1u);
  EXPECT_FALSE(obs.range(quant::Method::kAuto, mo).ok());
}

// The chosen candidate minimises the conv's output error, which the test recomputes; with the
// weight on the outlier channel the reader's choice differs from the tensor's own best range.
TEST(RangeSelection, ChoosesTheRangeWithTheSmallestReaderError) {
  const std::vector<float> w = {0.01f, 4.0f, -0.02f, 3.0f, 0.015f, -5.0f};
  auto g = reader_graph(w);
  ASSERT_TRUE(g);
  const auto data = skewed_data();
  const Selection s = select_on(*g, data);
  ASSERT_GE(s.candidates.size(), 2u);
  std::vector<double> reader(s.candidates.size(), 0.0), own(s.candidates.size(), 0.0);
  double energy = 0.0;
  for (const auto& t : data) {
    const std::vector<float> xf(t.data<float>(), t.data<float>() + t.numel());
    const std::vector<double> y = conv1x1(xf, w);
    for (double v : y) energy += v * v;
    for (size_t k = 0; k < s.candidates.size(); ++k) {
      const std::vector<float> xq = fake_quantize_u8(t, s.candidates[k].range);
      reader[k] += sq_distance(conv1x1(xq, w), y);
      for (size_t i = 0; i < xq.size(); ++i) own[k] += (xq[i] - xf[i]) * static_cast<double>(xq[i] - xf[i]);
    }
  }
  ASSERT_EQ(s.scores.size(), s.candidates.size());
  for (size_t k = 0; k < reader.size(); ++k)
    EXPECT_NEAR(s.scores[k], reader[k] / energy, 1e-3 * reader[k] / energy) << k;
  const size_t best_reader = std::min_element(reader.begin(), reader.end()) - reader.begin();
  const size_t best_own = std::min_element(own.begin(), own.end()) - own.begin();
  EXPECT_EQ(s.chosen, best_reader);
  EXPECT_NE(best_reader, best_own) << "the data should make the reader's weighting matter";
}

// Read by an Add only: scored on the tensor's own error, the choice that error prefers.
TEST(RangeSelection, ElementwiseReaderScoresTheTensorItself) {
  auto g = reader_graph({});
  ASSERT_TRUE(g);
  const auto data = skewed_data();
  const Selection s = select_on(*g, data);
  ASSERT_GE(s.candidates.size(), 2u);
  std::vector<double> own(s.candidates.size(), 0.0);
  double energy = 0.0;
  for (const auto& t : data) {
    for (size_t k = 0; k < s.candidates.size(); ++k) {
      const std::vector<float> xq = fake_quantize_u8(t, s.candidates[k].range);
      for (size_t i = 0; i < xq.size(); ++i) {
        const double d = static_cast<double>(xq[i]) - t.data<float>()[i];
        own[k] += d * d;
      }
    }
    for (int64_t i = 0; i < t.numel(); ++i) energy += static_cast<double>(t.data<float>()[i]) * t.data<float>()[i];
  }
  // The Add reads x twice but is one reader, scored on x itself.
  for (size_t k = 0; k < own.size(); ++k) EXPECT_NEAR(s.scores[k], own[k] / energy, 1e-3 * own[k] / energy);
  EXPECT_EQ(s.chosen, static_cast<size_t>(std::min_element(own.begin(), own.end()) - own.begin()));
  EXPECT_NE(s.chosen, 0u) << "minmax should lose to a clipping range on the tensor's own error";
}

// quantize_static with kAuto: every 8-bit tensor records the method whose range it got.
TEST(RangeSelection, QuantizeStaticRecordsTheChosenMethods) {
  OnnxBuilder b;
  b.input("x", kF, {1, kC, kH, kW});
  b.initializer("w1", {4, kC, 1, 1}, {0.5f, 0.01f, -0.3f, 0.02f, 0.2f, 0.4f, 0.1f, -0.6f});
  b.initializer("w2", {kCo, 4, 1, 1}, random_values(kCo * 4, kSeed, -1.0f, 1.0f));
  b.node("Conv", {"x", "w1"}, {"c1"}, "conv1");
  b.node("Conv", {"c1", "w2"}, {"y"}, "conv2");
  out(b, "y");
  auto g = load(b);
  ASSERT_TRUE(g);
  quant::QuantizeOptions options;
  options.method = quant::Method::kAuto;
  auto q = quant::quantize_static(*g, skewed_data(), options);
  ASSERT_TRUE(q.ok()) << q.status().to_string();
  int own = 0;
  for (const auto& t : q->tensors) {
    if (!t.shared_with.empty()) continue;
    ++own;
    if (t.name == "x") {
      EXPECT_EQ(t.method, quant::Method::kMinMax);  // graph inputs stay minmax
    }
    EXPECT_NE(t.method, quant::Method::kAuto);
  }
  int counted = 0;
  for (const auto& [method, n] : quant::range_method_counts(*q)) counted += n;
  EXPECT_EQ(counted, own);
  EXPECT_GE(own, 2);
  auto parsed = quant::parse_method("auto");
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(*parsed, quant::Method::kAuto);
}

}  // namespace
}  // namespace nfuse::passes_test
