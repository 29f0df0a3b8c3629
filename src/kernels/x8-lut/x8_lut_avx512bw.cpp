// x86-64 AVX-512 BW x8-lut kernel for CPUs without VBMI (Skylake-X, Cascade Lake): the AVX2
// scheme (x8_lut_avx2.cpp) on 64 bytes, the 16-byte sub-tables broadcast to all four lanes and
// the high-nibble selection done with k-mask blends (vptestmb per bit). All 16 tables, the 16
// lookups and the index fit the 32 zmm registers. The *avx512* build rule gives this file
// AVX-512F; BW is enabled per function (the dispatcher checks cpu_features().x86_avx512bw).
#include <immintrin.h>

#include "kernels/x8-lut/x8_lut.h"

#if defined(NFUSE_HAVE_AVX512_KERNELS)

namespace nfuse::kernels {
namespace {

#define NFUSE_TARGET_AVX512BW __attribute__((target("avx512f,avx512bw")))

NFUSE_TARGET_AVX512BW inline __m512i lookup(const __m512i (&t)[16], __m512i v) {
  const __m512i idx = _mm512_and_si512(v, _mm512_set1_epi8(0x0F));
  __m512i r[16];
  for (int k = 0; k < 16; ++k) r[k] = _mm512_shuffle_epi8(t[k], idx);
  const __mmask64 m4 = _mm512_test_epi8_mask(v, _mm512_set1_epi8(0x10));
  for (int j = 0; j < 8; ++j) r[j] = _mm512_mask_blend_epi8(m4, r[2 * j], r[2 * j + 1]);
  const __mmask64 m5 = _mm512_test_epi8_mask(v, _mm512_set1_epi8(0x20));
  for (int j = 0; j < 4; ++j) r[j] = _mm512_mask_blend_epi8(m5, r[2 * j], r[2 * j + 1]);
  const __mmask64 m6 = _mm512_test_epi8_mask(v, _mm512_set1_epi8(0x40));
  for (int j = 0; j < 2; ++j) r[j] = _mm512_mask_blend_epi8(m6, r[2 * j], r[2 * j + 1]);
  return _mm512_mask_blend_epi8(_mm512_movepi8_mask(v), r[0], r[1]);
}

}  // namespace

NFUSE_TARGET_AVX512BW void x8_lut__avx512bw_u64(const uint8_t* x, uint8_t* y, size_t n, const uint8_t* table) {
  __m512i t[16];
  for (int k = 0; k < 16; ++k) {
    // The zero-masked form: GCC 12's plain _mm512_broadcast_i32x4 trips -Wuninitialized.
    t[k] = _mm512_maskz_broadcast_i32x4(0xFFFF, _mm_loadu_si128(reinterpret_cast<const __m128i*>(table + 16 * k)));
  }
  for (; n >= 64; n -= 64, x += 64, y += 64) {
    _mm512_storeu_si512(y, lookup(t, _mm512_loadu_si512(x)));
  }
  if (n != 0) {
    const __mmask64 m = ~uint64_t{0} >> (64 - n);
    _mm512_mask_storeu_epi8(y, m, lookup(t, _mm512_maskz_loadu_epi8(m, x)));
  }
}

}  // namespace nfuse::kernels

#endif  // NFUSE_HAVE_AVX512_KERNELS
