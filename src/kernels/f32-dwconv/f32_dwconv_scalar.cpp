// Portable depthwise kernels: the generic oracle loop and fixed-shape variants whose interior
// (every tap inside the plane) runs with compile-time K and S; border outputs skip the taps that
// fall outside the plane.
#include <algorithm>

#include "kernels/f32-dwconv/f32_dwconv.h"

namespace nfuse::kernels {
namespace {

inline float finish(const F32DwconvParams& p, float acc) {
  float v = std::min(std::max(acc, p.min), p.max);
  if (p.act == F32DwconvAct::kHardSwish) {
    float t = p.act_a * v + p.act_b;
    t = t < 0.0f ? 0.0f : t;
    t = t > 1.0f ? 1.0f : t;
    v *= t;
  }
  return v;
}

// One output with only the taps [ky, kx] ranges inside the plane.
inline float border_output(const F32DwconvParams& p, size_t kw, const F32DwconvTapRange& ry, size_t y, size_t x,
                           size_t sh, size_t sw) {
  const F32DwconvTapRange rx = f32_dwconv_taps(x, kw, sw, p.dw, p.pad_left, p.in_width);
  float acc = p.bias;
  for (size_t ky = ry.lo; ky < ry.hi; ++ky) {
    const float* row = p.in + (y * sh + ky * p.dh - p.pad_top) * p.in_stride;
    for (size_t kx = rx.lo; kx < rx.hi; ++kx) acc += p.w[ky * kw + kx] * row[x * sw + kx * p.dw - p.pad_left];
  }
  return acc;
}

}  // namespace

void f32_dwconv__scalar(const F32DwconvParams& p, size_t y0, size_t y1) {
  for (size_t y = y0; y < y1; ++y) {
    float* out = p.out + y * p.out_stride;
    const F32DwconvTapRange ry = f32_dwconv_taps(y, p.kh, p.sh, p.dh, p.pad_top, p.in_height);
    for (size_t x = 0; x < p.out_width; ++x) out[x] = finish(p, border_output(p, p.kw, ry, y, x, p.sh, p.sw));
  }
}

namespace {

// A fixed-shape scalar loop: K and S are compile-time constants so the taps stay in registers;
// the dilation is a run-time step. Outputs whose window is inside the plane take the unchecked
// path; the rest (a few rows and columns at the border) the checked one.
template <size_t K, size_t S>
void dwconv_fixed(const F32DwconvParams& p, size_t y0, size_t y1) {
  float w[K * K];
  for (size_t i = 0; i < K * K; ++i) w[i] = p.w[i];
  const size_t dh = p.dh, dw = p.dw;
  // Interior columns [x_lo, x_hi): x*S >= pad_left and x*S + (K-1)*dw - pad_left < in_width.
  const size_t x_lo = std::min(p.out_width, (p.pad_left + S - 1) / S);
  const size_t span = (K - 1) * dw;
  size_t x_hi = p.in_width + p.pad_left > span ? (p.in_width + p.pad_left - span - 1) / S + 1 : 0;
  x_hi = std::max(x_lo, std::min(x_hi, p.out_width));
  for (size_t y = y0; y < y1; ++y) {
    float* out = p.out + y * p.out_stride;
    const F32DwconvTapRange ry = f32_dwconv_taps(y, K, S, dh, p.pad_top, p.in_height);
    if (ry.lo != 0 || ry.hi != K) {
      for (size_t x = 0; x < p.out_width; ++x) out[x] = finish(p, border_output(p, K, ry, y, x, S, S));
      continue;
    }
    const float* in = p.in + (y * S - p.pad_top) * p.in_stride;
    for (size_t x = 0; x < x_lo; ++x) out[x] = finish(p, border_output(p, K, ry, y, x, S, S));
    for (size_t x = x_lo; x < x_hi; ++x) {
      float acc = p.bias;
      for (size_t ky = 0; ky < K; ++ky) {
        const float* row = in + ky * dh * p.in_stride + x * S - p.pad_left;
        for (size_t kx = 0; kx < K; ++kx) acc += w[ky * K + kx] * row[kx * dw];
      }
      out[x] = finish(p, acc);
    }
    for (size_t x = x_hi; x < p.out_width; ++x) out[x] = finish(p, border_output(p, K, ry, y, x, S, S));
  }
}

}  // namespace

void f32_dwconv3x3s1__scalar(const F32DwconvParams& p, size_t y0, size_t y1) { dwconv_fixed<3, 1>(p, y0, y1); }
void f32_dwconv3x3s2__scalar(const F32DwconvParams& p, size_t y0, size_t y1) { dwconv_fixed<3, 2>(p, y0, y1); }
void f32_dwconv5x5s1__scalar(const F32DwconvParams& p, size_t y0, size_t y1) { dwconv_fixed<5, 1>(p, y0, y1); }
void f32_dwconv5x5s2__scalar(const F32DwconvParams& p, size_t y0, size_t y1) { dwconv_fixed<5, 2>(p, y0, y1); }

F32DwconvFn f32_dwconv_select(Isa isa, size_t kh, size_t kw, size_t sh, size_t sw, size_t dh, size_t dw) {
  if (kh != kw || sh != sw || dh == 0 || dw == 0 || (kh != 3 && kh != 5) || (sh != 1 && sh != 2)) {
    return f32_dwconv__scalar;
  }
  const int idx = (kh == 5 ? 2 : 0) + (sh == 2 ? 1 : 0);
#if defined(__x86_64__)
#if defined(NFUSE_HAVE_AVX512_KERNELS)
  if (isa == Isa::kAvx512) {
    static constexpr F32DwconvFn kAvx512[] = {f32_dwconv3x3s1__avx512, f32_dwconv3x3s2__avx512,
                                              f32_dwconv5x5s1__avx512, f32_dwconv5x5s2__avx512};
    return kAvx512[idx];
  }
#endif
  if (isa == Isa::kAvx2Fma || isa == Isa::kAvx512) {
    static constexpr F32DwconvFn kAvx2[] = {f32_dwconv3x3s1__avx2, f32_dwconv3x3s2__avx2, f32_dwconv5x5s1__avx2,
                                            f32_dwconv5x5s2__avx2};
    return kAvx2[idx];
  }
#else
  (void)isa;
#endif
  static constexpr F32DwconvFn kScalar[] = {f32_dwconv3x3s1__scalar, f32_dwconv3x3s2__scalar,
                                            f32_dwconv5x5s1__scalar, f32_dwconv5x5s2__scalar};
  return kScalar[idx];
}

}  // namespace nfuse::kernels
