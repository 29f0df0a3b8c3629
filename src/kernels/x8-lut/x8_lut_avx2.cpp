// x86-64 AVX2 x8-lut kernel. AVX2 has no byte permute across 32 entries, only vpshufb (16
// entries per 128-bit lane, zero where bit 7 of the index is set), so the 256-entry table is 16
// sub-tables of 16 bytes T_0..T_15 (T_k = entries 16k..16k+15), each broadcast to both lanes.
//
// The two halves of the table are looked up separately, each by a telescoping XOR (the scheme
// of XNNPACK's x8-lut): with index i = b (lower half) or i = b ^ 0x80 (upper half) as a signed
// byte, step k (0..7) looks up D_k[i - 16k] with D_0 = T_0, D_k = T_k ^ T_{k-1} (upper half:
// T_{8+k}). For 0 <= i < 128 the steps k <= i / 16 see a non-negative index with low nibble
// i & 15 and XOR to T_{i/16}[i & 15]; later steps see a negative index and give 0. The
// subtraction saturates (vpsubsb), so an index that starts negative (the byte belongs to the
// other half) stays negative and that half contributes 0. 16 vpshufb + 15 vpsubsb/xor each per
// 32 bytes, and only one index and one accumulator live per half beside the tables (a vpblendvb
// tree over the high nibble measured half as fast: vpblendvb issues at 1 per cycle).
#include <immintrin.h>

#include <cstring>

#include "kernels/x8-lut/x8_lut.h"

namespace nfuse::kernels {
namespace {

inline __m256i lookup(const __m256i (&d)[16], __m256i v) {
  const __m256i k16 = _mm256_set1_epi8(16);
  __m256i lo = v;
  __m256i hi = _mm256_xor_si256(v, _mm256_set1_epi8(static_cast<char>(0x80)));
  __m256i y = _mm256_xor_si256(_mm256_shuffle_epi8(d[0], lo), _mm256_shuffle_epi8(d[8], hi));
  for (int k = 1; k < 8; ++k) {
    lo = _mm256_subs_epi8(lo, k16);
    hi = _mm256_subs_epi8(hi, k16);
    y = _mm256_xor_si256(y, _mm256_xor_si256(_mm256_shuffle_epi8(d[k], lo), _mm256_shuffle_epi8(d[8 + k], hi)));
  }
  return y;
}

}  // namespace

void x8_lut__avx2_u32(const uint8_t* x, uint8_t* y, size_t n, const uint8_t* table) {
  __m256i d[16];
  for (int k = 0; k < 16; ++k) {
    d[k] = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(table + 16 * k)));
  }
  for (int k = 15; k > 0; --k) {
    if (k != 8) d[k] = _mm256_xor_si256(d[k], d[k - 1]);  // D_8 = T_8 starts the upper half
  }
  for (; n >= 32; n -= 32, x += 32, y += 32) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y), lookup(d, v));
  }
  if (n != 0) {  // through a stack buffer: no masked byte loads/stores in AVX2
    alignas(32) uint8_t buf[32] = {};
    std::memcpy(buf, x, n);
    const __m256i v = _mm256_load_si256(reinterpret_cast<const __m256i*>(buf));
    _mm256_store_si256(reinterpret_cast<__m256i*>(buf), lookup(d, v));
    std::memcpy(y, buf, n);
  }
}

}  // namespace nfuse::kernels
