// AVX-512 kernel of f32_qvcvt.h: 16 values per step, the last partial step masked; the int32
// results are narrowed by vpmovdb (truncation: each is already inside the 8-bit range).
#if defined(__x86_64__)
// GCC 12's _mm512_max_ps / _mm512_min_ps / _mm512_roundscale_ps pass _mm512_undefined_ps() as
// the unused merge source, which -Wmaybe-uninitialized reports once inlined (GCC bug 105593).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include "kernels/f32-qvcvt/f32_qvcvt.h"

namespace nfuse::kernels {

namespace {

// q - zp (f32_qvcvt.h). kDivide false: x * scale (`multiply`, or a scale of 1, where x / 1 and
// x * 1 are both x, NaN included).
template <bool kDivide = true>
inline __m512 centered16(__m512 x, __m512 scale, __m512 lo, __m512 hi) {
  __m512 v = kDivide ? _mm512_div_ps(x, scale) : _mm512_mul_ps(x, scale);
  v = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(v, v, _CMP_ORD_Q), v);  // NaN -> 0
  v = _mm512_min_ps(_mm512_max_ps(v, lo), hi);
  return _mm512_roundscale_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

template <bool kDivide = true>
inline __m512i quantize16(__m512 x, __m512 scale, __m512 lo, __m512 hi, __m512 zp) {
  return _mm512_cvtps_epi32(_mm512_add_ps(centered16<kDivide>(x, scale, lo, hi), zp));
}

template <bool kDivide>
void quantize_q8(const float* x, size_t n, const F32QuantizeParams& p, uint8_t* y) {
  const __m512 scale = _mm512_set1_ps(p.scale), lo = _mm512_set1_ps(p.lo), hi = _mm512_set1_ps(p.hi);
  const __m512 zp = _mm512_set1_ps(p.zero_point);
  size_t i = 0;
  // Full steps narrow into a register and store 16 bytes: vpmovdb straight to memory (what the
  // masked tail needs) runs several times slower on AMD cores.
  for (; i + 16 <= n; i += 16)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i),
                     _mm512_cvtepi32_epi8(quantize16<kDivide>(_mm512_loadu_ps(x + i), scale, lo, hi, zp)));
  if (i < n) {
    const auto m = static_cast<__mmask16>((1u << (n - i)) - 1);
    _mm512_mask_cvtepi32_storeu_epi8(y + i, m, quantize16<kDivide>(_mm512_maskz_loadu_ps(m, x + i), scale, lo, hi, zp));
  }
}

}  // namespace

// `multiply`, or a scale of 1 (what requantizing epilogues pass): no division, the same bits.
void f32_quantize_q8__avx512(const float* x, size_t n, const F32QuantizeParams& p, uint8_t* y) {
  p.multiply || p.scale == 1.0f ? quantize_q8<false>(x, n, p, y) : quantize_q8<true>(x, n, p, y);
}

// vpmovdw: truncation, exact since every value is already inside the 16-bit range.
void f32_quantize_q16__avx512(const float* x, size_t n, const F32QuantizeParams& p, uint16_t* y) {
  const __m512 scale = _mm512_set1_ps(p.scale), lo = _mm512_set1_ps(p.lo), hi = _mm512_set1_ps(p.hi);
  const __m512 zp = _mm512_set1_ps(p.zero_point);
  size_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i),
                        _mm512_cvtepi32_epi16(quantize16(_mm512_loadu_ps(x + i), scale, lo, hi, zp)));
  if (i < n) {
    const auto m = static_cast<__mmask16>((1u << (n - i)) - 1);
    _mm512_mask_cvtepi32_storeu_epi16(y + i, m, quantize16(_mm512_maskz_loadu_ps(m, x + i), scale, lo, hi, zp));
  }
}

void f32_quantize_centered__avx512(const float* x, size_t n, const F32QuantizeParams& p, float* y) {
  const __m512 scale = _mm512_set1_ps(p.scale), lo = _mm512_set1_ps(p.lo), hi = _mm512_set1_ps(p.hi);
  size_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, centered16(_mm512_loadu_ps(x + i), scale, lo, hi));
  if (i < n) {
    const auto m = static_cast<__mmask16>((1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(y + i, m, centered16(_mm512_maskz_loadu_ps(m, x + i), scale, lo, hi));
  }
}

}  // namespace nfuse::kernels
#endif
