// AVX2 kernel of f32_qvcvt.h: 32 values per step (four 8-wide divisions, then the int32 results
// narrowed by saturating packs, exact since every value is already inside the 8-bit range);
// the tail runs the scalar statement.
#if defined(__x86_64__)
#include <immintrin.h>

#include "kernels/f32-qvcvt/f32_qvcvt.h"

namespace nfuse::kernels {
namespace {

// q - zp (f32_qvcvt.h). kDivide false: x * scale (`multiply`, or a scale of 1, where x / 1 and
// x * 1 are both x, NaN included).
template <bool kDivide>
inline __m256 centered8(const float* x, __m256 scale, __m256 lo, __m256 hi) {
  __m256 v = kDivide ? _mm256_div_ps(_mm256_loadu_ps(x), scale) : _mm256_mul_ps(_mm256_loadu_ps(x), scale);
  v = _mm256_and_ps(v, _mm256_cmp_ps(v, v, _CMP_ORD_Q));  // NaN -> 0
  v = _mm256_min_ps(_mm256_max_ps(v, lo), hi);
  return _mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}

template <bool kDivide>
inline __m256i quantize8(const float* x, __m256 scale, __m256 lo, __m256 hi, __m256 zp) {
  return _mm256_cvtps_epi32(_mm256_add_ps(centered8<kDivide>(x, scale, lo, hi), zp));
}

template <bool kDivide>
void quantize_q8(const float* x, size_t n, const F32QuantizeParams& p, uint8_t* y) {
  const __m256 scale = _mm256_set1_ps(p.scale), lo = _mm256_set1_ps(p.lo), hi = _mm256_set1_ps(p.hi);
  const __m256 zp = _mm256_set1_ps(p.zero_point);
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m256i a = quantize8<kDivide>(x + i, scale, lo, hi, zp),
                  b = quantize8<kDivide>(x + i + 8, scale, lo, hi, zp);
    const __m256i c = quantize8<kDivide>(x + i + 16, scale, lo, hi, zp);
    const __m256i d = quantize8<kDivide>(x + i + 24, scale, lo, hi, zp);
    // packs work per 128-bit lane: ab = a0 b0 a1 b1 (words), abcd = a0 b0 c0 d0 a1 b1 c1 d1 (bytes).
    const __m256i ab = _mm256_packs_epi32(a, b), cd = _mm256_packs_epi32(c, d);
    const __m256i abcd = p.is_signed ? _mm256_packs_epi16(ab, cd) : _mm256_packus_epi16(ab, cd);
    const __m256i ordered = _mm256_permutevar8x32_epi32(abcd, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i), ordered);
  }
  f32_quantize_q8__scalar(x + i, n - i, p, y + i);
}

}  // namespace

// `multiply`, or a scale of 1 (what requantizing epilogues pass): no division, the same bits.
void f32_quantize_q8__avx2(const float* x, size_t n, const F32QuantizeParams& p, uint8_t* y) {
  p.multiply || p.scale == 1.0f ? quantize_q8<false>(x, n, p, y) : quantize_q8<true>(x, n, p, y);
}

// The low 16 bits of each int32 (already inside the 16-bit range, so u16 and s16 alike): bytes
// 0-1, 4-5, 8-9, 12-13 of each 128-bit lane, then the two lanes' halves joined.
void f32_quantize_q16__avx2(const float* x, size_t n, const F32QuantizeParams& p, uint16_t* y) {
  const __m256 scale = _mm256_set1_ps(p.scale), lo = _mm256_set1_ps(p.lo), hi = _mm256_set1_ps(p.hi);
  const __m256 zp = _mm256_set1_ps(p.zero_point);
  const __m256i low_words = _mm256_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, -1, -1, -1, -1, -1, -1, -1, -1, 0, 1, 4, 5, 8, 9,
                                             12, 13, -1, -1, -1, -1, -1, -1, -1, -1);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i words = _mm256_shuffle_epi8(quantize8<true>(x + i, scale, lo, hi, zp), low_words);
    const __m256i joined = _mm256_permute4x64_epi64(words, 0x08);  // qwords 0 and 2 low
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), _mm256_castsi256_si128(joined));
  }
  f32_quantize_q16__scalar(x + i, n - i, p, y + i);
}

void f32_quantize_centered__avx2(const float* x, size_t n, const F32QuantizeParams& p, float* y) {
  const __m256 scale = _mm256_set1_ps(p.scale), lo = _mm256_set1_ps(p.lo), hi = _mm256_set1_ps(p.hi);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, centered8<true>(x + i, scale, lo, hi));
  f32_quantize_centered__scalar(x + i, n - i, p, y + i);
}

}  // namespace nfuse::kernels
#endif
