// AVX2 kernels of qu8_vcvt.h: 8 elements per step, the tail through the scalar kernels.
// Compiled with -mavx2 -mfma (cmake/nfuse_kernels.cmake, "*avx2*").
#include "kernels/qu8-vcvt/qu8_vcvt.h"

#if defined(__x86_64__)

#include <immintrin.h>

#include <cstring>

namespace nfuse::kernels {

void qu8_unpack_f32__avx2(const uint8_t* x, size_t n, uint8_t flip, int32_t zp, float* out) {
  const __m256i f = _mm256_set1_epi32(flip);
  const __m256i z = _mm256_set1_epi32(zp);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    int64_t q;
    std::memcpy(&q, x + i, sizeof q);
    const __m256i v = _mm256_sub_epi32(_mm256_xor_si256(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128(q)), f), z);
    _mm256_storeu_ps(out + i, _mm256_cvtepi32_ps(v));
  }
  qu8_unpack_f32__scalar(x + i, n - i, flip, zp, out + i);
}

void qu8_requant_f32__avx2(const float* sums, size_t n, int32_t bias, float multiplier, const Qu8GemmRequant& rq,
                           uint8_t* y) {
  const __m256i b = _mm256_set1_epi32(bias);
  const __m256 mult = _mm256_set1_ps(multiplier);
  const __m256 lo = _mm256_set1_ps(rq.lo);
  const __m256 hi = _mm256_set1_ps(rq.hi);
  const __m256i zp = _mm256_set1_epi32(rq.zero_point);
  const __m256i flip = _mm256_set1_epi32(static_cast<int>(rq.out_xor));
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i acc = _mm256_add_epi32(_mm256_cvttps_epi32(_mm256_loadu_ps(sums + i)), b);
    __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(acc), mult);
    v = _mm256_min_ps(_mm256_max_ps(v, lo), hi);
    // In [0, 255] after the zero point: packs to bytes without saturation; then the xor.
    const __m256i q = _mm256_xor_si256(_mm256_add_epi32(_mm256_cvtps_epi32(v), zp), flip);
    const __m128i w = _mm_packus_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
    const int64_t bytes = _mm_cvtsi128_si64(_mm_packus_epi16(w, w));
    std::memcpy(y + i, &bytes, sizeof bytes);
  }
  qu8_requant_f32__scalar(sums + i, n - i, bias, multiplier, rq, y + i);
}

}  // namespace nfuse::kernels

#endif  // defined(__x86_64__)
