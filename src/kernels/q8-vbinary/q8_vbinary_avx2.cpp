// AVX2 + FMA3 q8-vbinary kernels (this file alone is built with -mavx2 -mfma): 32 elements per
// step as four vectors of 8 f32 lanes, then 8 at a time, the last < 8 by q8_vbinary_one.
#include <immintrin.h>

#include <type_traits>

#include "kernels/q8-vbinary/q8_vbinary.h"

namespace nfuse::kernels {
namespace {

template <typename T>
inline __m256i load8(const T* p) {
  const __m128i x = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
  if constexpr (std::is_signed_v<T>) return _mm256_cvtepi8_epi32(x);
  return _mm256_cvtepu8_epi32(x);
}

template <typename T, bool kMul, bool kConstB, bool kSwapped>
struct Body {
  __m256i a_zp, b_zp, y_zp, b_const;
  __m256 a_mult, b_mult, lo, hi;

  Body(const T* b, const Q8VbinaryParams& p)
      : a_zp(_mm256_set1_epi32(p.a_zp)),
        b_zp(_mm256_set1_epi32(p.b_zp)),
        y_zp(_mm256_set1_epi32(p.y_zp)),
        b_const(_mm256_set1_epi32(kConstB ? static_cast<int32_t>(b[0]) : 0)),
        a_mult(_mm256_set1_ps(p.a_mult)),
        b_mult(_mm256_set1_ps(p.b_mult)),
        lo(_mm256_set1_ps(static_cast<float>(std::numeric_limits<T>::lowest() - p.y_zp))),
        hi(_mm256_set1_ps(static_cast<float>(std::numeric_limits<T>::max() - p.y_zp))) {}

  // Eight results as int32 (already offset by y_zp and within T's range).
  inline __m256i eight(const T* a, const T* b) const {
    const __m256i ac = _mm256_sub_epi32(load8(a), a_zp);
    const __m256i bc = _mm256_sub_epi32(kConstB ? b_const : load8(b), b_zp);
    __m256 v;
    if constexpr (kMul) {
      v = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_mullo_epi32(ac, bc)), a_mult);
    } else if constexpr (kSwapped) {
      v = _mm256_fmadd_ps(_mm256_cvtepi32_ps(bc), b_mult, _mm256_mul_ps(_mm256_cvtepi32_ps(ac), a_mult));
    } else {
      v = _mm256_fmadd_ps(_mm256_cvtepi32_ps(ac), a_mult, _mm256_mul_ps(_mm256_cvtepi32_ps(bc), b_mult));
    }
    v = _mm256_min_ps(_mm256_max_ps(v, lo), hi);
    return _mm256_add_epi32(_mm256_cvtps_epi32(v), y_zp);
  }
};

template <typename T>
inline __m128i pack16(__m128i w0, __m128i w1) {
  if constexpr (std::is_signed_v<T>) return _mm_packs_epi16(w0, w1);
  return _mm_packus_epi16(w0, w1);
}

template <typename T, bool kMul, bool kConstB, bool kSwapped>
void run(const T* a, const T* b, T* y, size_t n, const Q8VbinaryParams& p) {
  if (n == 0) return;  // b[0] (the scalar form's operand) may not exist
  const Body<T, kMul, kConstB, kSwapped> body(b, p);
  const size_t bs = kConstB ? 0 : 1;
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m256i v0 = body.eight(a + i, b + i * bs);
    const __m256i v1 = body.eight(a + i + 8, b + (i + 8) * bs);
    const __m256i v2 = body.eight(a + i + 16, b + (i + 16) * bs);
    const __m256i v3 = body.eight(a + i + 24, b + (i + 24) * bs);
    // packs works within 128-bit lanes: bytes come out in dword groups 0,2,4,6 | 1,3,5,7.
    const __m256i w01 = _mm256_packs_epi32(v0, v1);
    const __m256i w23 = _mm256_packs_epi32(v2, v3);
    const __m256i bytes = std::is_signed_v<T> ? _mm256_packs_epi16(w01, w23) : _mm256_packus_epi16(w01, w23);
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i), _mm256_permutevar8x32_epi32(bytes, order));
  }
  for (; i + 8 <= n; i += 8) {
    const __m256i v = body.eight(a + i, b + i * bs);
    const __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    _mm_storel_epi64(reinterpret_cast<__m128i*>(y + i), pack16<T>(w, w));
  }
  for (; i < n; ++i) y[i] = q8_vbinary_one<T, kMul, kConstB>(a[i], b[i * bs], p);
}

template <typename T, bool kMul, bool kConstB>
void dispatch(const T* a, const T* b, T* y, size_t n, const Q8VbinaryParams& p) {
  if (kConstB && !kMul && p.swapped) run<T, kMul, kConstB, true>(a, b, y, n, p);
  else run<T, kMul, kConstB, false>(a, b, y, n, p);
}

}  // namespace

void qu8_vadd__avx2(const uint8_t* a, const uint8_t* b, uint8_t* y, size_t n, const Q8VbinaryParams& p) {
  dispatch<uint8_t, false, false>(a, b, y, n, p);
}
void qu8_vaddc__avx2(const uint8_t* a, const uint8_t* b, uint8_t* y, size_t n, const Q8VbinaryParams& p) {
  dispatch<uint8_t, false, true>(a, b, y, n, p);
}
void qu8_vmul__avx2(const uint8_t* a, const uint8_t* b, uint8_t* y, size_t n, const Q8VbinaryParams& p) {
  dispatch<uint8_t, true, false>(a, b, y, n, p);
}
void qu8_vmulc__avx2(const uint8_t* a, const uint8_t* b, uint8_t* y, size_t n, const Q8VbinaryParams& p) {
  dispatch<uint8_t, true, true>(a, b, y, n, p);
}
void qs8_vadd__avx2(const int8_t* a, const int8_t* b, int8_t* y, size_t n, const Q8VbinaryParams& p) {
  dispatch<int8_t, false, false>(a, b, y, n, p);
}
void qs8_vaddc__avx2(const int8_t* a, const int8_t* b, int8_t* y, size_t n, const Q8VbinaryParams& p) {
  dispatch<int8_t, false, true>(a, b, y, n, p);
}
void qs8_vmul__avx2(const int8_t* a, const int8_t* b, int8_t* y, size_t n, const Q8VbinaryParams& p) {
  dispatch<int8_t, true, false>(a, b, y, n, p);
}
void qs8_vmulc__avx2(const int8_t* a, const int8_t* b, int8_t* y, size_t n, const Q8VbinaryParams& p) {
  dispatch<int8_t, true, true>(a, b, y, n, p);
}

}  // namespace nfuse::kernels
