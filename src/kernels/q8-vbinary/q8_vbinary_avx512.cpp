// AVX-512F q8-vbinary kernels (this file alone is built with -mavx512f): 64 elements per step as
// four vectors of 16 f32 lanes, then 16 at a time, the last < 16 by q8_vbinary_one. Only
// AVX-512F instructions: bytes widen with vpmovzxbd / vpmovsxbd and narrow with vpmovdb (the
// values are already clamped to T's range, so truncation is exact).

// GCC 12's _mm512_max_ps / _mm512_min_ps / conversions pass _mm512_undefined_*() as the unused
// merge source, which -W(maybe-)uninitialized reports once inlined (GCC bug 105593).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include <type_traits>

#include "kernels/q8-vbinary/q8_vbinary.h"

namespace nfuse::kernels {
namespace {

template <typename T>
inline __m512i load16(const T* p) {
  const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  if constexpr (std::is_signed_v<T>) return _mm512_cvtepi8_epi32(x);
  return _mm512_cvtepu8_epi32(x);
}

template <typename T, bool kMul, bool kConstB, bool kSwapped>
struct Body {
  __m512i a_zp, b_zp, y_zp, b_const;
  __m512 a_mult, b_mult, lo, hi;

  Body(const T* b, const Q8VbinaryParams& p)
      : a_zp(_mm512_set1_epi32(p.a_zp)),
        b_zp(_mm512_set1_epi32(p.b_zp)),
        y_zp(_mm512_set1_epi32(p.y_zp)),
        b_const(_mm512_set1_epi32(kConstB ? static_cast<int32_t>(b[0]) : 0)),
        a_mult(_mm512_set1_ps(p.a_mult)),
        b_mult(_mm512_set1_ps(p.b_mult)),
        lo(_mm512_set1_ps(static_cast<float>(std::numeric_limits<T>::lowest() - p.y_zp))),
        hi(_mm512_set1_ps(static_cast<float>(std::numeric_limits<T>::max() - p.y_zp))) {}

  // Sixteen results narrowed to bytes (offset by y_zp, within T's range).
  inline __m128i sixteen(const T* a, const T* b) const {
    const __m512i ac = _mm512_sub_epi32(load16(a), a_zp);
    const __m512i bc = _mm512_sub_epi32(kConstB ? b_const : load16(b), b_zp);
    __m512 v;
    if constexpr (kMul) {
      v = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_mullo_epi32(ac, bc)), a_mult);
    } else if constexpr (kSwapped) {
      v = _mm512_fmadd_ps(_mm512_cvtepi32_ps(bc), b_mult, _mm512_mul_ps(_mm512_cvtepi32_ps(ac), a_mult));
    } else {
      v = _mm512_fmadd_ps(_mm512_cvtepi32_ps(ac), a_mult, _mm512_mul_ps(_mm512_cvtepi32_ps(bc), b_mult));
    }
    v = _mm512_min_ps(_mm512_max_ps(v, lo), hi);
    return _mm512_cvtepi32_epi8(_mm512_add_epi32(_mm512_cvtps_epi32(v), y_zp));
  }
};

template <typename T, bool kMul, bool kConstB, bool kSwapped>
void run(const T* a, const T* b, T* y, size_t n, const Q8VbinaryParams& p) {
  if (n == 0) return;  // b[0] (the scalar form's operand) may not exist
  const Body<T, kMul, kConstB, kSwapped> body(b, p);
  const size_t bs = kConstB ? 0 : 1;
  size_t i = 0;
  for (; i + 64 <= n; i += 64) {
    const __m128i v0 = body.sixteen(a + i, b + i * bs);
    const __m128i v1 = body.sixteen(a + i + 16, b + (i + 16) * bs);
    const __m128i v2 = body.sixteen(a + i + 32, b + (i + 32) * bs);
    const __m128i v3 = body.sixteen(a + i + 48, b + (i + 48) * bs);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), v0);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i + 16), v1);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i + 32), v2);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i + 48), v3);
  }
  for (; i + 16 <= n; i += 16) _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), body.sixteen(a + i, b + i * bs));
  for (; i < n; ++i) y[i] = q8_vbinary_one<T, kMul, kConstB>(a[i], b[i * bs], p);
}

template <typename T, bool kMul, bool kConstB>
void dispatch(const T* a, const T* b, T* y, size_t n, const Q8VbinaryParams& p) {
  if (kConstB && !kMul && p.swapped) run<T, kMul, kConstB, true>(a, b, y, n, p);
  else run<T, kMul, kConstB, false>(a, b, y, n, p);
}

}  // namespace

void qu8_vadd__avx512(const uint8_t* a, const uint8_t* b, uint8_t* y, size_t n, const Q8VbinaryParams& p) {
  dispatch<uint8_t, false, false>(a, b, y, n, p);
}
void qu8_vaddc__avx512(const uint8_t* a, const uint8_t* b, uint8_t* y, size_t n, const Q8VbinaryParams& p) {
  dispatch<uint8_t, false, true>(a, b, y, n, p);
}
void qu8_vmul__avx512(const uint8_t* a, const uint8_t* b, uint8_t* y, size_t n, const Q8VbinaryParams& p) {
  dispatch<uint8_t, true, false>(a, b, y, n, p);
}
void qu8_vmulc__avx512(const uint8_t* a, const uint8_t* b, uint8_t* y, size_t n, const Q8VbinaryParams& p) {
  dispatch<uint8_t, true, true>(a, b, y, n, p);
}
void qs8_vadd__avx512(const int8_t* a, const int8_t* b, int8_t* y, size_t n, const Q8VbinaryParams& p) {
  dispatch<int8_t, false, false>(a, b, y, n, p);
}
void qs8_vaddc__avx512(const int8_t* a, const int8_t* b, int8_t* y, size_t n, const Q8VbinaryParams& p) {
  dispatch<int8_t, false, true>(a, b, y, n, p);
}
void qs8_vmul__avx512(const int8_t* a, const int8_t* b, int8_t* y, size_t n, const Q8VbinaryParams& p) {
  dispatch<int8_t, true, false>(a, b, y, n, p);
}
void qs8_vmulc__avx512(const int8_t* a, const int8_t* b, int8_t* y, size_t n, const Q8VbinaryParams& p) {
  dispatch<int8_t, true, true>(a, b, y, n, p);
}

}  // namespace nfuse::kernels
