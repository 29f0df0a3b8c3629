// The channel-block depthwise kernels (src/kernels/f32-dwconv/f32_dwconv_c16.h) against a direct
// loop in double: every kernel this machine runs (scalar always, AVX-512 where present), 1..16
// channels, planes 1..20 wide and high, windows 1..5 in each direction, strides 1..3, dilations
// 1..2, pads up to the window on each side (including pads that alone cover a window), with and
// without bias and clamps. Input planes sit further apart than their size with large values
// between them, so a kernel that reads outside a plane fails; output planes are apart too with
// guards between them and past the last, which must be left as they were.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels/f32-dwconv/f32_dwconv_c16.h"

namespace nfuse::kernels {
namespace {

constexpr uint32_t kSeed = 20261207;
constexpr float kGuard = -7.75e33f;
constexpr float kOutside = 3.5e30f;  // between input planes: any read of it ruins the result

struct AlignedFloats {
  explicit AlignedFloats(size_t n)
      : p(static_cast<float*>(std::aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64))) {}
  ~AlignedFloats() { std::free(p); }
  AlignedFloats(const AlignedFloats&) = delete;
  AlignedFloats& operator=(const AlignedFloats&) = delete;
  float* p;
};

std::vector<F32DwconvC16Fn> kernels_here() {
  std::vector<F32DwconvC16Fn> out{f32_dwconv_c16__scalar};
  if (F32DwconvC16Fn fast = f32_dwconv_c16_select(Isa::kAvx512)) out.push_back(fast);
  return out;
}

TEST(F32DwconvC16, MatchesADirectLoopOnRandomShapes) {
  std::mt19937 rng(kSeed);
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  auto pick = [&rng](size_t lo, size_t hi) { return std::uniform_int_distribution<size_t>(lo, hi)(rng); };
  size_t shapes = 0, checked = 0;
  const std::vector<F32DwconvC16Fn> kernels = kernels_here();
  for (int trial = 0; trial < 400; ++trial) {
    F32DwconvC16Params p;
    p.channels = pick(1, 16);
    p.kh = pick(1, 5);
    p.kw = pick(1, 5);
    p.sh = pick(1, 3);
    p.sw = pick(1, 3);
    p.dh = pick(1, 2);
    p.dw = pick(1, 2);
    p.h = pick(1, 20);
    p.w = pick(1, 20);
    p.pad_top = pick(0, (p.kh - 1) * p.dh);
    p.pad_left = pick(0, (p.kw - 1) * p.dw);
    const size_t pad_bottom = pick(0, (p.kh - 1) * p.dh), pad_right = pick(0, (p.kw - 1) * p.dw);
    const size_t span_h = (p.kh - 1) * p.dh + 1, span_w = (p.kw - 1) * p.dw + 1;
    if (p.h + p.pad_top + pad_bottom < span_h || p.w + p.pad_left + pad_right < span_w) continue;
    ++shapes;
    p.out_h = (p.h + p.pad_top + pad_bottom - span_h) / p.sh + 1;
    p.out_w = (p.w + p.pad_left + pad_right - span_w) / p.sw + 1;
    p.in_plane = p.h * p.w + pick(0, 9);
    p.out_plane = p.out_h * p.out_w + pick(0, 9);
    const bool with_bias = pick(0, 1) == 1;
    if (pick(0, 1) == 1) {
      p.min = -0.25f;
      p.max = 0.5f;
    }
    std::vector<float> in(p.channels * p.in_plane + 7, kOutside), weights(p.channels * p.kh * p.kw), bias(p.channels);
    for (size_t c = 0; c < p.channels; ++c)
      for (size_t i = 0; i < p.h * p.w; ++i) in[c * p.in_plane + i] = value(rng);
    for (float& v : weights) v = value(rng);
    for (float& v : bias) v = value(rng);
    AlignedFloats taps16(p.kh * p.kw * 16);
    f32_dwconv_c16_pack(weights.data(), p.channels, p.kh * p.kw, taps16.p);
    p.in = in.data();
    p.taps16 = taps16.p;
    p.bias = with_bias ? bias.data() : nullptr;

    // The direct loop, in double.
    std::vector<double> want(p.channels * p.out_h * p.out_w);
    for (size_t c = 0; c < p.channels; ++c)
      for (size_t y = 0; y < p.out_h; ++y)
        for (size_t x = 0; x < p.out_w; ++x) {
          double acc = with_bias ? bias[c] : 0.0;
          for (size_t ky = 0; ky < p.kh; ++ky)
            for (size_t kx = 0; kx < p.kw; ++kx) {
              const long iy = static_cast<long>(y * p.sh + ky * p.dh) - static_cast<long>(p.pad_top);
              const long ix = static_cast<long>(x * p.sw + kx * p.dw) - static_cast<long>(p.pad_left);
              if (iy < 0 || ix < 0 || iy >= static_cast<long>(p.h) || ix >= static_cast<long>(p.w)) continue;
              acc += static_cast<double>(weights[c * p.kh * p.kw + ky * p.kw + kx]) *
                     in[c * p.in_plane + static_cast<size_t>(iy) * p.w + static_cast<size_t>(ix)];
            }
          want[(c * p.out_h + y) * p.out_w + x] = std::min<double>(p.max, std::max<double>(p.min, acc));
        }

    for (F32DwconvC16Fn fn : kernels) {
      SCOPED_TRACE(::testing::Message() << "kernel " << (fn == f32_dwconv_c16__scalar ? "scalar" : "avx512")
                                        << " trial " << trial << " seed " << kSeed << " channels " << p.channels
                                        << " plane " << p.h << "x" << p.w << " window " << p.kh << "x" << p.kw
                                        << " stride " << p.sh << "," << p.sw << " dilation " << p.dh << "," << p.dw
                                        << " pads t" << p.pad_top << " l" << p.pad_left << " out " << p.out_h << "x"
                                        << p.out_w);
      std::vector<float> out(p.channels * p.out_plane + 16, kGuard);
      AlignedFloats scratch(f32_dwconv_c16_scratch_floats(p));
      p.out = out.data();
      p.scratch = scratch.p;
      fn(p);
      for (size_t c = 0; c < p.channels; ++c) {
        for (size_t i = 0; i < p.out_plane; ++i) {
          const float got = out[c * p.out_plane + i];
          if (i >= p.out_h * p.out_w) {
            ASSERT_EQ(got, kGuard) << "wrote past channel " << c << "'s output at " << i;
            continue;
          }
          const double w = want[c * p.out_h * p.out_w + i];
          ASSERT_NEAR(got, w, 1e-5 * (1.0 + std::fabs(w))) << "channel " << c << " output " << i;
        }
      }
      for (size_t i = p.channels * p.out_plane; i < out.size(); ++i)
        ASSERT_EQ(out[i], kGuard) << "wrote past the block";
      ++checked;
    }
  }
  EXPECT_GT(shapes, 300u);  // most random shapes are valid
  EXPECT_EQ(checked, shapes * kernels.size());
}

}  // namespace
}  // namespace nfuse::kernels
