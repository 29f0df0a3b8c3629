// x86-64 AVX-512 VBMI x8-lut kernel: vpermi2b indexes 128 bytes held in two zmm registers with
// bits 0..6 of each index byte, so the 256-entry table is two such halves and bit 7 (vpmovb2m)
// picks between the two results: 2 permutes + 1 blend per 64 bytes, 4 vectors per step. The
// *avx512* build rule gives this file AVX-512F; BW and VBMI are enabled per function (the
// dispatcher checks cpu_features().x86_avx512vbmi).
#include <immintrin.h>

#include "kernels/x8-lut/x8_lut.h"

#if defined(NFUSE_HAVE_AVX512_KERNELS)

namespace nfuse::kernels {
namespace {

#define NFUSE_TARGET_AVX512VBMI __attribute__((target("avx512f,avx512bw,avx512vbmi")))

struct Tables {
  __m512i t0, t1, t2, t3;
};

NFUSE_TARGET_AVX512VBMI inline __m512i lookup(const Tables& t, __m512i v) {
  const __m512i lo = _mm512_permutex2var_epi8(t.t0, v, t.t1);  // entries 0..127
  const __m512i hi = _mm512_permutex2var_epi8(t.t2, v, t.t3);  // entries 128..255
  return _mm512_mask_blend_epi8(_mm512_movepi8_mask(v), lo, hi);
}

}  // namespace

NFUSE_TARGET_AVX512VBMI void x8_lut__avx512vbmi_u256(const uint8_t* x, uint8_t* y, size_t n,
                                                     const uint8_t* table) {
  const Tables t{_mm512_loadu_si512(table), _mm512_loadu_si512(table + 64), _mm512_loadu_si512(table + 128),
                 _mm512_loadu_si512(table + 192)};
  for (; n >= 256; n -= 256, x += 256, y += 256) {
    const __m512i v0 = _mm512_loadu_si512(x);
    const __m512i v1 = _mm512_loadu_si512(x + 64);
    const __m512i v2 = _mm512_loadu_si512(x + 128);
    const __m512i v3 = _mm512_loadu_si512(x + 192);
    _mm512_storeu_si512(y, lookup(t, v0));
    _mm512_storeu_si512(y + 64, lookup(t, v1));
    _mm512_storeu_si512(y + 128, lookup(t, v2));
    _mm512_storeu_si512(y + 192, lookup(t, v3));
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
