// AVX-512F depthwise kernels (this file alone is built with -mavx512f -mavx2 -mfma).

// GCC 12's _mm512_max_ps/_mm512_min_ps pass _mm512_undefined_ps() (a self-initialised variable)
// as the unused merge source, which -Wmaybe-uninitialized reports once inlined (GCC bug 105593).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include "kernels/f32-dwconv/f32_dwconv.h"

namespace nfuse::kernels {
namespace {

// Elements p[0], p[2], ..., p[30] (reads p[0..31]).
inline __m512 load_even(const float* p) {
  const __m512i idx = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  return _mm512_permutex2var_ps(_mm512_loadu_ps(p), idx, _mm512_loadu_ps(p + 16));
}

// 16 outputs per step, each from K x K taps at stride S and dilation (p.dh, p.dw). The last,
// partial step computes all 16 lanes (its loads stay inside the kF32DwconvRowSlack zeros past
// the row) and stores only the valid ones, so there is no scalar tail.
template <size_t K, size_t S>
void dwconv_avx512(const F32DwconvParams& p, size_t y0, size_t y1) {
  __m512 w[K * K];
  for (size_t i = 0; i < K * K; ++i) w[i] = _mm512_set1_ps(p.w[i]);
  const __m512 vbias = _mm512_set1_ps(p.bias);
  const __m512 vmin = _mm512_set1_ps(p.min);
  const __m512 vmax = _mm512_set1_ps(p.max);
  const size_t width = p.out_width;
  const size_t dh = p.dh, dw = p.dw;
  for (size_t y = y0; y < y1; ++y) {
    float* out = p.out + y * p.out_stride;
    const float* in = p.in + y * S * p.in_stride;
    for (size_t x = 0; x < width; x += 16) {
      __m512 acc0 = vbias;
      __m512 acc1 = _mm512_setzero_ps();
#pragma GCC unroll 5
      for (size_t ky = 0; ky < K; ++ky) {
        const float* row = in + ky * dh * p.in_stride + x * S;
#pragma GCC unroll 5
        for (size_t kx = 0; kx < K; ++kx) {
          const __m512 v = S == 1 ? _mm512_loadu_ps(row + kx * dw) : load_even(row + kx * dw);
          if ((ky + kx) % 2 == 0) {
            acc0 = _mm512_fmadd_ps(w[ky * K + kx], v, acc0);
          } else {
            acc1 = _mm512_fmadd_ps(w[ky * K + kx], v, acc1);
          }
        }
      }
      __m512 acc = _mm512_add_ps(acc0, acc1);
      acc = _mm512_min_ps(_mm512_max_ps(acc, vmin), vmax);
      if (x + 16 <= width) {
        _mm512_storeu_ps(out + x, acc);
      } else {
        const __mmask16 m = static_cast<__mmask16>((1u << (width - x)) - 1u);
        _mm512_mask_storeu_ps(out + x, m, acc);
      }
    }
  }
}

}  // namespace

void f32_dwconv3x3s1__avx512(const F32DwconvParams& p, size_t y0, size_t y1) { dwconv_avx512<3, 1>(p, y0, y1); }
void f32_dwconv3x3s2__avx512(const F32DwconvParams& p, size_t y0, size_t y1) { dwconv_avx512<3, 2>(p, y0, y1); }
void f32_dwconv5x5s1__avx512(const F32DwconvParams& p, size_t y0, size_t y1) { dwconv_avx512<5, 1>(p, y0, y1); }
void f32_dwconv5x5s2__avx512(const F32DwconvParams& p, size_t y0, size_t y1) { dwconv_avx512<5, 2>(p, y0, y1); }

}  // namespace nfuse::kernels
