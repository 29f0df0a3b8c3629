// FP32 im2col (src/kernels/f32-im2col) on every ISA this machine runs against a direct loop:
// kernel sizes 1..6, strides 1..3, pads 0..3, dilations 1..2, odd planes, strips of pixels that
// start mid-row and span rows (p0, np), panel widths 8..32 and the plain-matrix form (nr = np),
// K blocks that start inside a channel, ones rows, and rows read from a line buffer that holds
// only some of the image's rows (plane_stride, row_base). Guard values past the written panels
// catch overruns; every element of every panel (padding columns included) is checked.
#include <gtest/gtest.h>

#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu_features.h"
#include "kernels/f32-im2col/f32_im2col.h"

namespace nfuse::kernels {
namespace {

constexpr uint32_t kSeed = 20261129;
constexpr float kGuard = -7.75e33f;

struct Case {
  size_t c, h, w, k, s, pad, d;
  size_t k0, kc, p0, np, nr;
  size_t kx_rows;  // rows at or past it are ones
};

float expected(const F32Im2colGeometry& g, const std::vector<float>& x, const Case& c, size_t k, size_t p) {
  if (k >= c.kx_rows) return 1.0f;
  const size_t khw = g.kh * g.kw, ic = k / khw, r = k % khw, ky = r / g.kw, kx = r % g.kw;
  const size_t oy = p / g.wo, ox = p % g.wo;
  const long long iy = static_cast<long long>(oy * g.sh + ky * g.dh) - static_cast<long long>(g.pad_top);
  const long long ix = static_cast<long long>(ox * g.sw + kx * g.dw) - static_cast<long long>(g.pad_left);
  if (iy < 0 || ix < 0 || iy >= static_cast<long long>(g.h) || ix >= static_cast<long long>(g.w)) return 0.0f;
  return x[(ic * g.h + static_cast<size_t>(iy)) * g.w + static_cast<size_t>(ix)];
}

// `window_rows` > 0: the kernel reads a line buffer holding image rows [row_base, row_base +
// window_rows) of every channel, planes window_rows rows apart (the rest of the image poisoned
// away), as a fused group's strips do.
void run_case(F32Im2colFn fn, const char* isa, const Case& c, std::mt19937& rng, size_t row_base = 0,
              size_t window_rows = 0) {
  char what[200];
  std::snprintf(what, sizeof what, "isa=%s seed=%u c=%zu %zux%zu k=%zu s=%zu pad=%zu d=%zu k0=%zu kc=%zu p0=%zu np=%zu nr=%zu",
                isa, kSeed, c.c, c.h, c.w, c.k, c.s, c.pad, c.d, c.k0, c.kc, c.p0, c.np, c.nr);
  SCOPED_TRACE(what);
  const size_t ek = (c.k - 1) * c.d + 1;
  ASSERT_GE(c.h + 2 * c.pad, ek);
  F32Im2colGeometry g{c.h, c.w, (c.h + 2 * c.pad - ek) / c.s + 1, (c.w + 2 * c.pad - ek) / c.s + 1, c.k, c.k, c.s,
                      c.s, c.d, c.d, c.pad, c.pad};
  ASSERT_LE(c.p0 + c.np, g.ho * g.wo);
  std::vector<float> x(c.c * c.h * c.w);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (float& v : x) v = dist(rng);
  const size_t panels = (c.np + c.nr - 1) / c.nr;
  std::vector<float> dst(panels * c.kc * c.nr + 37, kGuard);
  std::vector<float> buffer;
  const float* src = x.data();
  if (window_rows > 0) {
    ASSERT_LE(row_base + window_rows, c.h);
    buffer.assign(c.c * window_rows * c.w, kGuard);
    for (size_t ch = 0; ch < c.c; ++ch)
      for (size_t r = 0; r < window_rows; ++r)
        for (size_t i = 0; i < c.w; ++i) buffer[(ch * window_rows + r) * c.w + i] = x[(ch * c.h + row_base + r) * c.w + i];
    g.plane_stride = window_rows * c.w;
    g.row_base = row_base;
    src = buffer.data();
  }
  fn(g, src, c.kx_rows, c.k0, c.kc, c.p0, c.np, c.nr, dst.data());
  size_t bad = 0;
  for (size_t pn = 0; pn < panels; ++pn)
    for (size_t kk = 0; kk < c.kc; ++kk)
      for (size_t jj = 0; jj < c.nr; ++jj) {
        const size_t q = pn * c.nr + jj;
        const float want = q < c.np ? expected(g, x, c, c.k0 + kk, c.p0 + q) : 0.0f;
        const float got = dst[pn * c.kc * c.nr + kk * c.nr + jj];
        if (got != want && bad++ < 5) ADD_FAILURE() << "panel " << pn << " k " << c.k0 + kk << " col " << jj << ": got " << got << ", want " << want;
      }
  for (size_t i = panels * c.kc * c.nr; i < dst.size(); ++i)
    if (dst[i] != kGuard && bad++ < 5) ADD_FAILURE() << "write past the panels at " << i;
  EXPECT_EQ(bad, 0u);
}

std::vector<std::pair<F32Im2colFn, const char*>> variants() {
  std::vector<std::pair<F32Im2colFn, const char*>> v{{f32_im2col__scalar, "scalar"}};
#if defined(__x86_64__)
  if (isa_supported(Isa::kAvx2Fma)) v.push_back({f32_im2col__avx2, "avx2"});
  if (isa_supported(Isa::kAvx512)) v.push_back({f32_im2col__avx512, "avx512"});
#endif
  v.push_back({f32_im2col_select(), "selected"});
  return v;
}

TEST(F32Im2col, WindowsStridesPadsDilations) {
  std::mt19937 rng(kSeed);
  for (const auto& [fn, isa] : variants()) {
    for (size_t k : {1, 2, 3, 5, 6}) {
      for (size_t s : {1, 2, 3}) {
        for (size_t pad : {0, 1, 3}) {
          if (pad >= k + 1) continue;
          const size_t h = 11, w = 37, ek = k;
          const size_t ho = (h + 2 * pad - ek) / s + 1, wo = (w + 2 * pad - ek) / s + 1;
          run_case(fn, isa, {2, h, w, k, s, pad, 1, 0, 2 * k * k, 0, ho * wo, 32, 2 * k * k}, rng);
        }
      }
    }
    run_case(fn, isa, {3, 9, 20, 3, 1, 2, 2, 0, 27, 0, 9 * 20, 16, 27}, rng);  // dilation 2
    run_case(fn, isa, {2, 13, 41, 3, 2, 1, 2, 0, 18, 0, 6 * 20, 8, 18}, rng);  // dilation 2, stride 2
  }
}

TEST(F32Im2col, StripsBlocksAndOnes) {
  std::mt19937 rng(kSeed + 1);
  for (const auto& [fn, isa] : variants()) {
    // 6x6 stride 2 pad 2 on 3 channels (a YOLO stem): strips starting mid-row, spanning rows.
    for (size_t p0 : {0, 7, 31, 100}) {
      for (size_t np : {1, 33, 70}) run_case(fn, isa, {3, 30, 34, 6, 2, 2, 1, 5, 50, p0, np, 32, 108}, rng);
    }
    run_case(fn, isa, {4, 8, 9, 3, 1, 1, 1, 4, 33, 3, 60, 60, 36}, rng);  // plain matrix (nr = np), K block mid-channel
    run_case(fn, isa, {2, 8, 9, 3, 1, 1, 1, 10, 9, 0, 72, 16, 18}, rng);  // ones rows past kx_rows
  }
}

// Strips whose input rows come from a line buffer: a 3x3 stride-1 pad-1 window over output rows
// 4..6 reads image rows 3..7, a stride-2 one over output rows 2..3 reads rows 3..7 (the buffer
// holds 3..7 only), a 1x1 over rows 5..6 (no direct copy: the buffer is not the image).
TEST(F32Im2col, RowsFromALineBuffer) {
  std::mt19937 rng(kSeed + 2);
  for (const auto& [fn, isa] : variants()) {
    run_case(fn, isa, {3, 12, 21, 3, 1, 1, 1, 0, 27, 4 * 21, 3 * 21, 16, 27}, rng, 3, 5);
    run_case(fn, isa, {2, 12, 21, 3, 2, 1, 1, 0, 18, 2 * 11, 2 * 11, 8, 18}, rng, 3, 5);
    run_case(fn, isa, {4, 12, 21, 1, 1, 0, 1, 0, 4, 5 * 21 + 3, 2 * 21 - 3, 32, 4}, rng, 5, 2);
  }
}

}  // namespace
}  // namespace nfuse::kernels
