// FP32 depthwise kernel family (src/kernels/f32-dwconv) against a direct loop in double, for every
// kernel f32_dwconv_select hands out on every ISA this machine runs (scalar always): 3x3 / 5x5,
// stride 1 / 2, dilation 1..4, output widths around the 8- and 16-lane vector steps, zero pads
// 0..beyond the window on each side (the kernels read the unpadded plane and handle the border),
// partial [y0, y1) row ranges, clamps and the in-store HardSwish. The columns past each input row
// and whole rows above and below the plane hold large finite values, so a kernel that uses
// anything outside the plane fails; guard values around and between output rows catch writes
// outside the [y0, y1) x [0, out_width) window.
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu_features.h"
#include "support/kernel_isas.h"
#include "kernels/f32-dwconv/f32_dwconv.h"
#include "support/tolerances_kernels.h"

namespace nfuse::kernels {
namespace {

constexpr uint32_t kSeed = 20261129;
constexpr float kGuard = -7.75e33f;  // never produced by the data below
constexpr size_t kGuardCount = 67;
constexpr size_t kOutPad = 3;  // out_stride = out_width + kOutPad
constexpr float kInf = std::numeric_limits<float>::infinity();

using test::available_isas;

struct Case {
  size_t k = 3, s = 1, d = 1;
  size_t out_h = 1, out_w = 1;
  size_t y0 = 0, y1 = 1;
  float min = -kInf, max = kInf;
  size_t pad_t = 0, pad_l = 0, pad_b = 0, pad_r = 0;  // the input is sized from out and these
  bool hswish = false;
  size_t zero_cols = 0;  // zero columns past the ones the window needs, inside the plane (the op's padded copies)
};

std::string describe(Isa isa, const Case& c) {
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "isa=%s seed=%u k=%zu s=%zu d=%zu out=%zux%zu rows=[%zu,%zu) min=%g max=%g pads=t%zu l%zu b%zu r%zu "
                "zero_cols=%zu%s",
                isa_name(isa), kSeed, c.k, c.s, c.d, c.out_h, c.out_w, c.y0, c.y1, static_cast<double>(c.min),
                static_cast<double>(c.max), c.pad_t, c.pad_l, c.pad_b, c.pad_r, c.zero_cols, c.hswish ? " hswish" : "");
  return buf;
}

// The padded extent the output needs, less the pads: the plane the kernel reads (0 when the
// pads alone cover the window, which the callers skip).
size_t plane_extent(size_t out, size_t k, size_t s, size_t d, size_t pad_a, size_t pad_b) {
  const size_t padded = (out - 1) * s + (k - 1) * d + 1;
  return padded > pad_a + pad_b ? padded - pad_a - pad_b : 0;
}

void run_case(Isa isa, const Case& c, std::mt19937& rng) {
  SCOPED_TRACE(describe(isa, c));
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::uniform_real_distribution<float> slack_dist(100.0f, 1000.0f);
  const size_t in_h = plane_extent(c.out_h, c.k, c.s, c.d, c.pad_t, c.pad_b);
  const size_t in_w = plane_extent(c.out_w, c.k, c.s, c.d, c.pad_l, c.pad_r) + c.zero_cols;
  ASSERT_GT(in_h, 0u);
  ASSERT_GT(in_w, 0u);
  const size_t in_stride = in_w + 5;  // garbage columns past each row
  constexpr size_t kGarbageRows = 6;  // above and below the plane
  std::vector<float> buf((in_h + 2 * kGarbageRows) * in_stride);
  for (float& v : buf) v = slack_dist(rng);
  const float* plane = buf.data() + kGarbageRows * in_stride;
  for (size_t r = 0; r < in_h; ++r) {
    for (size_t x = 0; x < in_w; ++x) buf[(kGarbageRows + r) * in_stride + x] = x + c.zero_cols < in_w ? dist(rng) : 0.0f;
  }
  std::vector<float> w(c.k * c.k);
  for (float& v : w) v = dist(rng);
  const float bias = dist(rng);
  const size_t out_stride = c.out_w + kOutPad;
  std::vector<float> out(c.out_h * out_stride + kGuardCount, kGuard);

  F32DwconvParams p;
  p.in = plane;
  p.in_stride = in_stride;
  p.in_height = in_h;
  p.in_width = in_w;
  p.pad_top = c.pad_t;
  p.pad_left = c.pad_l;
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
  const double ha = 1.0 / 6.0, hb = 0.5;
  if (c.hswish) {
    p.act = F32DwconvAct::kHardSwish;
    p.act_a = static_cast<float>(ha);
    p.act_b = static_cast<float>(hb);
  }
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
        const ptrdiff_t iy = static_cast<ptrdiff_t>(y * c.s + ky * c.d) - static_cast<ptrdiff_t>(c.pad_t);
        const ptrdiff_t ix = static_cast<ptrdiff_t>(x * c.s + kx * c.d) - static_cast<ptrdiff_t>(c.pad_l);
        if (iy < 0 || ix < 0 || iy >= static_cast<ptrdiff_t>(in_h) || ix >= static_cast<ptrdiff_t>(in_w)) continue;
        ref += static_cast<double>(w[ky * c.k + kx]) * static_cast<double>(plane[iy * in_stride + ix]);
      }
    }
    ref = std::fmin(std::fmax(ref, static_cast<double>(c.min)), static_cast<double>(c.max));
    if (c.hswish) ref *= std::fmin(std::fmax(ha * ref + hb, 0.0), 1.0);
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
  c.pad_t = c.pad_l = 4;  // and with a border
  c.pad_b = c.pad_r = 3;
  run_case(isa, c, rng);
}

// The border: pads 0 .. past the window on every side (asymmetric too), so output rows and
// columns whose window is partly or wholly outside the plane, at widths around the vector steps.
TEST_P(F32DwconvTest, Pads) {
  std::mt19937 rng(kSeed + 3);
  for (size_t k : {3, 5}) {
    for (size_t s : {1, 2}) {
      for (size_t d : {1, 2, 3}) {
        const size_t ek = (k - 1) * d + 1;
        for (size_t out_w : {1, 2, 7, 8, 9, 15, 16, 17, 33, 40}) {
          for (size_t pad : {size_t{1}, k / 2, (ek - 1) / 2, ek - 1, ek}) {
            for (size_t far : {size_t{0}, pad}) {
              Case c{k, s, d, 6, out_w, 0, 6};
              c.pad_t = c.pad_l = pad;
              c.pad_b = c.pad_r = far;
              if (plane_extent(c.out_h, k, s, d, c.pad_t, c.pad_b) == 0 ||
                  plane_extent(c.out_w, k, s, d, c.pad_l, c.pad_r) == 0) {
                continue;
              }
              run_case(GetParam(), c, rng);
              if (HasFatalFailure()) return;
            }
          }
        }
      }
    }
  }
  // Pads that differ between the axes, a strip of rows inside the padded border.
  Case c{3, 1, 1, 9, 37, 1, 8};
  c.pad_t = 0;
  c.pad_l = 2;
  c.pad_b = 2;
  c.pad_r = 1;
  run_case(GetParam(), c, rng);
  c = Case{5, 2, 1, 11, 29, 0, 2};  // only the top border rows
  c.pad_t = c.pad_l = c.pad_b = c.pad_r = 2;
  run_case(GetParam(), c, rng);
  c.y0 = 9;
  c.y1 = 11;  // only the bottom ones
  run_case(GetParam(), c, rng);
}

// The op's padded copies of small planes: pads 0 and a plane whose rows run 32+ zeros past what
// the window needs, so every step, a partial last one included, reads whole vectors.
TEST_P(F32DwconvTest, ZeroSlackPlanes) {
  std::mt19937 rng(kSeed + 5);
  for (size_t k : {3, 5}) {
    for (size_t s : {1, 2}) {
      for (size_t out_w : {1, 5, 7, 14, 16, 28, 33}) {
        for (size_t slack : {32, 45}) {
          Case c{k, s, 1, 5, out_w, 0, 5};
          c.zero_cols = slack;
          c.hswish = out_w % 2 == 1;
          run_case(GetParam(), c, rng);
          c.y0 = 1;
          c.y1 = 4;
          run_case(GetParam(), c, rng);
          if (HasFatalFailure()) return;
        }
      }
    }
  }
}

// HardSwish in the store, after the clamp (MobileNetV3's Conv + HardSwish).
TEST_P(F32DwconvTest, HardSwish) {
  std::mt19937 rng(kSeed + 4);
  for (size_t k : {3, 5}) {
    for (size_t s : {1, 2}) {
      for (size_t out_w : {5, 16, 23, 48}) {
        Case c{k, s, 1, 7, out_w, 0, 7};
        c.pad_t = c.pad_l = c.pad_b = c.pad_r = k / 2;
        c.hswish = true;
        run_case(GetParam(), c, rng);
        c.min = -0.5f;
        c.max = 0.75f;
        run_case(GetParam(), c, rng);
        if (HasFatalFailure()) return;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Isas, F32DwconvTest, ::testing::ValuesIn(available_isas()),
                         [](const ::testing::TestParamInfo<Isa>& info) { return std::string(isa_name(info.param)); });

}  // namespace
}  // namespace nfuse::kernels
