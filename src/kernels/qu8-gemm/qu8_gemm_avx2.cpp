// AVX2 microkernels of the quantized GEMM. This file alone is compiled with -mavx2 -mfma
// (cmake/nfuse_kernels.cmake, "*avx2*" sources).
//
// 4x16c2: A is packed as u16 (zero-extended u8) in K pairs, so one vpbroadcastd puts a row's
// (A[k], A[k+1]) pair in every 32-bit lane; B is packed as s8 K pairs per column and widened with
// vpmovsxbw (16 bytes -> 8 columns x 2 K as int16). vpmaddwd then forms A[k]B[k][j] +
// A[k+1]B[k+1][j] per column in int32 exactly (|sum| <= 2 * 255 * 128 = 65280), and vpaddd
// accumulates (wrapping mod 2^32, as the scalar kernel). vpmaddubsw would take the u8 x s8
// products directly but saturates their pair sum to int16 (255*127*2 = 64770 > 32767): not used.
// Registers: 8 accumulators, 2 widened B vectors, 1 broadcast, product temporaries.
#include "kernels/qu8-gemm/qu8_gemm.h"

#if defined(__x86_64__)

#include <immintrin.h>

#include <cstring>

#if !defined(__AVX2__)
#error "qu8_gemm_avx2.cpp must be compiled with -mavx2"
#endif

namespace nfuse::kernels {
namespace {

constexpr size_t kNr = 16;

inline __m256i lanes_below(size_t n) {
  alignas(32) static const int32_t kMask[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(&kMask[8 - n]));
}

// Requantizes 8 accumulators (qu8_gemm.h, "Exactness"): cvtdq2ps, mulps, clamp, cvtps2dq
// (round half to even under the default MXCSR), + zero point.
inline __m256i requantize(__m256i acc, __m256 mult, __m256 lo, __m256 hi, __m256i zp) {
  __m256 x = _mm256_mul_ps(_mm256_cvtepi32_ps(acc), mult);
  x = _mm256_min_ps(_mm256_max_ps(x, lo), hi);
  return _mm256_add_epi32(_mm256_cvtps_epi32(x), zp);
}

template <size_t MR>
inline void gemm(size_t mr, size_t nc, size_t kc, const void* a_panel, const void* w, void* c, size_t c_stride,
                 const Qu8GemmRequant& rq) {
  const uint8_t* a = static_cast<const uint8_t*>(a_panel);  // u16 pairs: 4 bytes per row per group
  const uint8_t* wb = static_cast<const uint8_t*>(w);
  const uint8_t* b = wb + kNr * sizeof(int32_t);

  __m256i acc[MR][2];
  {
    const __m256i b0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wb));
    const __m256i b1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wb + 32));
#pragma GCC unroll 4
    for (size_t r = 0; r < MR; ++r) {
      acc[r][0] = b0;
      acc[r][1] = b1;
    }
  }
  const size_t groups = kc / 2;
  for (size_t g = 0; g < groups; ++g) {
    const __m256i w0 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b)));
    const __m256i w1 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 16)));
    b += 2 * kNr;
#pragma GCC unroll 4
    for (size_t r = 0; r < MR; ++r) {
      int32_t pair;
      std::memcpy(&pair, a + r * 4, sizeof pair);
      const __m256i va = _mm256_set1_epi32(pair);
      acc[r][0] = _mm256_add_epi32(acc[r][0], _mm256_madd_epi16(va, w0));
      acc[r][1] = _mm256_add_epi32(acc[r][1], _mm256_madd_epi16(va, w1));
    }
    a += MR * 4;
  }

  // Rows >= mr alias the last real row and are stored first (in reverse order), so the real row's
  // store lands last; every row index is then a constant and acc stays in registers.
  const size_t elem = rq.int32_out ? sizeof(int32_t) : 1;
  uint8_t* cr[MR];
  cr[0] = static_cast<uint8_t*>(c);
  for (size_t r = 1; r < MR; ++r) {
    cr[r] = r < mr ? cr[r - 1] + c_stride * elem : cr[r - 1];
  }
  if (rq.int32_out) {
    const __m256i m0 = lanes_below(nc < 8 ? nc : 8);
    const __m256i m1 = lanes_below(nc > 8 ? nc - 8 : 0);
#pragma GCC unroll 4
    for (size_t i = 0; i < MR; ++i) {
      const size_t r = MR - 1 - i;
      int* row = reinterpret_cast<int*>(cr[r]);
      if (nc == kNr) {
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(row), acc[r][0]);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(row + 8), acc[r][1]);
      } else {
        _mm256_maskstore_epi32(row, m0, acc[r][0]);
        _mm256_maskstore_epi32(row + 8, m1, acc[r][1]);
      }
    }
    return;
  }

  const uint8_t* mp = b;  // the multipliers follow the weights
  const __m256 mult0 = _mm256_loadu_ps(reinterpret_cast<const float*>(mp));
  const __m256 mult1 = _mm256_loadu_ps(reinterpret_cast<const float*>(mp + 32));
  const __m256 lo = _mm256_set1_ps(rq.lo);
  const __m256 hi = _mm256_set1_ps(rq.hi);
  const __m256i zp = _mm256_set1_epi32(rq.zero_point);
  const __m128i flip = _mm_set1_epi8(static_cast<char>(rq.out_xor));
#pragma GCC unroll 4
  for (size_t i = 0; i < MR; ++i) {
    const size_t r = MR - 1 - i;
    const __m256i q0 = requantize(acc[r][0], mult0, lo, hi, zp);
    const __m256i q1 = requantize(acc[r][1], mult1, lo, hi, zp);
    // Values are in [qmin, qmax] within 0..255: the saturating packs below are plain narrowing.
    // packs_epi32 interleaves 128-bit lanes (q0 lo, q1 lo, q0 hi, q1 hi); permute restores order.
    const __m256i w16 = _mm256_permute4x64_epi64(_mm256_packs_epi32(q0, q1), 0xD8);
    __m128i bytes = _mm_packus_epi16(_mm256_castsi256_si128(w16), _mm256_extracti128_si256(w16, 1));
    bytes = _mm_xor_si128(bytes, flip);
    uint8_t* row = cr[r];
    if (nc == kNr) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(row), bytes);
    } else {
      alignas(16) uint8_t tmp[kNr];
      _mm_store_si128(reinterpret_cast<__m128i*>(tmp), bytes);
      std::memcpy(row, tmp, nc);
    }
  }
}

}  // namespace

void qu8_gemm__avx2_4x16c2(size_t mr, size_t nc, size_t kc, const void* a, const void* w, void* c,
                           size_t c_stride, const Qu8GemmRequant& rq) {
  gemm<4>(mr, nc, kc, a, w, c, c_stride, rq);
}

void qu8_gemm__avx2_1x16c2(size_t mr, size_t nc, size_t kc, const void* a, const void* w, void* c,
                           size_t c_stride, const Qu8GemmRequant& rq) {
  gemm<1>(mr, nc, kc, a, w, c, c_stride, rq);
}

}  // namespace nfuse::kernels

#endif  // defined(__x86_64__)
