// AVX-512 VNNI microkernels of the quantized GEMM. This file alone is compiled with
// -mavx512f -mavx512bw -mavx512vl -mavx512vnni (cmake/nfuse_kernels.cmake, "*avx512vnni*").
//
// 8x32c4: A is packed as u8 in K groups of 4, so one 32-bit broadcast (folded into vpdpbusd as
// {1to16}) gives a row's 4 activations; B is packed as s8 groups of 4 per column, 16 columns per
// zmm. vpdpbusd multiplies u8 x s8 and adds each group of 4 products straight into the int32
// lane: no intermediate int16, so no saturation (vpdpbusds, the saturating form, is not used);
// the int32 adds wrap mod 2^32 as in the scalar kernel.
// Registers: 16 accumulators + 2 B vectors of the 32.
#include "kernels/qu8-gemm/qu8_gemm.h"

#if defined(__x86_64__)

// GCC 12's AVX-512 intrinsics pass _mm512_undefined_*() (a self-initialized variable) as the
// unused merge source, which -Wmaybe-uninitialized reports once inlined (GCC bug 105593).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <cstring>

#if !defined(__AVX512F__) || !defined(__AVX512VNNI__) || !defined(__AVX512BW__)
#error "qu8_gemm_avx512vnni.cpp must be compiled with -mavx512f -mavx512bw -mavx512vl -mavx512vnni"
#endif

namespace nfuse::kernels {
namespace {

constexpr size_t kNr = 32;

inline __mmask16 lanes_below(size_t n) { return static_cast<__mmask16>((1u << n) - 1u); }

// acc += per lane, the 4 products u8(a) x s8(b), summed in int32 (vpdpbusd). GCC 12 does not
// keep the intrinsic's accumulator in place when it sits in zmm16-31: every K step copies all
// accumulators and spills some (about half the throughput); the one-instruction asm with the
// accumulator as an in/out operand avoids it and computes the same instruction.
inline __m512i dpbusd(__m512i acc, __m512i a_u8, __m512i b_s8) {
#if defined(__GNUC__) && !defined(__clang__)
  __asm__("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(a_u8), "v"(b_s8));
  return acc;
#else
  return _mm512_dpbusd_epi32(acc, a_u8, b_s8);
#endif
}

template <size_t MR>
inline void gemm(size_t mr, size_t nc, size_t kc, const void* a_panel, const void* w, void* c, size_t c_stride,
                 const Qu8GemmRequant& rq) {
  const uint8_t* a = static_cast<const uint8_t*>(a_panel);
  const uint8_t* wb = static_cast<const uint8_t*>(w);
  const uint8_t* b = wb + kNr * sizeof(int32_t);

  __m512i acc[MR][2];
  {
    const __m512i b0 = _mm512_loadu_si512(wb);
    const __m512i b1 = _mm512_loadu_si512(wb + 64);
#pragma GCC unroll 8
    for (size_t r = 0; r < MR; ++r) {
      acc[r][0] = b0;
      acc[r][1] = b1;
    }
  }
  size_t groups = kc / 4;
  if constexpr (MR == 1) {
    // One row has only 2 dependency chains: 2 more on odd K groups hide vpdpbusd's latency
    // (int32 adds wrap, so the split sum equals the sequential one).
    __m512i odd0 = _mm512_setzero_si512();
    __m512i odd1 = _mm512_setzero_si512();
    for (; groups >= 2; groups -= 2) {
      int32_t q0, q1;
      std::memcpy(&q0, a, sizeof q0);
      std::memcpy(&q1, a + 4, sizeof q1);
      const __m512i va0 = _mm512_set1_epi32(q0);
      const __m512i va1 = _mm512_set1_epi32(q1);
      acc[0][0] = dpbusd(acc[0][0], va0, _mm512_loadu_si512(b));
      acc[0][1] = dpbusd(acc[0][1], va0, _mm512_loadu_si512(b + 64));
      odd0 = dpbusd(odd0, va1, _mm512_loadu_si512(b + 128));
      odd1 = dpbusd(odd1, va1, _mm512_loadu_si512(b + 192));
      a += 8;
      b += 8 * kNr;
    }
    acc[0][0] = _mm512_add_epi32(acc[0][0], odd0);
    acc[0][1] = _mm512_add_epi32(acc[0][1], odd1);
  }
  for (size_t g = 0; g < groups; ++g) {
    const __m512i w0 = _mm512_loadu_si512(b);
    const __m512i w1 = _mm512_loadu_si512(b + 64);
    b += 4 * kNr;
#pragma GCC unroll 8
    for (size_t r = 0; r < MR; ++r) {
      int32_t quad;
      std::memcpy(&quad, a + r * 4, sizeof quad);
      const __m512i va = _mm512_set1_epi32(quad);
      acc[r][0] = dpbusd(acc[r][0], va, w0);
      acc[r][1] = dpbusd(acc[r][1], va, w1);
    }
    a += MR * 4;
  }

  const __mmask16 m0 = lanes_below(nc < 16 ? nc : 16);
  const __mmask16 m1 = lanes_below(nc > 16 ? nc - 16 : 0);
  // Rows >= mr alias the last real row and are stored first (in reverse order), so the real row's
  // store lands last; every row index is then a constant and acc stays in registers.
  const size_t elem = rq.int32_out ? sizeof(int32_t) : 1;
  uint8_t* cr[MR];
  cr[0] = static_cast<uint8_t*>(c);
  for (size_t r = 1; r < MR; ++r) {
    cr[r] = r < mr ? cr[r - 1] + c_stride * elem : cr[r - 1];
  }
  if (rq.int32_out) {
#pragma GCC unroll 8
    for (size_t i = 0; i < MR; ++i) {
      const size_t r = MR - 1 - i;
      int* row = reinterpret_cast<int*>(cr[r]);
      _mm512_mask_storeu_epi32(row, m0, acc[r][0]);
      _mm512_mask_storeu_epi32(row + 16, m1, acc[r][1]);
    }
    return;
  }

  const __m512 mult0 = _mm512_loadu_ps(b);
  const __m512 mult1 = _mm512_loadu_ps(b + 64);
  const __m512 lo = _mm512_set1_ps(rq.lo);
  const __m512 hi = _mm512_set1_ps(rq.hi);
  const __m512i zp = _mm512_set1_epi32(rq.zero_point);
  const __m512i flip = _mm512_set1_epi32(static_cast<int>(rq.out_xor));
#pragma GCC unroll 8
  for (size_t i = 0; i < MR; ++i) {
    const size_t r = MR - 1 - i;
    uint8_t* row = cr[r];
#pragma GCC unroll 2
    for (size_t h = 0; h < 2; ++h) {
      // qu8_gemm.h, "Exactness": cvtdq2ps, mulps, clamp, cvtps2dq (round half to even under the
      // default MXCSR), + zero point; the value is then in [qmin, qmax], so vpmovdb's truncation
      // to bytes is exact (the xor flips the sign bit for s8 outputs).
      __m512 x = _mm512_mul_ps(_mm512_cvtepi32_ps(acc[r][h]), h == 0 ? mult0 : mult1);
      x = _mm512_min_ps(_mm512_max_ps(x, lo), hi);
      const __m512i q = _mm512_xor_si512(_mm512_add_epi32(_mm512_cvtps_epi32(x), zp), flip);
      const __mmask16 m = h == 0 ? m0 : m1;
      if (m == 0xFFFF) {
        _mm_storeu_si128(reinterpret_cast<__m128i*>(row + 16 * h), _mm512_cvtepi32_epi8(q));
      } else {
        _mm_mask_storeu_epi8(row + 16 * h, m, _mm512_cvtepi32_epi8(q));
      }
    }
  }
}

}  // namespace

void qu8_gemm__avx512vnni_8x32c4(size_t mr, size_t nc, size_t kc, const void* a, const void* w, void* c,
                                 size_t c_stride, const Qu8GemmRequant& rq) {
  gemm<8>(mr, nc, kc, a, w, c, c_stride, rq);
}

void qu8_gemm__avx512vnni_1x32c4(size_t mr, size_t nc, size_t kc, const void* a, const void* w, void* c,
                                 size_t c_stride, const Qu8GemmRequant& rq) {
  gemm<1>(mr, nc, kc, a, w, c, c_stride, rq);
}

}  // namespace nfuse::kernels

#endif  // defined(__x86_64__)
