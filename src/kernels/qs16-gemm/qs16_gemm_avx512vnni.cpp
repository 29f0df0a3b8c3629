// AVX-512 VNNI microkernels of the 16-bit-activation GEMM. Compiled alone with AVX-512 F/BW/VL/
// VNNI (cmake/nfuse_kernels.cmake, "*avx512vnni*" sources); selected only where the CPU has them.
//
// 8x32c2: as the AVX2 kernel (qs16_gemm_avx2.cpp) at twice the width, with vpdpwssd (int16 pairs
// multiplied and added straight into int32: exact, wrapping, never the saturating vpdpwssds).
// int32 sums cover one K chunk (kQs16GemmKChunk), then go sign-extended into int64 totals.
// Registers: 16 int32 accumulators, 2 widened B vectors, 1 broadcast.
#include "kernels/qs16-gemm/qs16_gemm.h"

#if defined(__x86_64__) && defined(NFUSE_HAVE_AVX512_KERNELS)

// GCC 12's AVX-512 intrinsics pass _mm512_undefined_*() as the unused merge source, which
// -Wmaybe-uninitialized reports once inlined (GCC bug 105593).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <cstring>

#include "kernels/qs16-gemm/qs16_avx512vnni_ops.h"

#if !defined(__AVX512VNNI__) || !defined(__AVX512BW__)
#error "qs16_gemm_avx512vnni.cpp must be compiled with -mavx512bw -mavx512vnni"
#endif

namespace nfuse::kernels {
namespace {

using qs16_avx512vnni::dpwssd;
using qs16_avx512vnni::int64_to_f64;

constexpr size_t kNr = 32;

// 16 int64 totals -> 16 requantized int32.
inline __m512i requantize(const int64_t* tot, __m512 mult, __m512 lo, __m512 hi, __m512i zp) {
  const __m256 f0 = _mm512_cvtpd_ps(int64_to_f64(_mm512_loadu_si512(tot)));
  const __m256 f1 = _mm512_cvtpd_ps(int64_to_f64(_mm512_loadu_si512(tot + 8)));
  __m512d both = _mm512_castpd256_pd512(_mm256_castps_pd(f0));
  both = _mm512_insertf64x4(both, _mm256_castps_pd(f1), 1);
  __m512 x = _mm512_mul_ps(_mm512_castpd_ps(both), mult);
  x = _mm512_min_ps(_mm512_max_ps(x, lo), hi);
  return _mm512_add_epi32(_mm512_cvtps_epi32(x), zp);
}

inline void widen_into(int64_t* tot, __m512i acc) {
  const __m512i lo = _mm512_cvtepi32_epi64(_mm512_castsi512_si256(acc));
  const __m512i hi = _mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64(acc, 1));
  _mm512_storeu_si512(tot, _mm512_add_epi64(_mm512_loadu_si512(tot), lo));
  _mm512_storeu_si512(tot + 8, _mm512_add_epi64(_mm512_loadu_si512(tot + 8), hi));
}

// One K chunk (count <= kQs16GemmKChunk / 2 pairs) of MR rows in int32, added into the int64
// totals.
template <size_t MR>
inline void chunk(int64_t (*tot)[kNr], const uint8_t* a, const uint8_t* b, size_t count) {
  __m512i acc[MR][2];
#pragma GCC unroll 8
  for (size_t r = 0; r < MR; ++r) {
    acc[r][0] = _mm512_setzero_si512();
    acc[r][1] = _mm512_setzero_si512();
  }
  for (size_t g = 0; g < count; ++g) {
    const __m512i w0 = _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b)));
    const __m512i w1 = _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 32)));
    b += 2 * kNr;
#pragma GCC unroll 8
    for (size_t r = 0; r < MR; ++r) {
      int32_t pair;
      std::memcpy(&pair, a + r * 4, sizeof pair);
      const __m512i va = _mm512_set1_epi32(pair);
      acc[r][0] = dpwssd(acc[r][0], va, w0);
      acc[r][1] = dpwssd(acc[r][1], va, w1);
    }
    a += MR * 4;
  }
#pragma GCC unroll 8
  for (size_t r = 0; r < MR; ++r) {
    widen_into(tot[r], acc[r][0]);
    widen_into(tot[r] + 16, acc[r][1]);
  }
}

template <size_t MR>
inline void gemm(size_t mr, size_t nc, size_t kc, const int16_t* a_panel, const void* w, int16_t* c,
                 size_t c_stride, const Qs16GemmRequant& rq) {
  const uint8_t* a = reinterpret_cast<const uint8_t*>(a_panel);
  const uint8_t* wb = static_cast<const uint8_t*>(w);
  const uint8_t* b = wb + kNr * sizeof(int64_t);

  alignas(64) int64_t tot[MR][kNr];
  for (size_t r = 0; r < MR; ++r) std::memcpy(tot[r], wb, sizeof tot[r]);
  const size_t groups = kc / 2;
  constexpr size_t kChunkGroups = kQs16GemmKChunk / 2;
  for (size_t g0 = 0; g0 < groups; g0 += kChunkGroups) {
    const size_t count = groups - g0 < kChunkGroups ? groups - g0 : kChunkGroups;
    chunk<MR>(tot, a, b, count);
    a += count * MR * 4;
    b += count * 2 * kNr;
  }

  const __m512 mult0 = _mm512_loadu_ps(b);  // the multipliers follow the weights
  const __m512 mult1 = _mm512_loadu_ps(b + 64);
  const __m512 lo = _mm512_set1_ps(rq.lo);
  const __m512 hi = _mm512_set1_ps(rq.hi);
  const __m512i zp = _mm512_set1_epi32(rq.zero_point);
  const __m256i flip = _mm256_set1_epi16(static_cast<int16_t>(rq.out_xor));
  const __mmask16 m0 = static_cast<__mmask16>(nc >= 16 ? 0xFFFFu : (1u << nc) - 1u);
  const __mmask16 m1 = static_cast<__mmask16>(nc >= 32 ? 0xFFFFu : nc > 16 ? (1u << (nc - 16)) - 1u : 0u);
  for (size_t r = 0; r < mr; ++r) {
    // Values are already within int16: vpmovdw truncation is exact narrowing.
    const __m256i q0 = _mm256_xor_si256(_mm512_cvtepi32_epi16(requantize(tot[r], mult0, lo, hi, zp)), flip);
    const __m256i q1 = _mm256_xor_si256(_mm512_cvtepi32_epi16(requantize(tot[r] + 16, mult1, lo, hi, zp)), flip);
    int16_t* row = c + r * c_stride;
    _mm256_mask_storeu_epi16(row, m0, q0);
    if (m1 != 0) _mm256_mask_storeu_epi16(row + 16, m1, q1);
  }
}

}  // namespace

void qs16_gemm__avx512vnni_8x32c2(size_t mr, size_t nc, size_t kc, const int16_t* a, const void* w, int16_t* c,
                                  size_t c_stride, const Qs16GemmRequant& rq) {
  gemm<8>(mr, nc, kc, a, w, c, c_stride, rq);
}

void qs16_gemm__avx512vnni_1x32c2(size_t mr, size_t nc, size_t kc, const int16_t* a, const void* w, int16_t* c,
                                  size_t c_stride, const Qs16GemmRequant& rq) {
  gemm<1>(mr, nc, kc, a, w, c, c_stride, rq);
}

}  // namespace nfuse::kernels

#endif  // defined(__x86_64__) && defined(NFUSE_HAVE_AVX512_KERNELS)
