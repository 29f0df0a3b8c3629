// AVX-512 VNNI microkernel of the W * X quantized GEMM (qu8_wxgemm.h). Compiled with
// -mavx512f -mavx512bw -mavx512vl -mavx512vnni (cmake/nfuse_kernels.cmake, "*avx512vnni*").
//
// 8x32: per K group of 4, two zmm of packed activations (32 columns x 4 u8) and, per row, the
// row's 4 s8 weights broadcast from memory ({1to16}, folded into vpdpbusd); 16 accumulators.
// vpdpbusd (not the saturating vpdpbusds) sums the 4 u8 x s8 products straight into int32.
// The epilogue requantizes with the row's multiplier (qu8_gemm.h, "Exactness") and stores 32
// bytes per row: one NCHW output row segment. A tile of at most 16 columns (a pixel tail) runs on
// the first zmm alone, at half the work; up to 4 columns beyond a multiple of 16 run as GEMVs
// (gemv_cols). The quad ukernel runs the same tiles on X read in place from channel-quad rows
// (Qu8WxQuads): only where each K group's 4 bytes per column come from differs.
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

// The f32_out epilogue (qu8_gemm.h): f32(acc) * m, then + b as a separate rounding (the file is
// compiled with -ffp-contract=off, so the two never become one FMA: the same bits as the scalar
// kernel and the ref's float arithmetic).
// Then the clamp [lo, hi], max before min with the bound first, so a NaN passes through (the
// instructions return their second operand when either is NaN), as the scalar kernel's selects.
inline __m512 f32_epilogue(__m512i acc, __m512 m, __m512 b, __m512 lo, __m512 hi) {
  const __m512 v = _mm512_add_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(acc), m), b);
  return _mm512_min_ps(hi, _mm512_max_ps(lo, v));
}
inline __m256 f32_epilogue(__m256i acc, __m256 m, __m256 b, __m256 lo, __m256 hi) {
  const __m256 v = _mm256_add_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(acc), m), b);
  return _mm256_min_ps(hi, _mm256_max_ps(lo, v));
}

// Where a tile's K groups come from, in order: a packed panel (4 * kNr bytes per group) ...
struct PanelX {
  const uint8_t* p;
  const uint8_t* next() {
    const uint8_t* at = p;
    p += 4 * kNr;
    return at;
  }
};

// ... or channel quads in place (Qu8WxQuads).
struct QuadX {
  const uint8_t* base;
  const size_t* tap_offset;
  size_t taps_left, quads, stride, q = 0;
  const uint8_t* at;
  QuadX(const Qu8WxQuads& xq, const uint8_t* x)
      : base(x),
        tap_offset(xq.tap_offset),
        taps_left(xq.taps),
        quads(xq.quads),
        stride(xq.quad_stride),
        at(x + xq.tap_offset[0]) {}
  const uint8_t* next() {
    const uint8_t* group = at;
    if (++q < quads) {
      at += stride;
    } else if (--taps_left > 0) {
      q = 0;
      at = base + *++tap_offset;
    }
    return group;
  }
};

// NV = 2: the full 32 columns; NV = 1: a tile of at most 16 columns (the panel's second half is
// padding), at half the work. kc: K (a multiple of 4).
template <size_t NV, typename Source>
void wxgemm(size_t mr, size_t nc, size_t kc, const void* w, Source x, uint8_t* c, size_t c_stride,
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
  size_t g = kc / 4;
  if constexpr (NV == 1) {
    // 8 accumulator chains alone are latency-bound: acc[r][1] (free here) takes the odd K
    // groups, added in at the end (int32 wrapping sums: exact in any order).
#pragma GCC unroll 8
    for (size_t r = 0; r < kMr; ++r) acc[r][1] = _mm512_setzero_si512();
    for (; g >= 2; g -= 2) {
      const __m512i x0 = _mm512_loadu_si512(x.next());
      const __m512i x1 = _mm512_loadu_si512(x.next());
      _mm_prefetch(reinterpret_cast<const char*>(wq) + kWeightPrefetch, _MM_HINT_T0);
#pragma GCC unroll 8
      for (size_t r = 0; r < kMr; ++r) {
        acc[r][0] = dpbusd_bcst(acc[r][0], x0, wq + r * 4);
        acc[r][1] = dpbusd_bcst(acc[r][1], x1, wq + kMr * 4 + r * 4);
      }
      wq += 2 * kMr * 4;
    }
  }
  for (; g > 0; --g) {
    const uint8_t* xg = x.next();
    const __m512i x0 = _mm512_loadu_si512(xg);
    const __m512i x1 = NV == 2 ? _mm512_loadu_si512(xg + 64) : x0;
    _mm_prefetch(reinterpret_cast<const char*>(wq) + kWeightPrefetch, _MM_HINT_T0);
#pragma GCC unroll 8
    for (size_t r = 0; r < kMr; ++r) {
      acc[r][0] = dpbusd_bcst(acc[r][0], x0, wq + r * 4);
      if constexpr (NV == 2) acc[r][1] = dpbusd_bcst(acc[r][1], x1, wq + r * 4);
    }
    wq += kMr * 4;
  }

  if constexpr (NV == 1) {
#pragma GCC unroll 8
    for (size_t r = 0; r < kMr; ++r) acc[r][0] = _mm512_add_epi32(acc[r][0], acc[r][1]);
  }

  const __mmask16 m0 = lanes_below(nc < 16 ? nc : 16);
  const __mmask16 m1 = lanes_below(nc > 16 ? nc - 16 : 0);
  // Rows >= mr alias the last real row and are stored first (in reverse), so the real row's store
  // lands last and every row index stays a constant (as qu8_gemm_avx512vnni.cpp).
  uint8_t* cr[kMr];
  cr[0] = c;
  for (size_t r = 1; r < kMr; ++r) cr[r] = r < mr ? cr[r - 1] + c_stride : cr[r - 1];
  const float* mult = reinterpret_cast<const float*>(wq);  // after the weights (kc x MR bytes)
  if (rq.f32_out) {
    float* y = reinterpret_cast<float*>(c);
    const __m512 flo = _mm512_set1_ps(rq.lo), fhi = _mm512_set1_ps(rq.hi);
    __m512i col[2] = {_mm512_setzero_si512(), _mm512_setzero_si512()};
    if (rq.row_factor) {  // the tile's column terms, masked to its columns
      col[0] = _mm512_maskz_loadu_epi32(m0, rq.col_term);
      if (NV == 2) col[1] = _mm512_maskz_loadu_epi32(m1, rq.col_term + 16);
    }
#pragma GCC unroll 8
    for (size_t i = 0; i < kMr; ++i) {
      const size_t r = kMr - 1 - i;
      float* yr = y + (r < mr ? r : mr - 1) * c_stride;
      float mv;
      std::memcpy(&mv, mult + r, sizeof mv);
      const __m512 m = _mm512_set1_ps(mv), b = _mm512_set1_ps(rq.row_bias[r]);
#pragma GCC unroll 2
      for (size_t h = 0; h < NV; ++h) {
        if (rq.row_factor)
          acc[r][h] = _mm512_add_epi32(acc[r][h], _mm512_mullo_epi32(col[h], _mm512_set1_epi32(rq.row_factor[r])));
        const __m512 v = f32_epilogue(acc[r][h], m, b, flo, fhi);
        _mm512_mask_storeu_ps(yr + 16 * h, h == 0 ? m0 : m1, v);
      }
    }
    return;
  }
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

// kCols columns, K split into kU interleaved accumulator sets (group g into set g % kU, summed
// at the end: int32 wrapping sums, so exact in any order): one set alone is a chain of dependent
// vpdpbusd per column, latency-bound (~5 cycles per K group); kCols * kU chains keep the unit fed.
template <size_t kCols>
void gemv_cols_n(size_t mr, size_t j0, size_t kc, const void* w, const uint8_t* x, uint8_t* c, size_t c_stride,
                 const Qu8GemmRequant& rq) {
  constexpr size_t kU = kCols >= 3 ? 2 : 4;
  const uint8_t* wb = static_cast<const uint8_t*>(w);
  __m256i acc[kU][kCols];
#pragma GCC unroll 4
  for (size_t u = 0; u < kU; ++u)
#pragma GCC unroll 4
    for (size_t j = 0; j < kCols; ++j) acc[u][j] = _mm256_setzero_si256();
#pragma GCC unroll 4
  for (size_t j = 0; j < kCols; ++j) acc[0][j] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wb));
  const uint8_t* wq = wb + kMr * sizeof(int32_t);
  const uint8_t* xj = x + j0 * 4;
  size_t g = kc / 4;
  for (; g >= kU; g -= kU) {
#pragma GCC unroll 4
    for (size_t u = 0; u < kU; ++u) {
      const __m256i wv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wq + u * kMr * 4));
#pragma GCC unroll 4
      for (size_t j = 0; j < kCols; ++j) {
        int32_t q;
        std::memcpy(&q, xj + u * 4 * kNr + j * 4, sizeof q);
        acc[u][j] = _mm256_dpbusd_epi32(acc[u][j], _mm256_set1_epi32(q), wv);
      }
    }
    _mm_prefetch(reinterpret_cast<const char*>(wq) + kWeightPrefetch, _MM_HINT_T0);
    if constexpr (kU == 4) _mm_prefetch(reinterpret_cast<const char*>(wq) + kWeightPrefetch + 64, _MM_HINT_T0);
    wq += kU * kMr * 4;
    xj += kU * 4 * kNr;
  }
  for (; g > 0; --g) {
    const __m256i wv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wq));
#pragma GCC unroll 4
    for (size_t j = 0; j < kCols; ++j) {
      int32_t q;
      std::memcpy(&q, xj + j * 4, sizeof q);
      acc[0][j] = _mm256_dpbusd_epi32(acc[0][j], _mm256_set1_epi32(q), wv);
    }
    wq += kMr * 4;
    xj += 4 * kNr;
  }
  const __m256 mult = _mm256_loadu_ps(reinterpret_cast<const float*>(wq));  // after the weights
  if (rq.f32_out) {
    const __m256 b = _mm256_loadu_ps(rq.row_bias);
    const __m256i factor =
        rq.row_factor ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rq.row_factor)) : _mm256_setzero_si256();
    float* y = reinterpret_cast<float*>(c);
#pragma GCC unroll 4
    for (size_t j = 0; j < kCols; ++j) {
      __m256i sum = acc[0][j];
#pragma GCC unroll 4
      for (size_t u = 1; u < kU; ++u) sum = _mm256_add_epi32(sum, acc[u][j]);
      if (rq.row_factor)
        sum = _mm256_add_epi32(sum, _mm256_mullo_epi32(factor, _mm256_set1_epi32(rq.col_term[j0 + j])));
      alignas(32) float out[kMr];
      _mm256_store_ps(out, f32_epilogue(sum, mult, b, _mm256_set1_ps(rq.lo), _mm256_set1_ps(rq.hi)));
      for (size_t r = 0; r < mr; ++r) y[r * c_stride + j0 + j] = out[r];
    }
    return;
  }
  const __m256 lo = _mm256_set1_ps(rq.lo);
  const __m256 hi = _mm256_set1_ps(rq.hi);
  const __m256i zp = _mm256_set1_epi32(rq.zero_point);
  const __m256i flip = _mm256_set1_epi32(static_cast<int>(rq.out_xor));
#pragma GCC unroll 4
  for (size_t j = 0; j < kCols; ++j) {
    __m256i sum = acc[0][j];
#pragma GCC unroll 4
    for (size_t u = 1; u < kU; ++u) sum = _mm256_add_epi32(sum, acc[u][j]);
    __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(sum), mult);
    v = _mm256_min_ps(_mm256_max_ps(v, lo), hi);
    const __m256i q = _mm256_xor_si256(_mm256_add_epi32(_mm256_cvtps_epi32(v), zp), flip);
    alignas(32) int32_t out[kMr];
    _mm256_store_si256(reinterpret_cast<__m256i*>(out), q);
    for (size_t r = 0; r < mr; ++r) c[r * c_stride + j0 + j] = static_cast<uint8_t>(out[r]);
  }
}

void gemv_cols(size_t mr, size_t j0, size_t cols, size_t kc, const void* w, const uint8_t* x, uint8_t* c,
               size_t c_stride, const Qu8GemmRequant& rq) {
  switch (cols) {
    case 1: return gemv_cols_n<1>(mr, j0, kc, w, x, c, c_stride, rq);
    case 2: return gemv_cols_n<2>(mr, j0, kc, w, x, c, c_stride, rq);
    case 3: return gemv_cols_n<3>(mr, j0, kc, w, x, c, c_stride, rq);
    default: return gemv_cols_n<4>(mr, j0, kc, w, x, c, c_stride, rq);
  }
}

}  // namespace

// qu8_wxgemm_pack_x_runs for this configuration: per run, 16 columns of a k-group's 4 rows as one
// zmm (row t in 128-bit lane t), a dword transpose across lanes (lane L: the 4 rows' columns
// 4L..4L+3) and a byte transpose inside each lane: 7 instructions for 64 packed bytes, where the
// SSE2 interleave takes 16. Overshoot as there: onto the next run's columns or columns >= cols
// (zeroed after), masked at the panel's end.
void qu8_wxgemm_pack_x_runs__avx512(size_t k, size_t cols, const uint8_t* base, const size_t* row_offset,
                                    const Qu8WxRun* runs, size_t run_count, bool x_signed, uint8_t* packed) {
  const uint8_t flip = x_signed ? 0x80 : 0;
  const __m512i vflip = _mm512_set1_epi8(static_cast<char>(flip));
  const __m512i perm = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  const __m512i shuf = _mm512_broadcast_i32x4(_mm_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15));
  const size_t groups = (k + 3) / 4;
  for (size_t g = 0; g < groups; ++g) {
    uint8_t* out = packed + g * kNr * 4;
    if (g * 4 + 3 < k) {
      const uint8_t* r0 = base + row_offset[g * 4];
      const uint8_t* r1 = base + row_offset[g * 4 + 1];
      const uint8_t* r2 = base + row_offset[g * 4 + 2];
      const uint8_t* r3 = base + row_offset[g * 4 + 3];
      for (size_t i = 0; i < run_count; ++i) {
        const Qu8WxRun run = runs[i];
        for (size_t b = 0; b < run.len; b += 16) {
          const size_t s = run.src + b, j = run.col + b;
          __m512i v = _mm512_castsi128_si512(_mm_loadu_si128(reinterpret_cast<const __m128i*>(r0 + s)));
          v = _mm512_inserti32x4(v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(r1 + s)), 1);
          v = _mm512_inserti32x4(v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(r2 + s)), 2);
          v = _mm512_inserti32x4(v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(r3 + s)), 3);
          v = _mm512_shuffle_epi8(_mm512_permutexvar_epi32(perm, _mm512_xor_si512(v, vflip)), shuf);
          if (j + 16 <= kNr) {
            _mm512_storeu_si512(out + j * 4, v);
          } else {
            _mm512_mask_storeu_epi8(out + j * 4, _cvtu64_mask64((uint64_t{1} << ((kNr - j) * 4)) - 1), v);
          }
        }
      }
    } else {  // the K tail: rows >= k are zero
      for (size_t i = 0; i < run_count; ++i) {
        for (size_t jj = 0; jj < runs[i].len; ++jj) {
          for (size_t t = 0; t < 4; ++t) {
            out[(runs[i].col + jj) * 4 + t] =
                g * 4 + t < k ? static_cast<uint8_t>(base[row_offset[g * 4 + t] + runs[i].src + jj] ^ flip) : 0;
          }
        }
      }
    }
    if (cols < kNr) std::memset(out + cols * 4, 0, (kNr - cols) * 4);
  }
}

void qu8_wxgemm__avx512vnni_8x32(size_t mr, size_t nc, size_t kc, const void* w, const uint8_t* x, uint8_t* c,
                                 size_t c_stride, const Qu8GemmRequant& rq) {
  if (nc <= kMaxGemvCols) {
    gemv_cols(mr, 0, nc, kc, w, x, c, c_stride, rq);
  } else if (nc <= 16) {
    wxgemm<1>(mr, nc, kc, w, PanelX{x}, c, c_stride, rq);
  } else if (nc <= 16 + kMaxGemvCols) {  // 16 columns on one zmm, the rest as GEMVs
    wxgemm<1>(mr, 16, kc, w, PanelX{x}, c, c_stride, rq);
    gemv_cols(mr, 16, nc - 16, kc, w, x, c, c_stride, rq);
  } else {
    wxgemm<2>(mr, nc, kc, w, PanelX{x}, c, c_stride, rq);
  }
}

// Channel quads in place: the same tiles without the GEMV tails (those read packed columns).
void qu8_wxgemm_quads__avx512vnni_8x32(size_t mr, size_t nc, const Qu8WxQuads& xq, const void* w, const uint8_t* x,
                                       uint8_t* c, size_t c_stride, const Qu8GemmRequant& rq) {
  const size_t kc = 4 * xq.taps * xq.quads;
  if (nc <= 16) {
    wxgemm<1>(mr, nc, kc, w, QuadX(xq, x), c, c_stride, rq);
  } else {
    wxgemm<2>(mr, nc, kc, w, QuadX(xq, x), c, c_stride, rq);
  }
}

}  // namespace nfuse::kernels

#endif  // defined(__x86_64__)
