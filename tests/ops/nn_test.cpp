// Tests for the neural-network family's window ops (Conv, ConvTranspose, pools) and the window
// arithmetic of ops/conv_geometry.h. They cover what the ONNX conformance cases do not: groups
// with dilations, grouped ConvTranspose, ceil_mode edge windows, storage_order, int8 pooling and
// hostile attributes.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "nn_test_util.h"
#include "ops/conv_geometry.h"

namespace nfuse {
namespace {

using ir::DType;
using ir::Tensor;
using nn_test::attrs;
using nn_test::expect_tensor;
using nn_test::f32;
using nn_test::NodeRun;
using std::vector;

ops::WindowAttrs window(ir::Attributes a, int rank = 1) {
  auto w = ops::read_window_attrs(a, rank, std::nullopt);
  EXPECT_TRUE(w.ok()) << w.status().to_string();
  return w.ok() ? *w : ops::WindowAttrs{};
}

void expect_axis(const ops::WindowAttrs& w, int64_t in, int64_t out, int64_t pb, int64_t pe) {
  auto ax = ops::forward_window_axis(w, 0, in);
  ASSERT_TRUE(ax.ok()) << ax.status().to_string();
  EXPECT_EQ(ax->out, out) << "in " << in;
  EXPECT_EQ(ax->pad_begin, pb) << "in " << in;
  EXPECT_EQ(ax->pad_end, pe) << "in " << in;
}

TEST(ConvGeometry, SamePadsPutTheOddElementAtTheRightEnd) {
  const vector<int64_t> k3 = {3}, s2 = {2};
  auto upper = window(attrs({{"kernel_shape", k3}, {"strides", s2}, {"auto_pad", std::string("SAME_UPPER")}}));
  auto lower = window(attrs({{"kernel_shape", k3}, {"strides", s2}, {"auto_pad", std::string("SAME_LOWER")}}));
  expect_axis(upper, 4, 2, 0, 1);
  expect_axis(lower, 4, 2, 1, 0);
  expect_axis(upper, 5, 3, 1, 1);
  expect_axis(lower, 5, 3, 1, 1);
  expect_axis(upper, 1, 1, 1, 1);
}

TEST(ConvGeometry, ValidDilationAndCeilMode) {
  expect_axis(window(attrs({{"kernel_shape", vector<int64_t>{3}}, {"strides", vector<int64_t>{2}},
                            {"auto_pad", std::string("VALID")}, {"pads", vector<int64_t>{4, 4}}})),
              5, 2, 0, 0);
  expect_axis(window(attrs({{"kernel_shape", vector<int64_t>{3}}, {"dilations", vector<int64_t>{2}}})), 5, 1, 0, 0);
  const auto floor3 = window(attrs({{"kernel_shape", vector<int64_t>{3}}, {"strides", vector<int64_t>{2}}}));
  const auto ceil3 = window(attrs({{"kernel_shape", vector<int64_t>{3}}, {"strides", vector<int64_t>{2}},
                                   {"ceil_mode", int64_t{1}}}));
  expect_axis(floor3, 4, 1, 0, 0);
  expect_axis(ceil3, 4, 2, 0, 0);
  // ceil(5 / 2) + 1 = 4 windows, but the 4th would start in the end padding: dropped.
  expect_axis(window(attrs({{"kernel_shape", vector<int64_t>{2}}, {"strides", vector<int64_t>{2}},
                            {"pads", vector<int64_t>{1, 1}}, {"ceil_mode", int64_t{1}}})),
              5, 3, 1, 1);
}

TEST(ConvGeometry, TransposeOutputShapeAndSamePads) {
  auto t = [](ir::Attributes a) {
    auto r = ops::read_transpose_window_attrs(a, 1, vector<int64_t>{3});
    EXPECT_TRUE(r.ok()) << r.status().to_string();
    return *r;
  };
  auto check = [](const ops::TransposeWindowAttrs& w, int64_t out, int64_t pb, int64_t pe) {
    auto ax = ops::transpose_window_axis(w, 0, 3);
    ASSERT_TRUE(ax.ok()) << ax.status().to_string();
    EXPECT_EQ(ax->out, out);
    EXPECT_EQ(ax->pad_begin, pb);
    EXPECT_EQ(ax->pad_end, pe);
  };
  const vector<int64_t> s2 = {2};
  check(t(attrs({{"strides", s2}, {"pads", vector<int64_t>{1, 1}}})), 5, 1, 1);  // full = 2 * 2 + 3 = 7
  check(t(attrs({{"strides", s2}, {"output_shape", vector<int64_t>{8}}})), 8, 0, 0);
  check(t(attrs({{"strides", s2}, {"output_shape", vector<int64_t>{6}}})), 6, 1, 0);
  check(t(attrs({{"strides", s2}, {"output_shape", vector<int64_t>{1, 1, 6}}})), 6, 1, 0);
  check(t(attrs({{"strides", s2}, {"auto_pad", std::string("SAME_UPPER")}})), 6, 0, 1);
  check(t(attrs({{"strides", s2}, {"auto_pad", std::string("SAME_LOWER")}})), 6, 1, 0);
}

TEST(ConvGeometry, RejectsHostileAttributes) {
  const vector<ir::Attributes> bad = {
      attrs({{"kernel_shape", vector<int64_t>{3}}, {"strides", vector<int64_t>{0}}}),
      attrs({{"kernel_shape", vector<int64_t>{3}}, {"dilations", vector<int64_t>{-1}}}),
      attrs({{"kernel_shape", vector<int64_t>{3}}, {"pads", vector<int64_t>{-1, 0}}}),
      attrs({{"kernel_shape", vector<int64_t>{3}}, {"pads", vector<int64_t>{1}}}),
      attrs({{"kernel_shape", vector<int64_t>{3}}, {"pads", vector<int64_t>{int64_t{1} << 40, 0}}}),
      attrs({{"kernel_shape", vector<int64_t>{int64_t{1} << 30}}}),
      attrs({{"kernel_shape", vector<int64_t>{0}}}),
      attrs({{"kernel_shape", vector<int64_t>{3, 3}}}),
      attrs({{"kernel_shape", vector<int64_t>{3}}, {"auto_pad", std::string("SAME")}}),
      attrs({{"kernel_shape", vector<int64_t>{3}}, {"ceil_mode", int64_t{2}}}),
      attrs({}),
  };
  for (size_t i = 0; i < bad.size(); ++i) {
    EXPECT_FALSE(ops::read_window_attrs(bad[i], 1, std::nullopt).ok()) << "case " << i;
  }
  auto w = window(attrs({{"kernel_shape", vector<int64_t>{4}}}));
  EXPECT_FALSE(ops::forward_window_axis(w, 0, 3).ok());   // input shorter than the kernel
  EXPECT_FALSE(ops::forward_window_axis(w, 0, -1).ok());  // nonsense input size
}

// Depthwise (group = C) 1-D conv with dilation 2 and a bias, checked by hand.
TEST(Conv, GroupedDilatedWithBias) {
  Tensor x = f32({1, 2, 3, 4, 5, 10, 20, 30, 40, 50}, {1, 2, 5});
  Tensor w = f32({1, 1, 1, -1}, {2, 1, 2});
  Tensor b = f32({0.5f, -1.0f}, {2});
  NodeRun n("Conv", {x, w, b}, attrs({{"group", int64_t{2}}, {"dilations", vector<int64_t>{2}}}));
  auto y = n.run();
  ASSERT_TRUE(y.ok()) << y.status().to_string();
  expect_tensor(*y, {1, 2, 3}, {4.5, 6.5, 8.5, -21, -21, -21});
}

TEST(Conv, F16InputComputesInFloat) {
  Tensor x = Tensor::allocate(DType::kF16, {1, 1, 4});
  Tensor w = Tensor::allocate(DType::kF16, {1, 1, 2});
  for (int i = 0; i < 4; ++i) x.data<ir::Half>()[i].bits = ir::float_to_half(static_cast<float>(i) + 0.5f);
  for (int i = 0; i < 2; ++i) w.data<ir::Half>()[i].bits = ir::float_to_half(1.0f);
  auto y = NodeRun("Conv", {x, w}).run();
  ASSERT_TRUE(y.ok()) << y.status().to_string();
  EXPECT_EQ(y->dtype(), DType::kF16);
  expect_tensor(*y, {1, 1, 3}, {2, 4, 6});
}

// An independent naive 2-D grouped conv (explicit loops over h and w) to check the N-D kernel.
vector<double> naive_conv2d(const Tensor& x, const Tensor& w, int64_t group, int64_t sh, int64_t sw, int64_t dh,
                            int64_t dw, int64_t ph, int64_t pw, int64_t oh, int64_t ow) {
  const int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), wd = x.dim(3);
  const int64_t m = w.dim(0), cg = w.dim(1), kh = w.dim(2), kw = w.dim(3);
  vector<double> y;
  for (int64_t b = 0; b < n; ++b)
    for (int64_t o = 0; o < m; ++o)
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j) {
          double acc = 0;
          for (int64_t ci = 0; ci < cg; ++ci)
            for (int64_t u = 0; u < kh; ++u)
              for (int64_t v = 0; v < kw; ++v) {
                const int64_t hi = i * sh - ph + u * dh, wi = j * sw - pw + v * dw;
                if (hi < 0 || hi >= h || wi < 0 || wi >= wd) continue;
                const int64_t ch = (o / (m / group)) * cg + ci;
                acc += x.get_double(((b * c + ch) * h + hi) * wd + wi) * w.get_double(((o * cg + ci) * kh + u) * kw + v);
              }
          y.push_back(acc);
        }
  return y;
}

TEST(Conv, MatchesNaiveGroupedStridedDilated) {
  Tensor x = nn_test::random_f32({2, 4, 7, 6}, 7);
  Tensor w = nn_test::random_f32({6, 2, 3, 2}, 11);
  NodeRun n("Conv", {x, w},
            attrs({{"group", int64_t{2}}, {"strides", vector<int64_t>{2, 1}}, {"dilations", vector<int64_t>{1, 2}},
                   {"pads", vector<int64_t>{1, 0, 0, 1}}}));
  auto y = n.run();
  ASSERT_TRUE(y.ok()) << y.status().to_string();
  // H: (7 + 1 - 3) / 2 + 1 = 3; W: (6 + 1 - 3) / 1 + 1 = 5.
  expect_tensor(*y, {2, 6, 3, 5}, naive_conv2d(x, w, 2, 2, 1, 1, 2, 1, 0, 3, 5), 1e-5);
}

double dot(const Tensor& a, const Tensor& b) {
  double s = 0;
  for (int64_t i = 0; i < a.numel(); ++i) s += a.get_double(i) * b.get_double(i);
  return s;
}

// ConvTranspose is the adjoint of Conv with the same weight tensor and window:
// <Conv(x), r> == <x, ConvTranspose(r)>, which pins grouped, strided, dilated, padded transposes.
TEST(ConvTranspose, IsTheAdjointOfConv) {
  Tensor x = nn_test::random_f32({2, 4, 7, 6}, 3);
  Tensor w = nn_test::random_f32({6, 2, 3, 2}, 5);
  Tensor r = nn_test::random_f32({2, 6, 3, 5}, 9);
  ir::Attributes common = attrs({{"group", int64_t{2}}, {"strides", vector<int64_t>{2, 1}},
                                 {"dilations", vector<int64_t>{1, 2}}, {"pads", vector<int64_t>{1, 0, 0, 1}}});
  auto y = NodeRun("Conv", {x, w}, common).run();
  ASSERT_TRUE(y.ok()) << y.status().to_string();
  ir::Attributes t = common;
  t.set("output_padding", vector<int64_t>{1, 0});  // brings the transposed size back to 7 x 6
  auto xt = NodeRun("ConvTranspose", {r, w}, t).run();
  ASSERT_TRUE(xt.ok()) << xt.status().to_string();
  ASSERT_EQ(xt->dims(), x.dims());
  const double lhs = dot(*y, r), rhs = dot(x, *xt);
  EXPECT_NEAR(lhs, rhs, 1e-4 * (std::fabs(lhs) + 1));
}

TEST(Conv, RejectsMismatchedChannelsAndGroups) {
  Tensor x = f32(vector<float>(2 * 3 * 4), {2, 3, 4});
  EXPECT_FALSE(NodeRun("Conv", {x, f32(vector<float>(2 * 2 * 2), {2, 2, 2})}).run().ok());  // C 3 vs 2
  EXPECT_FALSE(NodeRun("Conv", {x, f32(vector<float>(2 * 1 * 2), {2, 1, 2})}, attrs({{"group", int64_t{3}}})).run().ok());
  EXPECT_FALSE(NodeRun("Conv", {x, f32(vector<float>(3), {3, 1, 1})}, attrs({{"group", int64_t{0}}})).run().ok());
  EXPECT_FALSE(NodeRun("Conv", {x, f32(vector<float>(3 * 3 * 9), {3, 3, 9})}).run().ok());  // kernel > input
  EXPECT_FALSE(NodeRun("Conv", {x, f32(vector<float>(3 * 3), {3, 3, 1}), f32({1}, {1})}).run().ok());  // bias
  EXPECT_FALSE(NodeRun("ConvTranspose", {x, f32(vector<float>(2 * 2 * 2), {2, 2, 2})}).run().ok());
}

TEST(MaxPool, IndicesInBothStorageOrders) {
  const vector<float> plane = {7, 2, 8, 4, 1, 3};
  vector<float> v = plane;
  v.insert(v.end(), plane.begin(), plane.end());
  Tensor x = f32(v, {1, 2, 2, 3});
  for (int64_t order : {0, 1}) {
    NodeRun n("MaxPool", {x}, attrs({{"kernel_shape", vector<int64_t>{2, 2}}, {"storage_order", order}}), 2);
    auto out = n.run_all();
    ASSERT_TRUE(out.ok()) << out.status().to_string();
    expect_tensor((*out)[0], {1, 2, 1, 2}, {7, 8, 7, 8});
    // (0, 2) is flat 2 in row-major order and 0 + 2 * H = 4 in column-major order.
    if (order == 0) expect_tensor((*out)[1], {1, 2, 1, 2}, {0, 2, 6, 8});
    else expect_tensor((*out)[1], {1, 2, 1, 2}, {0, 4, 6, 10});
  }
}

TEST(MaxPool, Int8PaddingNeverWins) {
  Tensor x = Tensor::from_vector(vector<int8_t>{-5, -3, -7}, {1, 1, 3});
  auto y = NodeRun("MaxPool", {x}, attrs({{"kernel_shape", vector<int64_t>{2}}, {"pads", vector<int64_t>{1, 1}}})).run();
  ASSERT_TRUE(y.ok()) << y.status().to_string();
  EXPECT_EQ(y->dtype(), DType::kI8);
  expect_tensor(*y, {1, 1, 4}, {-5, -3, -3, -7});
}

TEST(MaxPool, RejectsPadsAsLargeAsTheKernel) {
  Tensor x = f32(vector<float>(5), {1, 1, 5});
  EXPECT_FALSE(NodeRun("MaxPool", {x}, attrs({{"kernel_shape", vector<int64_t>{2}}, {"pads", vector<int64_t>{2, 0}}}))
                   .run()
                   .ok());
  EXPECT_FALSE(NodeRun("MaxPool", {x}, attrs({{"kernel_shape", vector<int64_t>{2}}, {"storage_order", int64_t{3}}}))
                   .run()
                   .ok());
  EXPECT_FALSE(NodeRun("MaxPool", {f32({1, 2}, {1, 2})}, attrs({{"kernel_shape", vector<int64_t>{1}}})).run().ok());
}

TEST(AveragePool, CeilModeWindowsCountOnlyInputAndPadding) {
  Tensor x = f32({1, 2, 3, 4, 5}, {1, 1, 5});
  auto run = [&](vector<int64_t> pads, int64_t include_pad) {
    auto y = NodeRun("AveragePool", {x},
                     attrs({{"kernel_shape", vector<int64_t>{2}}, {"strides", vector<int64_t>{2}}, {"pads", pads},
                            {"ceil_mode", int64_t{1}}, {"count_include_pad", include_pad}}))
                 .run();
    EXPECT_TRUE(y.ok()) << y.status().to_string();
    return y.ok() ? *y : Tensor();
  };
  // The last window [4, 5] reaches past the (empty) end padding: it averages one element.
  expect_tensor(run({0, 0}, 1), {1, 1, 3}, {1.5, 3.5, 5});
  expect_tensor(run({1, 1}, 1), {1, 1, 3}, {0.5, 2.5, 4.5});
  expect_tensor(run({1, 1}, 0), {1, 1, 3}, {1, 2.5, 4.5});
}

TEST(LpPool, TwoNormOfEachWindow) {
  auto y = NodeRun("LpPool", {f32({3, 4, 0, 5}, {1, 1, 4})},
                   attrs({{"kernel_shape", vector<int64_t>{2}}, {"strides", vector<int64_t>{2}}}))
               .run();
  ASSERT_TRUE(y.ok()) << y.status().to_string();
  expect_tensor(*y, {1, 1, 2}, {5, 5});
  auto g = NodeRun("GlobalLpPool", {f32({1, 2, 2, 4}, {1, 1, 2, 2})}).run();
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  expect_tensor(*g, {1, 1, 1, 1}, {5});
}

}  // namespace
}  // namespace nfuse
