// The AVX2 block kernel of x8_checksum.h: the eight lanes in two registers.
#include <immintrin.h>

#include "kernels/x8-checksum/x8_checksum.h"

namespace nfuse::kernels {

void x8_checksum_blocks__avx2(const uint8_t* data, size_t blocks, uint64_t acc[kChecksumLanes]) {
  __m256i a0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(acc));
  __m256i a1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(acc + 4));
  const __m256i key0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kChecksumKey));
  const __m256i key1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kChecksumKey + 4));
  const __m256i step = _mm256_set1_epi64x(static_cast<long long>(kChecksumStep));
  const __m256i prime = _mm256_set1_epi64x(static_cast<long long>(kChecksumPrime32));
  for (size_t b = 0; b < blocks; ++b) {
    const uint8_t* p = data + b * kChecksumStripesPerBlock * kChecksumStripeBytes;
    __m256i k0 = key0, k1 = key1;
    for (size_t j = 0; j < kChecksumStripesPerBlock; ++j, p += kChecksumStripeBytes) {
      const __m256i x0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
      const __m256i x1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 32));
      const __m256i m0 = _mm256_xor_si256(x0, k0), m1 = _mm256_xor_si256(x1, k1);
      // lo32(k) * hi32(k), plus the neighbouring word (64-bit halves of each 128-bit pair swapped).
      a0 = _mm256_add_epi64(a0, _mm256_mul_epu32(m0, _mm256_srli_epi64(m0, 32)));
      a1 = _mm256_add_epi64(a1, _mm256_mul_epu32(m1, _mm256_srli_epi64(m1, 32)));
      a0 = _mm256_add_epi64(a0, _mm256_shuffle_epi32(x0, _MM_SHUFFLE(1, 0, 3, 2)));
      a1 = _mm256_add_epi64(a1, _mm256_shuffle_epi32(x1, _MM_SHUFFLE(1, 0, 3, 2)));
      k0 = _mm256_add_epi64(k0, step);
      k1 = _mm256_add_epi64(k1, step);
    }
    // (a ^ a >> 47 ^ key) * prime32, the 64 x 32-bit product from two 32 x 32 ones.
    __m256i s0 = _mm256_xor_si256(_mm256_xor_si256(a0, _mm256_srli_epi64(a0, 47)), key0);
    __m256i s1 = _mm256_xor_si256(_mm256_xor_si256(a1, _mm256_srli_epi64(a1, 47)), key1);
    a0 = _mm256_add_epi64(_mm256_mul_epu32(s0, prime),
                          _mm256_slli_epi64(_mm256_mul_epu32(_mm256_srli_epi64(s0, 32), prime), 32));
    a1 = _mm256_add_epi64(_mm256_mul_epu32(s1, prime),
                          _mm256_slli_epi64(_mm256_mul_epu32(_mm256_srli_epi64(s1, 32), prime), 32));
  }
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(acc), a0);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(acc + 4), a1);
}

}  // namespace nfuse::kernels
