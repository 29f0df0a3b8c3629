// AVX2 kernel of f32_rminmax.h: four vectors of 8 per step. vminps(x, acc) returns acc when x is
// NaN (its second operand when the comparison is false), which is the skip the header asks for.
#if defined(__x86_64__)
#include <immintrin.h>

#include "kernels/f32-rminmax/f32_rminmax.h"

namespace nfuse::kernels {

void f32_rminmax__avx2(const float* x, size_t n, float* lo, float* hi) {
  __m256 l0 = _mm256_set1_ps(*lo), l1 = l0, l2 = l0, l3 = l0;
  __m256 h0 = _mm256_set1_ps(*hi), h1 = h0, h2 = h0, h3 = h0;
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m256 a = _mm256_loadu_ps(x + i), b = _mm256_loadu_ps(x + i + 8);
    const __m256 c = _mm256_loadu_ps(x + i + 16), d = _mm256_loadu_ps(x + i + 24);
    l0 = _mm256_min_ps(a, l0), h0 = _mm256_max_ps(a, h0);
    l1 = _mm256_min_ps(b, l1), h1 = _mm256_max_ps(b, h1);
    l2 = _mm256_min_ps(c, l2), h2 = _mm256_max_ps(c, h2);
    l3 = _mm256_min_ps(d, l3), h3 = _mm256_max_ps(d, h3);
  }
  for (; i + 8 <= n; i += 8) {
    const __m256 a = _mm256_loadu_ps(x + i);
    l0 = _mm256_min_ps(a, l0), h0 = _mm256_max_ps(a, h0);
  }
  // The accumulators hold no NaN, so their order no longer matters.
  l0 = _mm256_min_ps(_mm256_min_ps(l0, l1), _mm256_min_ps(l2, l3));
  h0 = _mm256_max_ps(_mm256_max_ps(h0, h1), _mm256_max_ps(h2, h3));
  alignas(32) float ls[8], hs[8];
  _mm256_store_ps(ls, l0);
  _mm256_store_ps(hs, h0);
  float l = ls[0], h = hs[0];
  for (size_t j = 1; j < 8; ++j) {
    l = ls[j] < l ? ls[j] : l;
    h = hs[j] > h ? hs[j] : h;
  }
  for (; i < n; ++i) {
    l = x[i] < l ? x[i] : l;
    h = x[i] > h ? x[i] : h;
  }
  *lo = l;
  *hi = h;
}

}  // namespace nfuse::kernels
#endif
