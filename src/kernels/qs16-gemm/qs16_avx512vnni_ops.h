// Vector helpers shared by the AVX-512 VNNI 16-bit GEMM kernels (qs16_gemm_avx512vnni.cpp,
// qs16_wxgemm_avx512vnni.cpp). Include only from sources compiled with AVX-512 F/BW/VL/VNNI.
#pragma once

#include <immintrin.h>

#if !defined(__AVX512VNNI__) || !defined(__AVX512BW__)
#error "qs16_avx512vnni_ops.h needs -mavx512bw -mavx512vnni"
#endif

namespace nfuse::kernels::qs16_avx512vnni {

// acc += per lane, the 2 products int16(a) x int16(b), summed in int32 (vpdpwssd: exact,
// wrapping, never the saturating vpdpwssds). GCC 12 copies accumulators in zmm16-31 around the
// intrinsic; the one-instruction asm keeps them in place and computes the same instruction.
inline __m512i dpwssd(__m512i acc, __m512i a, __m512i b) {
#if defined(__GNUC__) && !defined(__clang__)
  __asm__("vpdpwssd %2, %1, %0" : "+v"(acc) : "v"(a), "v"(b));
  return acc;
#else
  return _mm512_dpwssd_epi32(acc, a, b);
#endif
}

// int64 -> f64, exact for |x| < 2^51 (the 1.5 * 2^52 magic number; see qs16_gemm_avx2.cpp).
inline __m512d int64_to_f64(__m512i x) {
  const __m512i magic_i = _mm512_set1_epi64(0x4338000000000000LL);
  const __m512d magic_d = _mm512_set1_pd(6755399441055744.0);
  return _mm512_sub_pd(_mm512_castsi512_pd(_mm512_add_epi64(x, magic_i)), magic_d);
}

}  // namespace nfuse::kernels::qs16_avx512vnni
