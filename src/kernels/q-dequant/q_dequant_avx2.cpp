// AVX2 kernels of q_dequant.h: 8 elements per step, the tail through the scalar kernels.
// Compiled with -mavx2 -mfma (cmake/nfuse_kernels.cmake, "*avx2*"); the one multiply is not fused.
#include "kernels/q-dequant/q_dequant.h"

#if defined(__x86_64__)

#include <immintrin.h>

#include <cstring>

namespace nfuse::kernels {
namespace {

inline __m256 dequantize8(__m256i widened, __m256i flip, __m256i zp, __m256 scale) {
  return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_xor_si256(widened, flip), zp)), scale);
}

}  // namespace

void q8_dequantize__avx2(const uint8_t* x, size_t n, uint8_t flip, int32_t zp, float scale, float* y) {
  const __m256i f = _mm256_set1_epi32(flip), z = _mm256_set1_epi32(zp);
  const __m256 s = _mm256_set1_ps(scale);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    int64_t q;
    std::memcpy(&q, x + i, sizeof q);
    _mm256_storeu_ps(y + i, dequantize8(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128(q)), f, z, s));
  }
  q8_dequantize__scalar(x + i, n - i, flip, zp, scale, y + i);
}

void q16_dequantize__avx2(const uint16_t* x, size_t n, uint16_t flip, int32_t zp, float scale, float* y) {
  const __m256i f = _mm256_set1_epi32(flip), z = _mm256_set1_epi32(zp);
  const __m256 s = _mm256_set1_ps(scale);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i));
    _mm256_storeu_ps(y + i, dequantize8(_mm256_cvtepu16_epi32(q), f, z, s));
  }
  q16_dequantize__scalar(x + i, n - i, flip, zp, scale, y + i);
}

}  // namespace nfuse::kernels

#endif  // __x86_64__
