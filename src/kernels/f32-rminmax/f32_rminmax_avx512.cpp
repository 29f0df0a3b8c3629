// AVX-512 kernel of f32_rminmax.h: four vectors of 16 per step, the tail through a masked load
// whose masked-off lanes hold the accumulator's own seed (so they change nothing). vminps(x,
// acc) returns acc when x is NaN, the skip the header asks for.
#if defined(__x86_64__)
// GCC 12's _mm512_min_ps / _mm512_max_ps pass _mm512_undefined_ps() as the unused merge source,
// which -Wmaybe-uninitialized reports once inlined (GCC bug 105593).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include "kernels/f32-rminmax/f32_rminmax.h"

namespace nfuse::kernels {

void f32_rminmax__avx512(const float* x, size_t n, float* lo, float* hi) {
  const __m512 seed_lo = _mm512_set1_ps(*lo), seed_hi = _mm512_set1_ps(*hi);
  __m512 l0 = seed_lo, l1 = l0, l2 = l0, l3 = l0;
  __m512 h0 = seed_hi, h1 = h0, h2 = h0, h3 = h0;
  size_t i = 0;
  for (; i + 64 <= n; i += 64) {
    const __m512 a = _mm512_loadu_ps(x + i), b = _mm512_loadu_ps(x + i + 16);
    const __m512 c = _mm512_loadu_ps(x + i + 32), d = _mm512_loadu_ps(x + i + 48);
    l0 = _mm512_min_ps(a, l0), h0 = _mm512_max_ps(a, h0);
    l1 = _mm512_min_ps(b, l1), h1 = _mm512_max_ps(b, h1);
    l2 = _mm512_min_ps(c, l2), h2 = _mm512_max_ps(c, h2);
    l3 = _mm512_min_ps(d, l3), h3 = _mm512_max_ps(d, h3);
  }
  for (; i + 16 <= n; i += 16) {
    const __m512 a = _mm512_loadu_ps(x + i);
    l0 = _mm512_min_ps(a, l0), h0 = _mm512_max_ps(a, h0);
  }
  if (i < n) {
    const auto m = static_cast<__mmask16>((1u << (n - i)) - 1);
    l1 = _mm512_min_ps(_mm512_mask_loadu_ps(seed_lo, m, x + i), l1);
    h1 = _mm512_max_ps(_mm512_mask_loadu_ps(seed_hi, m, x + i), h1);
  }
  // The accumulators hold no NaN, so their order no longer matters.
  *lo = _mm512_reduce_min_ps(_mm512_min_ps(_mm512_min_ps(l0, l1), _mm512_min_ps(l2, l3)));
  *hi = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_max_ps(h0, h1), _mm512_max_ps(h2, h3)));
}

}  // namespace nfuse::kernels
#endif
