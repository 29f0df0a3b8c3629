// FP32 depthwise kernel family (src/kernels/f32-dwconv) against a direct loop in double, for every
// kernel f32_dwconv_select hands out on every ISA this machine runs (scalar always): 3x3 / 5x5,
// stride 1 / 2, dilation 1..4, output widths around the 8- and 16-lane vector steps, partial
// [y0, y1) row ranges and clamps. The slack past each padded row holds large finite values, so a
// kernel that uses (not merely reads) them fails; guard values around and between output rows
// catch writes outside the [y0, y1) x [0, out_width) window.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu_features.h"
#include "kernels/f32-dwconv/f32_dwconv.h"
#include "support/tolerances_kernels.h"

namespace nfuse::kernels {
namespace {

constexpr uint32_t kSeed = 20261129;
constexpr float kGuard = -7.75e33f;  // never produced by the data below
constexpr size_t kGuardCount = 67;
constexpr size_t kOutPad = 3;  // out_stride = out_width + kOutPad
constexpr float kInf = std::numeric_limits<float>::infinity();

std::vector<Isa> available_isas() {
  std::vector<Isa> isas;
  for (Isa isa : {Isa::kScalar, Isa::kAvx2Fma, Isa::kAvx512, Isa::kNeon}) {
    if (isa_supported(isa)) isas.push_back(isa);
  }
  return isas;
}

struct Case {
  size_t k = 3, s = 1, d = 1;
  size_t out_h = 1, out_w = 1;
  size_t y0 = 0, y1 = 1;
  float min = -kInf, max = kInf;
};

std::string describe(Isa isa, const Case& c) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "isa=%s seed=%u k=%zu s=%zu d=%zu out=%zux%zu rows=[%zu,%zu) min=%g max=%g",
                isa_name(isa), kSeed, c.k, c.s, c.d, c.out_h, c.out_w, c.y0, c.y1, static_cast<double>(c.min),
                static_cast<double>(c.max));
  return buf;
}

void run_case(Isa isa, const Case& c, std::mt19937& rng) {
  SCOPED_TRACE(describe(isa, c));
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::uniform_real_distribution<float> slack_dist(100.0f, 1000.0f);
  const size_t rows = (c.out_h - 1) * c.s + (c.k - 1) * c.d + 1;
  const size_t cols = (c.out_w - 1) * c.s + (c.k - 1) * c.d + 1;
  const size_t in_stride = cols + kF32DwconvRowSlack + 5;  // deliberately not a multiple of 16
  std::vector<float> in(rows * in_stride);
  for (size_t r = 0; r < rows; ++r) {
    for (size_t x = 0; x < in_stride; ++x) in[r * in_stride + x] = x < cols ? dist(rng) : slack_dist(rng);
  }
  std::vector<float> w(c.k * c.k);
  for (float& v : w) v = dist(rng);
  const float bias = dist(rng);
  const size_t out_stride = c.out_w + kOutPad;
  std::vector<float> out(c.out_h * out_stride + kGuardCount, kGuard);

  F32DwconvParams p;
  p.in = in.data();
  p.in_stride = in_stride;
  p.w = w.data();
  p.bias = bias;
  p.out = out.data();
  p.out_stride = out_stride;
  p.out_width = c.out_w;
  p.kh = p.kw = c.k;
  p.sh = p.sw = c.s;
  p.dh = p.dw = c.d;
  p.min = c.min;
  p.max = c.max;
  const F32DwconvFn fn = f32_dwconv_select(isa, c.k, c.k, c.s, c.s, c.d, c.d);
  ASSERT_NE(fn, nullptr);
  fn(p, c.y0, c.y1);

  for (size_t i = 0; i < out.size(); ++i) {
    const size_t y = i / out_stride, x = i % out_stride;
    const bool inside = y >= c.y0 && y < c.y1 && x < c.out_w && y < c.out_h;
    if (!inside) {
      ASSERT_EQ(out[i], kGuard) << "write outside the output window at index " << i;
      continue;
    }
    double ref = bias;
    for (size_t ky = 0; ky < c.k; ++ky) {
      for (size_t kx = 0; kx < c.k; ++kx) {
        ref += static_cast<double>(w[ky * c.k + kx]) *
               static_cast<double>(in[(y * c.s + ky * c.d) * in_stride + x * c.s + kx * c.d]);
      }
    }
    ref = std::fmin(std::fmax(ref, static_cast<double>(c.min)), static_cast<double>(c.max));
    ASSERT_NEAR(out[i], ref, test::f32_gemm_tol(ref, c.k * c.k)) << "first mismatch at y=" << y << " x=" << x;
  }
}

class F32DwconvTest : public ::testing::TestWithParam<Isa> {};

TEST_P(F32DwconvTest, ShapesStridesDilations) {
  std::mt19937 rng(kSeed);
  for (size_t k : {3, 5}) {
    for (size_t s : {1, 2}) {
      for (size_t d : {1, 2, 3, 4}) {
        for (size_t out_w : {1, 7, 8, 9, 15, 16, 17, 31, 32, 33, 47, 97}) {
          for (size_t out_h : {1, 2, 5}) {
            Case c{k, s, d, out_h, out_w, 0, out_h};
            run_case(GetParam(), c, rng);
            if (HasFatalFailure()) return;
          }
        }
      }
    }
  }
}

TEST_P(F32DwconvTest, RowRangesAndClamps) {
  std::mt19937 rng(kSeed + 1);
  for (size_t k : {3, 5}) {
    for (size_t s : {1, 2}) {
      for (size_t d : {1, 2}) {
        Case c{k, s, d, 7, 23, 2, 5};  // a strip in the middle: rows outside stay untouched
        run_case(GetParam(), c, rng);
        c.y0 = 3;
        c.y1 = 3;  // an empty range writes nothing
        run_case(GetParam(), c, rng);
        c = Case{k, s, d, 4, 19, 0, 4, -0.25f, 0.5f};
        run_case(GetParam(), c, rng);
        c.min = 0.0f;
        c.max = kInf;
        run_case(GetParam(), c, rng);
        if (HasFatalFailure()) return;
      }
    }
  }
}

TEST_P(F32DwconvTest, GenericShapes) {  // what no fixed kernel covers falls back to the scalar loop
  std::mt19937 rng(kSeed + 2);
  const Isa isa = GetParam();
  EXPECT_EQ(f32_dwconv_select(isa, 7, 7, 1, 1, 1, 1), f32_dwconv__scalar);
  EXPECT_EQ(f32_dwconv_select(isa, 3, 3, 3, 3, 1, 1), f32_dwconv__scalar);
  EXPECT_EQ(f32_dwconv_select(isa, 3, 5, 1, 1, 1, 1), f32_dwconv__scalar);
  Case c{7, 3, 2, 3, 11, 0, 3};
  run_case(isa, c, rng);
}

INSTANTIATE_TEST_SUITE_P(Isas, F32DwconvTest, ::testing::ValuesIn(available_isas()),
                         [](const ::testing::TestParamInfo<Isa>& info) { return std::string(isa_name(info.param)); });

}  // namespace
}  // namespace nfuse::kernels
