// Cross-layer equalization keeps the float function and equalizes the per-channel weight
// ranges of each pair; bias correction removes most of the systematic output shift that
// weight rounding adds when inputs have a non-zero mean.
#include <gtest/gtest.h>

#include <cmath>

#include "pass_test_util.h"
#include "quant/equalize.h"
#include "quant/mixed_precision.h"
#include "quant/quantize_graph.h"
#include "runtime/session.h"

namespace nfuse::passes_test {
namespace {

// conv1 (channel c's weights scaled by 4^(c-2): ranges 1/16 .. 16) -> act -> conv2 -> y.
std::unique_ptr<ir::Graph> pair_graph(const char* act, int64_t groups2) {
  OnnxBuilder b;
  b.input("x", kF, {-1, 3, 9, 9});
  std::vector<float> w1 = random_values(4 * 3 * 3 * 3, kSeed, -0.5f, 0.5f);
  for (int64_t c = 0; c < 4; ++c)
    for (int64_t i = 0; i < 27; ++i) w1[static_cast<size_t>(c * 27 + i)] *= std::pow(4.0f, static_cast<float>(c - 2));
  b.initializer("w1", {4, 3, 3, 3}, w1);
  random_initializer(b, "b1", {4}, kSeed + 1, -0.1f, 0.1f);
  random_initializer(b, "w2", {4, 4 / groups2, 3, 3}, kSeed + 2, -0.5f, 0.5f);
  random_initializer(b, "b2", {4}, kSeed + 3, -0.1f, 0.1f);
  set_ints_attr(b.node("Conv", {"x", "w1", "b1"}, {"c1"}, "conv1"), "pads", {1, 1, 1, 1});
  b.node(act, {"c1"}, {"a1"}, "act1");
  auto& c2 = b.node("Conv", {"a1", "w2", "b2"}, {"y"}, "conv2");
  set_ints_attr(c2, "pads", {1, 1, 1, 1});
  auto* g = c2.add_attribute();
  g->set_name("group");
  g->set_type(::onnx::AttributeProto::INT);
  g->set_i(groups2);
  out(b, "y");
  return load(b);
}

std::vector<ir::Tensor> run_cpu(const ir::Graph& g, const std::vector<ir::Tensor>& batches) {
  auto r = quant::run_output0(g, batches, /*optimize=*/false);
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  return r.ok() ? *r : std::vector<ir::Tensor>{};
}

std::vector<ir::Tensor> data(uint32_t seed, float lo, float hi, int count = 3) {
  std::vector<ir::Tensor> out;
  for (int i = 0; i < count; ++i) {
    ir::Tensor t = ir::Tensor::allocate(ir::DType::kF32, {2, 3, 9, 9});
    std::vector<float> v = random_values(t.numel(), seed + static_cast<uint32_t>(i), lo, hi);
    std::copy(v.begin(), v.end(), t.data<float>());
    out.push_back(t);
  }
  return out;
}

float channel_absmax(const ir::Tensor& w, int64_t c) {
  const int64_t k = w.numel() / w.dim(0);
  float m = 0.0f;
  for (int64_t i = 0; i < k; ++i) m = std::max(m, std::fabs(w.data<float>()[c * k + i]));
  return m;
}

TEST(CrossLayerEqualize, KeepsTheFunctionAndEqualizesRanges) {
  for (const char* act : {"Relu", "LeakyRelu"}) {
    for (int64_t groups : {1, 4}) {
      auto g = pair_graph(act, groups);
      ASSERT_TRUE(g);
      const auto in = data(kSeed + 10, -2.0f, 2.0f);
      const auto before = run_cpu(*g, in);
      auto r = quant::cross_layer_equalize(*g);
      ASSERT_TRUE(r.ok()) << r.status().to_string();
      EXPECT_EQ(r->pairs, 1) << act << " groups " << groups;
      expect_close(before, run_cpu(*g, in), std::string("CLE across ") + act);
      // Channel c of conv1's output and of conv2's input now have the same weight range.
      const ir::Tensor& w1 = *g->find_value("c1")->producer->input(1)->constant;
      const ir::Tensor& w2 = *g->find_value("y")->producer->input(1)->constant;
      for (int64_t c = 0; c < 4; ++c) {
        float r2 = 0.0f;
        if (groups == 1) {
          const int64_t k = 9;
          for (int64_t o = 0; o < 4; ++o)
            for (int64_t i = 0; i < k; ++i) r2 = std::max(r2, std::fabs(w2.data<float>()[(o * 4 + c) * k + i]));
        } else {
          r2 = channel_absmax(w2, c);
        }
        EXPECT_NEAR(channel_absmax(w1, c), r2, 1e-5f * r2) << act << " groups " << groups << " channel " << c;
      }
    }
  }
}

TEST(CrossLayerEqualize, LeavesNonHomogeneousPairsAlone) {
  auto g = pair_graph("Sigmoid", 1);  // not homogeneous: no pair
  ASSERT_TRUE(g);
  auto r = quant::cross_layer_equalize(*g);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->pairs, 0);
}

// One Conv whose weights each hold an outlier (10): the per-channel scale gets coarse, and with
// inputs in [1.5, 2.5] (mean 2) the rounding of the other weights shifts every output by
// (W_q - W) E[x]. The corrected bias removes that shift, so the mean output error drops.
std::unique_ptr<ir::Graph> outlier_conv() {
  OnnxBuilder b;
  b.input("x", kF, {-1, 3, 9, 9});
  std::vector<float> w = random_values(4 * 3 * 3 * 3, kSeed + 5, -0.5f, 0.5f);
  for (int64_t c = 0; c < 4; ++c) w[static_cast<size_t>(c * 27 + 13)] = 10.0f;
  b.initializer("w", {4, 3, 3, 3}, w);
  random_initializer(b, "b", {4}, kSeed + 6, -0.1f, 0.1f);
  b.node("Conv", {"x", "w", "b"}, {"y"}, "conv");
  out(b, "y");
  return load(b);
}

TEST(BiasCorrection, ReducesTheMeanOutputError) {
  auto g = outlier_conv();
  ASSERT_TRUE(g);
  const auto calib = data(kSeed + 20, 1.5f, 2.5f, 4);
  const auto eval = data(kSeed + 40, 1.5f, 2.5f, 4);
  const auto reference = run_cpu(*g, eval);
  double mean_error[2] = {0, 0};
  for (int corrected = 0; corrected < 2; ++corrected) {
    quant::QuantizeOptions o;
    o.bias_correction = corrected != 0;
    auto q = quant::quantize_static(*g, calib, o);
    ASSERT_TRUE(q.ok()) << q.status().to_string();
    EXPECT_EQ(q->biases_corrected, corrected ? 1 : 0);
    auto got = quant::run_output0(*q->qdq, eval, /*optimize=*/true);
    ASSERT_TRUE(got.ok()) << got.status().to_string();
    // Mean error per output channel, then its mean magnitude.
    std::vector<double> per_channel(4, 0.0);
    int64_t count = 0;
    for (size_t bi = 0; bi < eval.size(); ++bi) {
      const ir::Tensor& r = reference[bi];
      const ir::Tensor& x = (*got)[bi];
      const int64_t hw = r.dim(2) * r.dim(3);  // 7x7: no padding, so E[x] holds at every pixel
      for (int64_t n = 0; n < r.dim(0); ++n)
        for (int64_t c = 0; c < 4; ++c)
          for (int64_t i = 0; i < hw; ++i) {
            const int64_t j = (n * 4 + c) * hw + i;
            per_channel[static_cast<size_t>(c)] += x.data<float>()[j] - r.data<float>()[j];
          }
      count += r.dim(0) * hw;
    }
    for (double v : per_channel) mean_error[corrected] += std::fabs(v / static_cast<double>(count)) / 4.0;
  }
  EXPECT_LT(mean_error[1], 0.3 * mean_error[0]) << "without " << mean_error[0] << ", with " << mean_error[1];
}

}  // namespace
}  // namespace nfuse::passes_test
