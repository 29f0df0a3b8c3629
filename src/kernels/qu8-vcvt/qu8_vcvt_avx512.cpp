// AVX-512 kernels of qu8_vcvt.h: 16 elements per step, the tail under a mask. Compiled with
// -mavx512f (cmake/nfuse_kernels.cmake, "*avx512*"); byte stores through vpmovdb (AVX-512F).
#include "kernels/qu8-vcvt/qu8_vcvt.h"

#if defined(__x86_64__)

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC bug 105593 (see qu8_gemm_avx512vnni.cpp)
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include <cstring>

namespace nfuse::kernels {

void qu8_unpack_f32__avx512(const uint8_t* x, size_t n, uint8_t flip, int32_t zp, float* out) {
  const __m512i f = _mm512_set1_epi32(flip);
  const __m512i z = _mm512_set1_epi32(zp);
  for (size_t i = 0; i < n; i += 16) {
    const size_t len = n - i < 16 ? n - i : 16;
    const __mmask16 m = static_cast<__mmask16>((1u << len) - 1u);
    __m128i b;
    if (len == 16) {
      b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i));
    } else {  // no byte-masked load in AVX-512F alone: the tail through a zeroed copy
      alignas(16) uint8_t tail[16] = {};
      std::memcpy(tail, x + i, len);
      b = _mm_load_si128(reinterpret_cast<const __m128i*>(tail));
    }
    const __m512i v = _mm512_sub_epi32(_mm512_xor_si512(_mm512_cvtepu8_epi32(b), f), z);
    _mm512_mask_storeu_ps(out + i, m, _mm512_cvtepi32_ps(v));
  }
}

void qu8_requant_f32__avx512(const float* sums, size_t n, int32_t bias, float multiplier, const Qu8GemmRequant& rq,
                             uint8_t* y) {
  const __m512i b = _mm512_set1_epi32(bias);
  const __m512 mult = _mm512_set1_ps(multiplier);
  const __m512 lo = _mm512_set1_ps(rq.lo);
  const __m512 hi = _mm512_set1_ps(rq.hi);
  const __m512i zp = _mm512_set1_epi32(rq.zero_point);
  const __m512i flip = _mm512_set1_epi32(static_cast<int>(rq.out_xor));
  for (size_t i = 0; i < n; i += 16) {
    const size_t len = n - i < 16 ? n - i : 16;
    const __mmask16 m = static_cast<__mmask16>((1u << len) - 1u);
    // Exact integer sums: truncation is exact; the bias add wraps as the GEMM's.
    const __m512i acc = _mm512_add_epi32(_mm512_cvttps_epi32(_mm512_maskz_loadu_ps(m, sums + i)), b);
    __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(acc), mult);
    v = _mm512_min_ps(_mm512_max_ps(v, lo), hi);
    const __m512i q = _mm512_xor_si512(_mm512_add_epi32(_mm512_cvtps_epi32(v), zp), flip);
    _mm512_mask_cvtepi32_storeu_epi8(y + i, m, q);
  }
}

}  // namespace nfuse::kernels

#endif  // defined(__x86_64__)
