// AVX2 q8-rsum kernels (this file alone is built with -mavx2 -mfma): vpsadbw row sums, 128 bytes
// per step in four independent accumulators, then 32 at a time, the rest one by one.
#include <immintrin.h>

#include "kernels/q8-rsum/q8_rsum.h"

namespace nfuse::kernels {
namespace {

// Sum of n bytes read as unsigned after XOR with `flip` (0 or 0x80 for every byte).
int64_t sum_bytes(const uint8_t* x, size_t n, uint8_t flip) {
  const __m256i zero = _mm256_setzero_si256();
  const __m256i f = _mm256_set1_epi8(static_cast<char>(flip));
  __m256i s0 = zero, s1 = zero, s2 = zero, s3 = zero;
  auto load = [&](size_t i) {
    return _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i)), f);
  };
  size_t i = 0;
  for (; i + 128 <= n; i += 128) {
    s0 = _mm256_add_epi64(s0, _mm256_sad_epu8(load(i), zero));
    s1 = _mm256_add_epi64(s1, _mm256_sad_epu8(load(i + 32), zero));
    s2 = _mm256_add_epi64(s2, _mm256_sad_epu8(load(i + 64), zero));
    s3 = _mm256_add_epi64(s3, _mm256_sad_epu8(load(i + 96), zero));
  }
  for (; i + 32 <= n; i += 32) s0 = _mm256_add_epi64(s0, _mm256_sad_epu8(load(i), zero));
  const __m256i s = _mm256_add_epi64(_mm256_add_epi64(s0, s1), _mm256_add_epi64(s2, s3));
  const __m128i h = _mm_add_epi64(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
  int64_t total = _mm_cvtsi128_si64(h) + _mm_extract_epi64(h, 1);
  for (; i < n; ++i) total += static_cast<uint8_t>(x[i] ^ flip);
  return total;
}

}  // namespace

int64_t qu8_rsum__avx2(const uint8_t* x, size_t n) { return sum_bytes(x, n, 0); }

int64_t qs8_rsum__avx2(const int8_t* x, size_t n) {
  return sum_bytes(reinterpret_cast<const uint8_t*>(x), n, 0x80) - 128 * static_cast<int64_t>(n);
}

}  // namespace nfuse::kernels
