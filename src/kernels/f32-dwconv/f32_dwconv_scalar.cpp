#include <algorithm>

#include "kernels/f32-dwconv/f32_dwconv.h"

namespace nfuse::kernels {

void f32_dwconv__scalar(const F32DwconvParams& p, size_t y0, size_t y1) {
  for (size_t y = y0; y < y1; ++y) {
    float* out = p.out + y * p.out_stride;
    for (size_t x = 0; x < p.out_width; ++x) {
      float acc = p.bias;
      for (size_t ky = 0; ky < p.kh; ++ky) {
        const float* row = p.in + (y * p.sh + ky * p.dh) * p.in_stride + x * p.sw;
        for (size_t kx = 0; kx < p.kw; ++kx) acc += p.w[ky * p.kw + kx] * row[kx * p.dw];
      }
      out[x] = std::min(std::max(acc, p.min), p.max);
    }
  }
}

namespace {

// A fixed-shape scalar loop: K and S are compile-time constants so the taps stay in registers;
// the dilation is a run-time step.
template <size_t K, size_t S>
void dwconv_fixed(const F32DwconvParams& p, size_t y0, size_t y1) {
  float w[K * K];
  for (size_t i = 0; i < K * K; ++i) w[i] = p.w[i];
  const size_t dh = p.dh, dw = p.dw;
  for (size_t y = y0; y < y1; ++y) {
    float* out = p.out + y * p.out_stride;
    const float* in = p.in + y * S * p.in_stride;
    for (size_t x = 0; x < p.out_width; ++x) {
      float acc = p.bias;
      for (size_t ky = 0; ky < K; ++ky) {
        const float* row = in + ky * dh * p.in_stride + x * S;
        for (size_t kx = 0; kx < K; ++kx) acc += w[ky * K + kx] * row[kx * dw];
      }
      out[x] = std::min(std::max(acc, p.min), p.max);
    }
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
