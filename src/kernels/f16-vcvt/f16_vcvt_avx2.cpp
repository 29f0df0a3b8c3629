// F16C half <-> float conversion (f16_vcvt.h). Built with the AVX2 options plus -mf16c
// (cmake/nfuse_kernels.cmake); f16_vcvt.cpp selects it only where the CPU reports F16C.
#if defined(__x86_64__)
#include <immintrin.h>

#include <cstring>

#include "kernels/f16-vcvt/f16_vcvt.h"

namespace nfuse::kernels {

void f16_f32_vcvt__f16c(const uint16_t* x, float* y, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i));
    _mm256_storeu_ps(y + i, _mm256_cvtph_ps(h));
  }
  if (i < n) {  // the tail through a zeroed stack copy: no load or store past n
    uint16_t in[8] = {};
    float out[8];
    std::memcpy(in, x + i, (n - i) * sizeof(uint16_t));
    _mm256_storeu_ps(out, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in))));
    std::memcpy(y + i, out, (n - i) * sizeof(float));
  }
}

void f32_f16_vcvt__f16c(const float* x, uint16_t* y, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), h);
  }
  if (i < n) {
    float in[8] = {};
    uint16_t out[8];
    std::memcpy(in, x + i, (n - i) * sizeof(float));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out),
                     _mm256_cvtps_ph(_mm256_loadu_ps(in), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    std::memcpy(y + i, out, (n - i) * sizeof(uint16_t));
  }
}

}  // namespace nfuse::kernels
#endif  // defined(__x86_64__)
