// Adaptive weight rounding: the Gram matrix it collects is the sum of the receptive-field
// patches' outer products (checked against an im2col restated here), its int8 values stay in
// range with the given scales, and on held-out data the layer's output error is below that of
// nearest rounding, for grouped / strided / padded convolutions and a Gemm.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "pass_test_util.h"
#include "quant/adaptive_rounding.h"
#include "quant/quant_params.h"
#include "quant/quantize_graph.h"

namespace nfuse::passes_test {
namespace {

using quant::GramGeometry;
using quant::LayerGram;

// Inputs whose channels are correlated (a shared component plus noise), as real feature maps are:
// where inputs are independent, nearest rounding is already optimal.
ir::Tensor correlated(std::vector<int64_t> dims, uint32_t seed) {
  ir::Tensor t = ir::Tensor::allocate(ir::DType::kF32, dims);
  std::mt19937 rng(seed);
  std::normal_distribution<float> n(0.0f, 1.0f);
  const int64_t c = dims[1], plane = t.numel() / (dims[0] * c);
  for (int64_t b = 0; b < dims[0]; ++b)
    for (int64_t i = 0; i < plane; ++i) {
      const float common = n(rng);
      for (int64_t ch = 0; ch < c; ++ch)
        t.data<float>()[(b * c + ch) * plane + i] = common + 0.3f * n(rng) + 0.1f * static_cast<float>(ch);
    }
  return t;
}

// The Gram matrix of a 2-D conv restated: every output position's patch, zero outside the image.
std::vector<double> im2col_gram(const ir::Tensor& x, const GramGeometry& g) {
  const int64_t n = x.dim(0), c = x.dim(1), ih = x.dim(2), iw = x.dim(3), k = g.k;
  const int64_t oh = (ih + g.pad_t + g.pad_b - g.dil_h * (g.kh - 1) - 1) / g.stride_h + 1;
  const int64_t ow = (iw + g.pad_l + g.pad_r - g.dil_w * (g.kw - 1) - 1) / g.stride_w + 1;
  std::vector<double> h(static_cast<size_t>(g.groups * k * k), 0.0);
  std::vector<double> patch(static_cast<size_t>(k));
  for (int64_t b = 0; b < n; ++b)
    for (int64_t oy = 0; oy < oh; ++oy)
      for (int64_t ox = 0; ox < ow; ++ox)
        for (int64_t grp = 0; grp < g.groups; ++grp) {
          for (int64_t ci = 0; ci < g.cin_g; ++ci)
            for (int64_t ky = 0; ky < g.kh; ++ky)
              for (int64_t kx = 0; kx < g.kw; ++kx) {
                const int64_t y = oy * g.stride_h - g.pad_t + ky * g.dil_h,
                              xx = ox * g.stride_w - g.pad_l + kx * g.dil_w;
                const bool inside = y >= 0 && y < ih && xx >= 0 && xx < iw;
                patch[static_cast<size_t>((ci * g.kh + ky) * g.kw + kx)] =
                    inside ? x.data<float>()[((b * c + grp * g.cin_g + ci) * ih + y) * iw + xx] : 0.0;
              }
          for (int64_t i = 0; i < k; ++i)
            for (int64_t j = i; j < k; ++j) h[static_cast<size_t>(grp * k * k + i * k + j)] += patch[i] * patch[j];
        }
  return h;
}

std::unique_ptr<ir::Graph> conv_graph(int64_t cin, int64_t cout, int64_t groups, std::vector<int64_t> strides,
                                      std::vector<int64_t> pads, std::vector<int64_t> dilations) {
  OnnxBuilder b;
  b.input("x", kF, {-1, cin, 11, 10});
  random_initializer(b, "w", {cout, cin / groups, 3, 3}, kSeed, -0.5f, 0.5f);
  random_initializer(b, "b", {cout}, kSeed + 1, -0.1f, 0.1f);
  auto& c = b.node("Conv", {"x", "w", "b"}, {"y"}, "conv");
  set_ints_attr(c, "strides", strides);
  set_ints_attr(c, "pads", pads);
  set_ints_attr(c, "dilations", dilations);
  set_int_attr(c, "group", groups);
  out(b, "y");
  return load(b);
}

TEST(AdaptiveRounding, GramIsTheSumOfPatchOuterProducts) {
  struct Case {
    int64_t cin, cout, groups;
    std::vector<int64_t> strides, pads, dilations;
  };
  const Case cases[] = {{4, 6, 1, {1, 1}, {1, 1, 1, 1}, {1, 1}},
                        {6, 6, 6, {2, 2}, {0, 1, 2, 0}, {1, 1}},   // depthwise, strided, asymmetric pads
                        {4, 8, 2, {1, 2}, {2, 2, 2, 2}, {2, 1}}};  // grouped, dilated
  for (const Case& cs : cases) {
    auto g = conv_graph(cs.cin, cs.cout, cs.groups, cs.strides, cs.pads, cs.dilations);
    const ir::Node* conv = find_op(*g, "Conv");
    ASSERT_NE(conv, nullptr);
    auto geometry = quant::gram_geometry(*conv);
    ASSERT_TRUE(geometry.ok()) << geometry.status().to_string();
    EXPECT_EQ(geometry->groups, cs.groups);
    EXPECT_EQ(geometry->k, cs.cin / cs.groups * 9);
    LayerGram gram;
    gram.geometry = *geometry;
    const ir::Tensor x = correlated({2, cs.cin, 11, 10}, kSeed + 5);  // < 4096 positions: all summed
    ASSERT_TRUE(quant::accumulate_gram(x, &gram).ok());
    const std::vector<double> want = im2col_gram(x, *geometry);
    ASSERT_EQ(gram.h.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(gram.h[i], want[i], 1e-9 * (1.0 + std::fabs(want[i]))) << i;
  }
}

TEST(AdaptiveRounding, RefusesMismatchedInputs) {
  auto g = conv_graph(4, 6, 2, {1, 1}, {1, 1, 1, 1}, {1, 1});
  auto geometry = quant::gram_geometry(*find_op(*g, "Conv"));
  ASSERT_TRUE(geometry.ok());
  LayerGram gram;
  gram.geometry = *geometry;
  const Status st = quant::accumulate_gram(correlated({1, 6, 11, 10}, 1), &gram);  // 6 channels, not 4
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.to_string();
  const ir::Tensor w = ir::Tensor::allocate(ir::DType::kF32, {6, 2, 3, 3});
  ir::Tensor values = ir::Tensor::allocate(ir::DType::kI8, {6, 2, 3, 3});
  const std::vector<float> wrong_scales(5, 1.0f);
  EXPECT_FALSE(quant::adaptive_round(w, 0, wrong_scales, gram, &values).ok());
  ir::Tensor wrong_shape = ir::Tensor::allocate(ir::DType::kI8, {6, 18});
  EXPECT_FALSE(quant::adaptive_round(w, 0, std::vector<float>(6, 1.0f), gram, &wrong_shape).ok());
}

// Without samples there is nothing to weigh the rounding by: the nearest values stay, and the
// layer is not counted as adaptively rounded.
TEST(AdaptiveRounding, WithoutSamplesKeepsNearestValues) {
  auto g = conv_graph(4, 6, 1, {1, 1}, {1, 1, 1, 1}, {1, 1});
  const ir::Node* conv = find_op(*g, "Conv");
  auto geometry = quant::gram_geometry(*conv);
  ASSERT_TRUE(geometry.ok());
  LayerGram gram;
  gram.geometry = *geometry;
  const ir::Tensor& w = *conv->input(1)->constant;
  auto nearest = quant::quantize_weights_per_channel(w, 0, {});
  ASSERT_TRUE(nearest.ok());
  ir::Tensor values = nearest->data.clone();
  auto adapted = quant::adaptive_round(w, 0, nearest->params.scale, gram, &values);
  ASSERT_TRUE(adapted.ok()) << adapted.status().to_string();
  EXPECT_EQ(*adapted, 0);
  for (int64_t i = 0; i < values.numel(); ++i) ASSERT_EQ(values.data<int8_t>()[i], nearest->data.data<int8_t>()[i]);
}

// Output error of weight-only quantized graphs on held-out data, nearest vs adaptive.
void expect_adaptive_beats_nearest(const ir::Graph& g, const std::vector<int64_t>& dims) {
  std::vector<ir::Tensor> calib, eval;
  for (uint32_t i = 0; i < 6; ++i) calib.push_back(correlated(dims, 100 + i));
  for (uint32_t i = 0; i < 3; ++i) eval.push_back(correlated(dims, 200 + i));
  auto reference = quant::run_output0(g, eval, /*optimize=*/false);
  ASSERT_TRUE(reference.ok()) << reference.status().to_string();
  double mse[2] = {0, 0};
  for (int adaptive = 0; adaptive < 2; ++adaptive) {
    quant::QuantizeOptions o;
    o.weight_rounding = adaptive ? quant::WeightRounding::kAdaptive : quant::WeightRounding::kNearest;
    auto q = quant::quantize_static(g, calib, o);
    ASSERT_TRUE(q.ok()) << q.status().to_string();
    quant::QdqSelection s = q->selection;
    s.weights_only = true;  // the weights' error alone
    ASSERT_TRUE(q->rebuild(s).ok());
    EXPECT_EQ(q->weights_rounded_adaptively, adaptive ? 1 : 0);
    auto got = quant::run_output0(*q->qdq, eval, /*optimize=*/true);
    ASSERT_TRUE(got.ok()) << got.status().to_string();
    for (size_t b = 0; b < eval.size(); ++b)
      for (int64_t i = 0; i < (*got)[b].numel(); ++i) {
        const double d = (*got)[b].data<float>()[i] - (*reference)[b].data<float>()[i];
        mse[adaptive] += d * d;
      }
  }
  EXPECT_GT(mse[0], 0.0);
  EXPECT_LT(mse[1], 0.5 * mse[0]) << "nearest " << mse[0] << ", adaptive " << mse[1];
}

TEST(AdaptiveRounding, LowersConvOutputErrorOnHeldOutData) {
  auto plain = conv_graph(8, 8, 1, {1, 1}, {1, 1, 1, 1}, {1, 1});
  expect_adaptive_beats_nearest(*plain, {2, 8, 11, 10});
  auto grouped = conv_graph(8, 8, 2, {2, 1}, {1, 0, 1, 2}, {1, 1});
  expect_adaptive_beats_nearest(*grouped, {2, 8, 11, 10});
}

TEST(AdaptiveRounding, LowersGemmOutputErrorOnHeldOutData) {
  for (int trans_b = 0; trans_b < 2; ++trans_b) {
    OnnxBuilder b;
    b.input("x", kF, {-1, 24});
    random_initializer(b, "w", trans_b ? std::vector<int64_t>{16, 24} : std::vector<int64_t>{24, 16}, kSeed, -0.5f,
                       0.5f);
    random_initializer(b, "c", {16}, kSeed + 1, -0.1f, 0.1f);
    auto& gemm = b.node("Gemm", {"x", "w", "c"}, {"y"}, "gemm");
    set_int_attr(gemm, "transB", trans_b);
    out(b, "y");
    auto g = load(b);
    // A [N, 24] input: `correlated` treats dim 1 as channels, which is the Gemm's k.
    expect_adaptive_beats_nearest(*g, {64, 24});
  }
}

}  // namespace
}  // namespace nfuse::passes_test
