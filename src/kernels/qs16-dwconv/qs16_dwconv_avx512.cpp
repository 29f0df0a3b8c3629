// qs16-dwconv for avx512. Rows with int32 accumulators, stride 1 or 2 and no dilation take the
// register-blocked loop below on their interior columns (every tap inside the row: no bounds
// tests): 16 outputs per vector, all taps summed in registers as x * w (the zero point folded
// into the start value, bias - x_zp * sum of the row's in-range weights; exact, as int32
// wrapping ends on the true sum, which acc32 bounds), then the requantize. Stride 2 loads 32
// inputs and keeps the even ones (the low half of each 32-bit lane). The few edge columns go one
// by one; every other row runs the loop of qs16_dwconv_impl.h compiled with this file's flags.
// Bit-exact with it: int32 -> f32 rounds to nearest like static_cast, cvtps and nearbyint round
// half to even like the 1.5 * 2^23 trick in range.
#if defined(__x86_64__)
#define NFUSE_QS16DW_ISA_NS qs16dw_avx512
#include "kernels/qs16-dwconv/qs16_dwconv_impl.h"

#include <cmath>

#if defined(NFUSE_HAVE_AVX512_KERNELS)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC bug 105593 (qs16_gemm_avx512vnni.cpp)
#endif
#include <immintrin.h>
#endif

namespace nfuse::kernels {
namespace {

#if defined(NFUSE_HAVE_AVX512_KERNELS)
constexpr size_t kMaxTaps = 64;  // the register loop's weight table (larger kernels: the generic loop)

template <bool XUnsigned, size_t Sw>
void interior(const Qs16DwRow& r, uint16_t* y, size_t ox_begin, size_t ox_end) {
  const size_t kh = r.kh, kw = r.kw;
  int64_t wsum = 0;
  __m512i wv[kMaxTaps];
  const uint16_t* rows[kMaxTaps];
  ptrdiff_t offs[kMaxTaps];  // tap (ky, kx) of output column ox reads rows[t][ox * Sw + offs[t]]
  size_t taps = 0;
  for (size_t ky = 0; ky < kh; ++ky) {
    if (!r.rows[ky]) continue;
    for (size_t kx = 0; kx < kw; ++kx) {
      const int8_t w = r.weights[ky * kw + kx];
      wsum += w;
      wv[taps] = _mm512_set1_epi32(w);
      offs[taps] = static_cast<ptrdiff_t>(kx) - static_cast<ptrdiff_t>(r.pad_left);
      rows[taps++] = r.rows[ky];
    }
  }
  const auto start = static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(r.bias - r.x_zp * wsum)));
  const __m512i acc0 = _mm512_set1_epi32(start);
  const __m512 mult = _mm512_set1_ps(r.mult);
  const __m512 lo = _mm512_set1_ps(static_cast<float>(r.qmin - r.y_zp));
  const __m512 hi = _mm512_set1_ps(static_cast<float>(r.qmax - r.y_zp));
  const __m512i yzp = _mm512_set1_epi32(r.y_zp);
  const __m512i low16 = _mm512_set1_epi32(0xFFFF);
  for (size_t next = ox_begin; next < ox_end;) {
    // The last vector may overlap the one before (its outputs are computed again, alike).
    const size_t ox = next + 16 <= ox_end ? next : ox_end - 16;
    next = ox + 16;
    __m512i acc = acc0;
    for (size_t t = 0; t < taps; ++t) {
      const uint16_t* src = rows[t] + (static_cast<ptrdiff_t>(ox * Sw) + offs[t]);
      __m512i v;
      if constexpr (Sw == 1) {
        const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src));
        v = XUnsigned ? _mm512_cvtepu16_epi32(raw) : _mm512_cvtepi16_epi32(raw);
      } else {
        const __m512i raw = _mm512_loadu_si512(src);  // inputs 2j land in the low half of lane j
        v = XUnsigned ? _mm512_and_si512(raw, low16) : _mm512_srai_epi32(_mm512_slli_epi32(raw, 16), 16);
      }
      acc = _mm512_add_epi32(acc, _mm512_mullo_epi32(v, wv[t]));
    }
    __m512 f = _mm512_mul_ps(_mm512_cvtepi32_ps(acc), mult);
    f = _mm512_min_ps(_mm512_max_ps(f, lo), hi);
    const __m512i q = _mm512_add_epi32(_mm512_cvtps_epi32(f), yzp);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + ox), _mm512_cvtepi32_epi16(q));  // in range: exact
  }
}

// The interior columns [*b, *e) of the row for the register loop (at least 16): every tap of
// each inside the row, and each vector's loads too (stride 2 reads one input past its last tap).
// Empty when fewer than 16 qualify.
void interior_range(const Qs16DwRow& r, size_t* b, size_t* e) {
  const ptrdiff_t w = static_cast<ptrdiff_t>(r.w), pad = static_cast<ptrdiff_t>(r.pad_left);
  const ptrdiff_t sw = static_cast<ptrdiff_t>(r.sw), kw = static_cast<ptrdiff_t>(r.kw);
  const ptrdiff_t first = (pad + sw - 1) / sw;  // ox * sw - pad >= 0
  // Columns whose last tap ox * sw - pad + kw - 1 (and, for stride 2, the load's extra input)
  // stays inside the row.
  const ptrdiff_t last_in = w - 1 - (kw - 1) - (sw - 1) + pad;
  const ptrdiff_t end = std::min(static_cast<ptrdiff_t>(r.wo), last_in < 0 ? 0 : last_in / sw + 1);
  if (end - first < 16) {
    *b = *e = 0;
    return;
  }
  *b = static_cast<size_t>(first);
  *e = static_cast<size_t>(end);
}

// Columns [ox_begin, ox_end) one by one, taps in range only: the few edge columns.
void edge_columns(const Qs16DwRow& r, uint16_t* y, size_t ox_begin, size_t ox_end) {
  const float lo = static_cast<float>(r.qmin - r.y_zp);
  const float hi = static_cast<float>(r.qmax - r.y_zp);
  for (size_t ox = ox_begin; ox < ox_end; ++ox) {
    int32_t acc = static_cast<int32_t>(r.bias);
    for (size_t ky = 0; ky < r.kh; ++ky) {
      if (!r.rows[ky]) continue;
      for (size_t kx = 0; kx < r.kw; ++kx) {
        const ptrdiff_t ix = static_cast<ptrdiff_t>(ox * r.sw + kx) - static_cast<ptrdiff_t>(r.pad_left);
        if (ix < 0 || ix >= static_cast<ptrdiff_t>(r.w)) continue;
        const uint16_t bits = r.rows[ky][ix];
        const int32_t xv = r.x_unsigned ? int32_t{bits} : int32_t{static_cast<int16_t>(bits)};
        acc += (xv - r.x_zp) * r.weights[ky * r.kw + kx];
      }
    }
    float v = static_cast<float>(acc) * r.mult;
    v = std::min(std::max(v, lo), hi);
    y[ox] = static_cast<uint16_t>(static_cast<int32_t>(std::nearbyint(v)) + r.y_zp);
  }
}
#endif

}  // namespace

void qs16_dwconv_row__avx512(const Qs16DwRow& r, uint16_t* y) {
#if defined(NFUSE_HAVE_AVX512_KERNELS)
  if (r.acc32 && r.dw == 1 && (r.sw == 1 || r.sw == 2) && r.kh * r.kw <= kMaxTaps) {
    size_t b, e;
    interior_range(r, &b, &e);
    if (e > b) {
      if (r.sw == 1) {
        r.x_unsigned ? interior<true, 1>(r, y, b, e) : interior<false, 1>(r, y, b, e);
      } else {
        r.x_unsigned ? interior<true, 2>(r, y, b, e) : interior<false, 2>(r, y, b, e);
      }
      edge_columns(r, y, 0, b);
      edge_columns(r, y, e, r.wo);
      return;
    }
  }
#endif
  qs16dw_avx512::dwconv_row(r, y);
}

}  // namespace nfuse::kernels
#endif  // defined(__x86_64__)
