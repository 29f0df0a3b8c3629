// The AVX-512 kernel of f32_dwconv_c16.h. This file alone is compiled with -mavx512f.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/f32-dwconv/f32_dwconv_c16.h"

// GCC 12's AVX-512 intrinsics pass _mm512_undefined_ps() as an unused merge source, which
// -Wmaybe-uninitialized reports once inlined (GCC bug 105593).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace nfuse::kernels {
namespace {

__mmask16 first(size_t n) { return static_cast<__mmask16>(n >= 16 ? 0xFFFFu : (1u << n) - 1u); }

// r[i][j] -> r[j][i] for a 16x16 block of floats.
inline void transpose16(__m512 r[16]) {
  __m512 t[16];
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  // r[4i + j], 128-bit lane L: column 4L + j of rows 4i .. 4i + 3.
  for (int i = 0; i < 4; ++i) {
    const __m512d a = _mm512_castps_pd(t[4 * i]), b = _mm512_castps_pd(t[4 * i + 1]);
    const __m512d c = _mm512_castps_pd(t[4 * i + 2]), d = _mm512_castps_pd(t[4 * i + 3]);
    r[4 * i] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));
    r[4 * i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));
    r[4 * i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, d));
    r[4 * i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, d));
  }
  for (int j = 0; j < 4; ++j) {
    t[j] = _mm512_shuffle_f32x4(r[j], r[4 + j], 0x88);
    t[4 + j] = _mm512_shuffle_f32x4(r[j], r[4 + j], 0xdd);
    t[8 + j] = _mm512_shuffle_f32x4(r[8 + j], r[12 + j], 0x88);
    t[12 + j] = _mm512_shuffle_f32x4(r[8 + j], r[12 + j], 0xdd);
  }
  for (int j = 0; j < 4; ++j) {
    r[j] = _mm512_shuffle_f32x4(t[j], t[8 + j], 0x88);
    r[8 + j] = _mm512_shuffle_f32x4(t[j], t[8 + j], 0xdd);
    r[4 + j] = _mm512_shuffle_f32x4(t[4 + j], t[12 + j], 0x88);
    r[12 + j] = _mm512_shuffle_f32x4(t[4 + j], t[12 + j], 0xdd);
  }
}

// The padded block's output pixels, kPixels at a time (their own accumulators), into `result`
// ([out_h][out_cols][16]). k3x3: the 3x3 dilation-1 windows of MobileNets' depthwise layers,
// with the nine taps in registers and the loops unrolled; otherwise any window from p.
template <bool k3x3>
void accumulate(const F32DwconvC16Params& p, const float* block, size_t cols, const float* w16, float* result,
                size_t out_cols) {
  const size_t kh = k3x3 ? 3 : p.kh, kw = k3x3 ? 3 : p.kw;
  const size_t dh = k3x3 ? 1 : p.dh, dw = k3x3 ? 1 : p.dw;
  __m512 taps3x3[9];
  if constexpr (k3x3)
    for (int t = 0; t < 9; ++t) taps3x3[t] = _mm512_load_ps(w16 + t * 16);
  auto tap = [&](size_t t) __attribute__((always_inline)) {
    if constexpr (k3x3) return taps3x3[t];
    return _mm512_load_ps(w16 + t * 16);
  };
  const __m512 bias = p.bias ? _mm512_maskz_loadu_ps(first(p.channels), p.bias) : _mm512_setzero_ps();
  const __m512 vmin = _mm512_set1_ps(p.min), vmax = _mm512_set1_ps(p.max);
  const size_t step = p.sw * 16, row = cols * 16;
  // Output pixels [ox, ox + n) of one row, n of them in flight.
  auto pixels = [&]<size_t n>(const float* top, float* dst, size_t ox) __attribute__((always_inline)) {
    __m512 acc[n];
    for (size_t j = 0; j < n; ++j) acc[j] = bias;
    const float* src = top + ox * step;
#pragma GCC unroll 5
    for (size_t ky = 0; ky < kh; ++ky) {
#pragma GCC unroll 5
      for (size_t kx = 0; kx < kw; ++kx) {
        const __m512 wv = tap(ky * kw + kx);
        const float* q = src + ky * dh * row + kx * dw * 16;
#pragma GCC unroll 4
        for (size_t j = 0; j < n; ++j) acc[j] = _mm512_fmadd_ps(wv, _mm512_load_ps(q + j * step), acc[j]);
      }
    }
#pragma GCC unroll 4
    for (size_t j = 0; j < n; ++j)
      _mm512_store_ps(dst + (ox + j) * 16, _mm512_min_ps(vmax, _mm512_max_ps(vmin, acc[j])));
  };
  for (size_t oy = 0; oy < p.out_h; ++oy) {
    const float* top = block + oy * p.sh * row;
    float* dst = result + oy * out_cols * 16;
    size_t ox = 0;
    for (; ox + 4 <= p.out_w; ox += 4) pixels.template operator()<4>(top, dst, ox);
    for (; ox < p.out_w; ++ox) pixels.template operator()<1>(top, dst, ox);
  }
}

}  // namespace

void f32_dwconv_c16__avx512(const F32DwconvC16Params& p) {
  const size_t rows = (p.out_h - 1) * p.sh + (p.kh - 1) * p.dh + 1;
  const size_t cols = (p.out_w - 1) * p.sw + (p.kw - 1) * p.dw + 1;
  const size_t out_cols = (p.out_w + 15) / 16 * 16;
  float* block = p.scratch;                  // [rows][cols][16]
  float* result = block + rows * cols * 16;  // [out_h][out_cols][16]

  // The padded block: zeros where no input pixel lands (the pads, which may reach past the block:
  // a window can lie in the padding alone), then each input row's pixels that some window reaches.
  const size_t top = std::min(rows, p.pad_top), rows_in = std::min(rows, p.pad_top + p.h);
  const size_t left = std::min(cols, p.pad_left), right = std::min(cols, p.pad_left + p.w);
  std::memset(block, 0, top * cols * 16 * sizeof(float));
  std::memset(block + rows_in * cols * 16, 0, (rows - rows_in) * cols * 16 * sizeof(float));
  for (size_t yy = top; yy < rows_in; ++yy) {
    std::memset(block + yy * cols * 16, 0, left * 16 * sizeof(float));
    std::memset(block + (yy * cols + right) * 16, 0, (cols - right) * 16 * sizeof(float));
  }
  for (size_t y = 0; y < p.h; ++y) {
    const size_t yy = y + p.pad_top;
    if (yy >= rows) break;
    for (size_t x0 = 0; x0 < p.w; x0 += 16) {
      const size_t n = p.w - x0 < 16 ? p.w - x0 : 16;
      __m512 r[16];
      const float* src = p.in + y * p.w + x0;
      if (p.channels == 16) {
#pragma GCC unroll 16
        for (size_t c = 0; c < 16; ++c) r[c] = _mm512_maskz_loadu_ps(first(n), src + c * p.in_plane);
      } else {
        for (size_t c = 0; c < 16; ++c)
          r[c] = c < p.channels ? _mm512_maskz_loadu_ps(first(n), src + c * p.in_plane) : _mm512_setzero_ps();
      }
      transpose16(r);
      for (size_t i = 0; i < n; ++i) {
        const size_t xx = x0 + i + p.pad_left;
        if (xx < cols) _mm512_store_ps(block + (yy * cols + xx) * 16, r[i]);
      }
    }
  }

  // Every output pixel's 16 channels in one vector, four pixels in flight.
  if (p.kh == 3 && p.kw == 3 && p.dh == 1 && p.dw == 1) {
    accumulate<true>(p, block, cols, p.taps16, result, out_cols);
  } else {
    accumulate<false>(p, block, cols, p.taps16, result, out_cols);
  }

  // Back to planes, 16 pixels of a row at a time (the chunk's pixels past out_w are not stored).
  for (size_t oy = 0; oy < p.out_h; ++oy) {
    for (size_t x0 = 0; x0 < p.out_w; x0 += 16) {
      const size_t n = p.out_w - x0 < 16 ? p.out_w - x0 : 16;
      __m512 r[16];
      for (size_t i = 0; i < 16; ++i)
        r[i] = i < n ? _mm512_load_ps(result + (oy * out_cols + x0 + i) * 16) : _mm512_setzero_ps();
      transpose16(r);
      float* dst = p.out + oy * p.out_w + x0;
      if (p.channels == 16) {
#pragma GCC unroll 16
        for (size_t c = 0; c < 16; ++c) _mm512_mask_storeu_ps(dst + c * p.out_plane, first(n), r[c]);
      } else {
        for (size_t c = 0; c < p.channels; ++c) _mm512_mask_storeu_ps(dst + c * p.out_plane, first(n), r[c]);
      }
    }
  }
}

}  // namespace nfuse::kernels
