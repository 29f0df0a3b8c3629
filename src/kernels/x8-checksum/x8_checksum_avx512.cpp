// The AVX-512 block kernel of x8_checksum.h: the eight lanes in one register.
#include <immintrin.h>

// GCC 12's AVX-512 shift and shuffle intrinsics pass _mm512_undefined_epi32() as the unused merge
// source, which -Wmaybe-uninitialized reports once inlined (GCC bug 105593).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "kernels/x8-checksum/x8_checksum.h"

namespace nfuse::kernels {

void x8_checksum_blocks__avx512(const uint8_t* data, size_t blocks, uint64_t acc[kChecksumLanes]) {
  __m512i a = _mm512_loadu_si512(acc);
  const __m512i key = _mm512_loadu_si512(kChecksumKey);
  const __m512i step = _mm512_set1_epi64(static_cast<long long>(kChecksumStep));
  const __m512i prime = _mm512_set1_epi64(static_cast<long long>(kChecksumPrime32));
  for (size_t b = 0; b < blocks; ++b) {
    const uint8_t* p = data + b * kChecksumStripesPerBlock * kChecksumStripeBytes;
    __m512i k = key;
    // Two accumulators: the adds of one stripe do not wait for the previous stripe's.
    __m512i even = _mm512_setzero_si512(), odd = _mm512_setzero_si512();
    for (size_t j = 0; j < kChecksumStripesPerBlock; j += 2, p += 2 * kChecksumStripeBytes) {
      const __m512i x0 = _mm512_loadu_si512(p);
      const __m512i x1 = _mm512_loadu_si512(p + kChecksumStripeBytes);
      const __m512i m0 = _mm512_xor_si512(x0, k);
      k = _mm512_add_epi64(k, step);
      const __m512i m1 = _mm512_xor_si512(x1, k);
      k = _mm512_add_epi64(k, step);
      even = _mm512_add_epi64(even, _mm512_mul_epu32(m0, _mm512_srli_epi64(m0, 32)));
      odd = _mm512_add_epi64(odd, _mm512_mul_epu32(m1, _mm512_srli_epi64(m1, 32)));
      even = _mm512_add_epi64(even, _mm512_shuffle_epi32(x0, _MM_PERM_BADC));
      odd = _mm512_add_epi64(odd, _mm512_shuffle_epi32(x1, _MM_PERM_BADC));
    }
    a = _mm512_add_epi64(a, _mm512_add_epi64(even, odd));
    const __m512i s = _mm512_xor_si512(_mm512_xor_si512(a, _mm512_srli_epi64(a, 47)), key);
    a = _mm512_add_epi64(_mm512_mul_epu32(s, prime),
                         _mm512_slli_epi64(_mm512_mul_epu32(_mm512_srli_epi64(s, 32), prime), 32));
  }
  _mm512_storeu_si512(acc, a);
}

}  // namespace nfuse::kernels
