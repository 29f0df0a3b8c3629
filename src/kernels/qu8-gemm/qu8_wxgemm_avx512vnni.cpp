// AVX-512 VNNI microkernel of the W * X quantized GEMM (qu8_wxgemm.h). Compiled with
// -mavx512f -mavx512bw -mavx512vl -mavx512vnni (cmake/nfuse_kernels.cmake, "*avx512vnni*").
//
// 8x32: per K group of 4, two zmm of packed activations (32 columns x 4 u8) and, per row, the
// row's 4 s8 weights broadcast from memory ({1to16}, folded into vpdpbusd); 16 accumulators.
// vpdpbusd (not the saturating vpdpbusds) sums the 4 u8 x s8 products straight into int32.
// The epilogue requantizes with the row's multiplier (qu8_gemm.h, "Exactness") and stores 32
// bytes per row: one NCHW output row segment. A tile of at most 16 columns (a pixel tail) runs on
// the first zmm alone, at half the work; up to 4 columns beyond a multiple of 16 run as GEMVs
// (gemv_cols).
#include "kernels/qu8-gemm/qu8_wxgemm.h"

#if defined(__x86_64__)

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC bug 105593, as qu8_gemm_avx512vnni.cpp
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include <cstring>

#if !defined(__AVX512F__) || !defined(__AVX512VNNI__) || !defined(__AVX512BW__)
#error "qu8_wxgemm_avx512vnni.cpp must be compiled with -mavx512f -mavx512bw -mavx512vl -mavx512vnni"
#endif

namespace nfuse::kernels {
namespace {

constexpr size_t kMr = 8, kNr = 32;

// How far ahead in the packed weights the K loop prefetches (one line per K group: 32 bytes are
// consumed per group, so the stream stays ahead). The weights of a deep layer (ResNet-50's
// layer4: 2.4 MB per convolution) come from DRAM once per run, and the hardware prefetcher alone
// left the kernel ~1.5x slower there than on cached weights; 2 KiB ahead (into the next panels)
// recovered most of it, at no cost on cached ones.
constexpr size_t kWeightPrefetch = 2048;

inline __mmask16 lanes_below(size_t n) { return static_cast<__mmask16>((1u << n) - 1u); }

// acc += u8(x) . s8(broadcast of the 4 bytes at w), per int32 lane. One asm instruction with
// the accumulator in/out (GCC 12 otherwise copies accumulators kept in zmm16-31 every step, see
// qu8_gemm_avx512vnni.cpp) and the broadcast as a memory operand.
inline __m512i dpbusd_bcst(__m512i acc, __m512i x_u8, const uint8_t* w) {
#if defined(__GNUC__) && !defined(__clang__)
  __asm__("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(x_u8), "m"(*reinterpret_cast<const int32_t*>(w)));
  return acc;
#else
  int32_t q;
  std::memcpy(&q, w, sizeof q);
  return _mm512_dpbusd_epi32(acc, x_u8, _mm512_set1_epi32(q));
#endif
}

// NV = 2: the full 32 columns; NV = 1: a tile of at most 16 columns (the panel's second half is
// padding), at half the work.
template <size_t NV>
void wxgemm(size_t mr, size_t nc, size_t kc, const void* w, const uint8_t* x, uint8_t* c, size_t c_stride,
            const Qu8GemmRequant& rq) {
  const uint8_t* wb = static_cast<const uint8_t*>(w);
  const uint8_t* wq = wb + kMr * sizeof(int32_t);
  __m512i acc[kMr][2];
#pragma GCC unroll 8
  for (size_t r = 0; r < kMr; ++r) {
    int32_t bias;
    std::memcpy(&bias, wb + r * sizeof(int32_t), sizeof bias);
    acc[r][0] = _mm512_set1_epi32(bias);
    acc[r][1] = acc[r][0];
  }
  for (size_t g = kc / 4; g > 0; --g) {
    const __m512i x0 = _mm512_loadu_si512(x);
    const __m512i x1 = NV == 2 ? _mm512_loadu_si512(x + 64) : x0;
    x += 4 * kNr;
    _mm_prefetch(reinterpret_cast<const char*>(wq) + kWeightPrefetch, _MM_HINT_T0);
#pragma GCC unroll 8
    for (size_t r = 0; r < kMr; ++r) {
      acc[r][0] = dpbusd_bcst(acc[r][0], x0, wq + r * 4);
      if constexpr (NV == 2) acc[r][1] = dpbusd_bcst(acc[r][1], x1, wq + r * 4);
    }
    wq += kMr * 4;
  }

  const __mmask16 m0 = lanes_below(nc < 16 ? nc : 16);
  const __mmask16 m1 = lanes_below(nc > 16 ? nc - 16 : 0);
  // Rows >= mr alias the last real row and are stored first (in reverse), so the real row's store
  // lands last and every row index stays a constant (as qu8_gemm_avx512vnni.cpp).
  uint8_t* cr[kMr];
  cr[0] = c;
  for (size_t r = 1; r < kMr; ++r) cr[r] = r < mr ? cr[r - 1] + c_stride : cr[r - 1];
  const float* mult = reinterpret_cast<const float*>(wq);  // after the weights (kc x MR bytes)
  const __m512 lo = _mm512_set1_ps(rq.lo);
  const __m512 hi = _mm512_set1_ps(rq.hi);
  const __m512i zp = _mm512_set1_epi32(rq.zero_point);
  const __m512i flip = _mm512_set1_epi32(static_cast<int>(rq.out_xor));
#pragma GCC unroll 8
  for (size_t i = 0; i < kMr; ++i) {
    const size_t r = kMr - 1 - i;
    float mv;
    std::memcpy(&mv, mult + r, sizeof mv);
    const __m512 m = _mm512_set1_ps(mv);
#pragma GCC unroll 2
    for (size_t h = 0; h < NV; ++h) {
      __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(acc[r][h]), m);
      v = _mm512_min_ps(_mm512_max_ps(v, lo), hi);
      const __m512i q = _mm512_xor_si512(_mm512_add_epi32(_mm512_cvtps_epi32(v), zp), flip);
      const __mmask16 mk = h == 0 ? m0 : m1;
      if (mk == 0xFFFF) {
        _mm_storeu_si128(reinterpret_cast<__m128i*>(cr[r] + 16 * h), _mm512_cvtepi32_epi8(q));
      } else if (mk != 0) {
        _mm_mask_storeu_epi8(cr[r] + 16 * h, mk, _mm512_cvtepi32_epi8(q));
      }
    }
  }
}

// Columns [j0, j0 + cols) of a tile (cols <= kMaxGemvCols), one at a time as a GEMV: per K
// group, the column's 4 bytes broadcast (u8) against the panel's 32 weight bytes of that group
// (8 rows x 4, s8) in one ymm vpdpbusd, so a column costs 1/8 of what a zmm tile step spends on
// it (the 16-column tile pays for 16 columns whatever nc is). For pixel tails such as 7x7 maps
// (49 = 32 + 16 + 1) and 14x14 maps (196 = 6 * 32 + 4). Same sums and requantization as the
// tile: the row-r lane holds row r's accumulator.
constexpr size_t kMaxGemvCols = 4;

void gemv_cols(size_t mr, size_t j0, size_t cols, size_t kc, const void* w, const uint8_t* x, uint8_t* c,
               size_t c_stride, const Qu8GemmRequant& rq) {
  const uint8_t* wb = static_cast<const uint8_t*>(w);
  const __m256i bias = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wb));
  __m256i acc[kMaxGemvCols];
  for (size_t j = 0; j < kMaxGemvCols; ++j) acc[j] = bias;
  const uint8_t* wq = wb + kMr * sizeof(int32_t);
  const uint8_t* xj = x + j0 * 4;
  for (size_t g = kc / 4; g > 0; --g) {
    const __m256i wv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wq));
    _mm_prefetch(reinterpret_cast<const char*>(wq) + kWeightPrefetch, _MM_HINT_T0);
    for (size_t j = 0; j < cols; ++j) {
      int32_t q;
      std::memcpy(&q, xj + j * 4, sizeof q);
      acc[j] = _mm256_dpbusd_epi32(acc[j], _mm256_set1_epi32(q), wv);
    }
    wq += kMr * 4;
    xj += 4 * kNr;
  }
  const __m256 mult = _mm256_loadu_ps(reinterpret_cast<const float*>(wq));  // after the weights
  const __m256 lo = _mm256_set1_ps(rq.lo);
  const __m256 hi = _mm256_set1_ps(rq.hi);
  const __m256i zp = _mm256_set1_epi32(rq.zero_point);
  const __m256i flip = _mm256_set1_epi32(static_cast<int>(rq.out_xor));
  for (size_t j = 0; j < cols; ++j) {
    __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(acc[j]), mult);
    v = _mm256_min_ps(_mm256_max_ps(v, lo), hi);
    const __m256i q = _mm256_xor_si256(_mm256_add_epi32(_mm256_cvtps_epi32(v), zp), flip);
    alignas(32) int32_t out[kMr];
    _mm256_store_si256(reinterpret_cast<__m256i*>(out), q);
    for (size_t r = 0; r < mr; ++r) c[r * c_stride + j0 + j] = static_cast<uint8_t>(out[r]);
  }
}

}  // namespace

void qu8_wxgemm__avx512vnni_8x32(size_t mr, size_t nc, size_t kc, const void* w, const uint8_t* x, uint8_t* c,
                                 size_t c_stride, const Qu8GemmRequant& rq) {
  if (nc <= kMaxGemvCols) {
    gemv_cols(mr, 0, nc, kc, w, x, c, c_stride, rq);
  } else if (nc <= 16) {
    wxgemm<1>(mr, nc, kc, w, x, c, c_stride, rq);
  } else if (nc <= 16 + kMaxGemvCols) {  // 16 columns on one zmm, the rest as GEMVs
    wxgemm<1>(mr, 16, kc, w, x, c, c_stride, rq);
    gemv_cols(mr, 16, nc - 16, kc, w, x, c, c_stride, rq);
  } else {
    wxgemm<2>(mr, nc, kc, w, x, c, c_stride, rq);
  }
}

}  // namespace nfuse::kernels

#endif  // defined(__x86_64__)
