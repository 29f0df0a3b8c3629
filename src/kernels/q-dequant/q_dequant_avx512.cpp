// AVX-512 kernels of q_dequant.h: 16 elements per step, the tail through the scalar kernels (no
// byte- or word-masked loads in AVX-512F alone). Compiled with -mavx512f (cmake/nfuse_kernels.cmake,
// "*avx512*").
#include "kernels/q-dequant/q_dequant.h"

#if defined(__x86_64__) && defined(NFUSE_HAVE_AVX512_KERNELS)

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC bug 105593 (see qu8_gemm_avx512vnni.cpp)
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

namespace nfuse::kernels {
namespace {

inline __m512 dequantize16(__m512i widened, __m512i flip, __m512i zp, __m512 scale) {
  return _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_xor_si512(widened, flip), zp)), scale);
}

}  // namespace

void q8_dequantize__avx512(const uint8_t* x, size_t n, uint8_t flip, int32_t zp, float scale, float* y) {
  const __m512i f = _mm512_set1_epi32(flip), z = _mm512_set1_epi32(zp);
  const __m512 s = _mm512_set1_ps(scale);
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i));
    _mm512_storeu_ps(y + i, dequantize16(_mm512_cvtepu8_epi32(q), f, z, s));
  }
  q8_dequantize__scalar(x + i, n - i, flip, zp, scale, y + i);
}

void q16_dequantize__avx512(const uint16_t* x, size_t n, uint16_t flip, int32_t zp, float scale, float* y) {
  const __m512i f = _mm512_set1_epi32(flip), z = _mm512_set1_epi32(zp);
  const __m512 s = _mm512_set1_ps(scale);
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i));
    _mm512_storeu_ps(y + i, dequantize16(_mm512_cvtepu16_epi32(q), f, z, s));
  }
  q16_dequantize__scalar(x + i, n - i, flip, zp, scale, y + i);
}

}  // namespace nfuse::kernels

#endif  // __x86_64__ && NFUSE_HAVE_AVX512_KERNELS
