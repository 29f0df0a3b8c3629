// AVX2 microkernels of the 16-bit-activation GEMM. This file alone is compiled with -mavx2 -mfma
// (cmake/nfuse_kernels.cmake, "*avx2*" sources).
//
// 4x16c2: A is packed as int16 K pairs, so one vpbroadcastd puts a row's (A[k], A[k+1]) in every
// 32-bit lane; B is packed as s8 K pairs per column and widened with vpmovsxbw. vpmaddwd forms
// A[k]B[k][j] + A[k+1]B[k+1][j] per column in int32 exactly (|pair| <= 2^23; its one wrapping
// case, -32768 * -32768 twice, cannot occur with |B| <= 128), vpaddd accumulates over one K
// chunk (kQs16GemmKChunk = 256: |sum| <= 2^30), and each chunk is sign-extended into int64
// totals kept in memory (touched once per chunk). Registers: 8 int32 accumulators, 2 widened B
// vectors, 1 broadcast, temporaries.
#include "kernels/qs16-gemm/qs16_gemm.h"

#if defined(__x86_64__)

#include <immintrin.h>

#include <cstring>

#if !defined(__AVX2__)
#error "qs16_gemm_avx2.cpp must be compiled with -mavx2"
#endif

namespace nfuse::kernels {
namespace {

constexpr size_t kNr = 16;

// int64 -> f64, exact for |x| < 2^51: x + bits(1.5 * 2^52) read as a double is 1.5 * 2^52 + x.
inline __m256d int64_to_f64(__m256i x) {
  const __m256i magic_i = _mm256_set1_epi64x(0x4338000000000000LL);
  const __m256d magic_d = _mm256_set1_pd(6755399441055744.0);  // 1.5 * 2^52
  return _mm256_sub_pd(_mm256_castsi256_pd(_mm256_add_epi64(x, magic_i)), magic_d);
}

// 8 int64 totals -> f32 (one rounding, as static_cast<float>), * mult, clamp, round, + zp.
inline __m256i requantize(const int64_t* tot, __m256 mult, __m256 lo, __m256 hi, __m256i zp) {
  const __m128 f0 = _mm256_cvtpd_ps(int64_to_f64(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(tot))));
  const __m128 f1 = _mm256_cvtpd_ps(int64_to_f64(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(tot + 4))));
  __m256 x = _mm256_mul_ps(_mm256_set_m128(f1, f0), mult);
  x = _mm256_min_ps(_mm256_max_ps(x, lo), hi);
  return _mm256_add_epi32(_mm256_cvtps_epi32(x), zp);
}

inline void widen_into(int64_t* tot, __m256i acc) {
  __m256i* t = reinterpret_cast<__m256i*>(tot);
  const __m256i lo = _mm256_cvtepi32_epi64(_mm256_castsi256_si128(acc));
  const __m256i hi = _mm256_cvtepi32_epi64(_mm256_extracti128_si256(acc, 1));
  _mm256_storeu_si256(t, _mm256_add_epi64(_mm256_loadu_si256(t), lo));
  _mm256_storeu_si256(t + 1, _mm256_add_epi64(_mm256_loadu_si256(t + 1), hi));
}

// acc += a * b pairwise (vpmaddwd, then vpaddd). GCC 12 otherwise rotates the accumulators of
// this loop through fresh registers with a move each and spills one (half the throughput); the
// asm keeps each accumulator in place and computes the same instructions.
inline void madd_into(__m256i& acc, __m256i a, __m256i b) {
#if defined(__GNUC__) && !defined(__clang__)
  __m256i p;
  __asm__("vpmaddwd %2, %1, %0" : "=x"(p) : "x"(a), "x"(b));
  __asm__("vpaddd %1, %0, %0" : "+x"(acc) : "x"(p));
#else
  acc = _mm256_add_epi32(acc, _mm256_madd_epi16(a, b));
#endif
}

// One K chunk (count <= kQs16GemmKChunk / 2 pairs) of MR rows in int32, added into the int64
// totals.
template <size_t MR>
inline void chunk(int64_t (*tot)[kNr], const uint8_t* a, const uint8_t* b, size_t count) {
  __m256i acc[MR][2];
#pragma GCC unroll 4
  for (size_t r = 0; r < MR; ++r) {
    acc[r][0] = _mm256_setzero_si256();
    acc[r][1] = _mm256_setzero_si256();
  }
  for (size_t g = 0; g < count; ++g) {
    const __m256i w0 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b)));
    const __m256i w1 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 16)));
    b += 2 * kNr;
#pragma GCC unroll 4
    for (size_t r = 0; r < MR; ++r) {
      int32_t pair;
      std::memcpy(&pair, a + r * 4, sizeof pair);
      const __m256i va = _mm256_set1_epi32(pair);
      madd_into(acc[r][0], va, w0);
      madd_into(acc[r][1], va, w1);
    }
    a += MR * 4;
  }
#pragma GCC unroll 4
  for (size_t r = 0; r < MR; ++r) {
    widen_into(tot[r], acc[r][0]);
    widen_into(tot[r] + 8, acc[r][1]);
  }
}

template <size_t MR>
inline void gemm(size_t mr, size_t nc, size_t kc, const int16_t* a_panel, const void* w, int16_t* c,
                 size_t c_stride, const Qs16GemmRequant& rq) {
  const uint8_t* a = reinterpret_cast<const uint8_t*>(a_panel);  // int16 pairs: 4 bytes per row per group
  const uint8_t* wb = static_cast<const uint8_t*>(w);
  const uint8_t* b = wb + kNr * sizeof(int64_t);

  alignas(32) int64_t tot[MR][kNr];
  for (size_t r = 0; r < MR; ++r) std::memcpy(tot[r], wb, sizeof tot[r]);
  const size_t groups = kc / 2;
  constexpr size_t kChunkGroups = kQs16GemmKChunk / 2;
  for (size_t g0 = 0; g0 < groups; g0 += kChunkGroups) {
    const size_t count = groups - g0 < kChunkGroups ? groups - g0 : kChunkGroups;
    chunk<MR>(tot, a, b, count);
    a += count * MR * 4;
    b += count * 2 * kNr;
  }

  const __m256 mult0 = _mm256_loadu_ps(reinterpret_cast<const float*>(b));  // the multipliers follow the weights
  const __m256 mult1 = _mm256_loadu_ps(reinterpret_cast<const float*>(b + 32));
  const __m256 lo = _mm256_set1_ps(rq.lo);
  const __m256 hi = _mm256_set1_ps(rq.hi);
  const __m256i zp = _mm256_set1_epi32(rq.zero_point);
  const __m256i flip = _mm256_set1_epi16(static_cast<int16_t>(rq.out_xor));
  for (size_t r = 0; r < mr; ++r) {
    const __m256i q0 = requantize(tot[r], mult0, lo, hi, zp);
    const __m256i q1 = requantize(tot[r] + 8, mult1, lo, hi, zp);
    // Values are already within int16: packs_epi32 is plain narrowing; it interleaves 128-bit
    // lanes (q0 lo, q1 lo, q0 hi, q1 hi) and the permute restores column order.
    __m256i v = _mm256_permute4x64_epi64(_mm256_packs_epi32(q0, q1), 0xD8);
    v = _mm256_xor_si256(v, flip);
    int16_t* row = c + r * c_stride;
    if (nc == kNr) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(row), v);
    } else {
      alignas(32) int16_t tmp[kNr];
      _mm256_store_si256(reinterpret_cast<__m256i*>(tmp), v);
      std::memcpy(row, tmp, nc * sizeof(int16_t));
    }
  }
}

}  // namespace

void qs16_gemm__avx2_4x16c2(size_t mr, size_t nc, size_t kc, const int16_t* a, const void* w, int16_t* c,
                            size_t c_stride, const Qs16GemmRequant& rq) {
  gemm<4>(mr, nc, kc, a, w, c, c_stride, rq);
}

void qs16_gemm__avx2_1x16c2(size_t mr, size_t nc, size_t kc, const int16_t* a, const void* w, int16_t* c,
                            size_t c_stride, const Qs16GemmRequant& rq) {
  gemm<1>(mr, nc, kc, a, w, c, c_stride, rq);
}

}  // namespace nfuse::kernels

#endif  // defined(__x86_64__)
