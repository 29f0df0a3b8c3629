// AVX2 + FMA3 depthwise kernels (this file alone is built with -mavx2 -mfma).
#include <immintrin.h>

#include <algorithm>

#include "kernels/f32-dwconv/f32_dwconv.h"

namespace nfuse::kernels {
namespace {

// Elements p[0], p[2], ..., p[14] (reads p[0..15]).
inline __m256 load_even(const float* p) {
  const __m256 a = _mm256_loadu_ps(p);
  const __m256 b = _mm256_loadu_ps(p + 8);
  const __m256 e = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0));  // a0 a2 b0 b2 | a4 a6 b4 b6
  return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(e), _MM_SHUFFLE(3, 1, 2, 0)));
}

// 8 outputs per step, each from K x K taps at stride S and dilation (p.dh, p.dw): the dilation is
// a run-time step between taps, which costs nothing (the loads are addressed either way).
template <size_t K, size_t S>
void dwconv_avx2(const F32DwconvParams& p, size_t y0, size_t y1) {
  __m256 w[K * K];
  for (size_t i = 0; i < K * K; ++i) w[i] = _mm256_set1_ps(p.w[i]);
  const __m256 vbias = _mm256_set1_ps(p.bias);
  const __m256 vmin = _mm256_set1_ps(p.min);
  const __m256 vmax = _mm256_set1_ps(p.max);
  const size_t width = p.out_width;
  const size_t dh = p.dh, dw = p.dw;
  for (size_t y = y0; y < y1; ++y) {
    float* out = p.out + y * p.out_stride;
    const float* in = p.in + y * S * p.in_stride;
    size_t x = 0;
    for (; x + 8 <= width; x += 8) {
      __m256 acc0 = vbias;
      __m256 acc1 = _mm256_setzero_ps();
#pragma GCC unroll 5
      for (size_t ky = 0; ky < K; ++ky) {
        const float* row = in + ky * dh * p.in_stride + x * S;
#pragma GCC unroll 5
        for (size_t kx = 0; kx < K; ++kx) {
          const __m256 v = S == 1 ? _mm256_loadu_ps(row + kx * dw) : load_even(row + kx * dw);
          if ((ky + kx) % 2 == 0) {
            acc0 = _mm256_fmadd_ps(w[ky * K + kx], v, acc0);
          } else {
            acc1 = _mm256_fmadd_ps(w[ky * K + kx], v, acc1);
          }
        }
      }
      __m256 acc = _mm256_add_ps(acc0, acc1);
      acc = _mm256_min_ps(_mm256_max_ps(acc, vmin), vmax);
      _mm256_storeu_ps(out + x, acc);
    }
    for (; x < width; ++x) {
      float acc = p.bias;
      for (size_t ky = 0; ky < K; ++ky) {
        const float* row = in + ky * dh * p.in_stride + x * S;
        for (size_t kx = 0; kx < K; ++kx) acc += p.w[ky * K + kx] * row[kx * dw];
      }
      out[x] = std::min(std::max(acc, p.min), p.max);
    }
  }
}

}  // namespace

void f32_dwconv3x3s1__avx2(const F32DwconvParams& p, size_t y0, size_t y1) { dwconv_avx2<3, 1>(p, y0, y1); }
void f32_dwconv3x3s2__avx2(const F32DwconvParams& p, size_t y0, size_t y1) { dwconv_avx2<3, 2>(p, y0, y1); }
void f32_dwconv5x5s1__avx2(const F32DwconvParams& p, size_t y0, size_t y1) { dwconv_avx2<5, 1>(p, y0, y1); }
void f32_dwconv5x5s2__avx2(const F32DwconvParams& p, size_t y0, size_t y1) { dwconv_avx2<5, 2>(p, y0, y1); }

}  // namespace nfuse::kernels
