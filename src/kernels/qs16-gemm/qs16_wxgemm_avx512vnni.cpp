// AVX-512 VNNI kernels of the W * X 16-bit-activation GEMM (qs16_wxgemm.h). Compiled alone with
// AVX-512 F/BW/VL/VNNI (cmake/nfuse_kernels.cmake, "*avx512vnni*" sources); selected only where
// the CPU has them.
//
// 8x32c2: per K pair, two X vectors (32 columns, int16 pairs, in vpunpck order) and one broadcast
// weight pair per row, vpdpwssd (exact, wrapping; never the saturating vpdpwssds) into 16 int32
// accumulators; the store puts the columns back in order.
// A panel whose rows the pack proved int32-safe runs its whole K in one pass; otherwise int32
// sums cover one K chunk and go sign-extended into int64 totals.
#include "kernels/qs16-gemm/qs16_wxgemm.h"

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
#error "qs16_wxgemm_avx512vnni.cpp must be compiled with -mavx512bw -mavx512vnni"
#endif

namespace nfuse::kernels {
namespace {

using qs16_avx512vnni::dpwssd;
using qs16_avx512vnni::int64_to_f64;

constexpr size_t kMr = 8, kNr = 32;

// 16 int64 totals (lo: lanes 0-7, hi: 8-15) -> 16 requantized int16 (in the int16 domain, the
// output flip applied by the caller).
inline __m256i requantize(__m512i lo, __m512i hi, __m512 mult, __m512 qlo, __m512 qhi, __m512i zp) {
  const __m256 f0 = _mm512_cvtpd_ps(int64_to_f64(lo));
  const __m256 f1 = _mm512_cvtpd_ps(int64_to_f64(hi));
  __m512d both = _mm512_castpd256_pd512(_mm256_castps_pd(f0));
  both = _mm512_insertf64x4(both, _mm256_castps_pd(f1), 1);
  __m512 x = _mm512_mul_ps(_mm512_castpd_ps(both), mult);
  x = _mm512_min_ps(_mm512_max_ps(x, qlo), qhi);
  return _mm512_cvtepi32_epi16(_mm512_add_epi32(_mm512_cvtps_epi32(x), zp));  // in range: exact narrowing
}

inline __m512i widen_lo(__m512i v) { return _mm512_cvtepi32_epi64(_mm512_castsi512_si256(v)); }
inline __m512i widen_hi(__m512i v) { return _mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64(v, 1)); }

// `count` K pairs of all 8 rows into int32 accumulators (zeroed here).
inline void accumulate(__m512i (&acc)[kMr][2], const int16_t* w, const int16_t* x, size_t count) {
#pragma GCC unroll 8
  for (size_t r = 0; r < kMr; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_si512();
  for (size_t g = 0; g < count; ++g) {
    const __m512i x0 = _mm512_loadu_si512(x);
    const __m512i x1 = _mm512_loadu_si512(x + 32);
    x += 2 * kNr;
#pragma GCC unroll 8
    for (size_t r = 0; r < kMr; ++r) {
      int32_t pair;
      std::memcpy(&pair, w + r * 2, sizeof pair);
      const __m512i wv = _mm512_set1_epi32(pair);
      acc[r][0] = dpwssd(acc[r][0], x0, wv);
      acc[r][1] = dpwssd(acc[r][1], x1, wv);
    }
    w += kMr * 2;
  }
}

}  // namespace

void qs16_wxgemm__avx512vnni_8x32(size_t mr, size_t nc, size_t kc, const void* w, const int16_t* x, uint16_t* c,
                                  size_t c_stride, const Qs16GemmRequant& rq) {
  const uint8_t* wb = static_cast<const uint8_t*>(w);
  int64_t bias[kMr];
  float mult[kMr];
  uint32_t chunk_pairs;
  std::memcpy(bias, wb, sizeof bias);
  std::memcpy(mult, wb + sizeof bias, sizeof mult);
  std::memcpy(&chunk_pairs, wb + sizeof bias + sizeof mult, sizeof chunk_pairs);
  const int16_t* wq = reinterpret_cast<const int16_t*>(wb + kQs16WxHeaderBytes);
  const size_t groups = kc / 2;

  // tot[r][0..3]: columns 0-7, 8-15, 16-23, 24-31 of row r in int64.
  __m512i tot[kMr][4];
  __m512i acc[kMr][2];
  if (chunk_pairs >= groups) {
    accumulate(acc, wq, x, groups);
#pragma GCC unroll 8
    for (size_t r = 0; r < kMr; ++r) {
      const __m512i b = _mm512_set1_epi64(bias[r]);
      tot[r][0] = _mm512_add_epi64(widen_lo(acc[r][0]), b);
      tot[r][1] = _mm512_add_epi64(widen_hi(acc[r][0]), b);
      tot[r][2] = _mm512_add_epi64(widen_lo(acc[r][1]), b);
      tot[r][3] = _mm512_add_epi64(widen_hi(acc[r][1]), b);
    }
  } else {
    for (size_t r = 0; r < kMr; ++r) tot[r][0] = tot[r][1] = tot[r][2] = tot[r][3] = _mm512_set1_epi64(bias[r]);
    for (size_t g0 = 0; g0 < groups; g0 += chunk_pairs) {
      const size_t count = groups - g0 < chunk_pairs ? groups - g0 : chunk_pairs;
      accumulate(acc, wq + g0 * kMr * 2, x + g0 * kNr * 2, count);
#pragma GCC unroll 8
      for (size_t r = 0; r < kMr; ++r) {
        tot[r][0] = _mm512_add_epi64(tot[r][0], widen_lo(acc[r][0]));
        tot[r][1] = _mm512_add_epi64(tot[r][1], widen_hi(acc[r][0]));
        tot[r][2] = _mm512_add_epi64(tot[r][2], widen_lo(acc[r][1]));
        tot[r][3] = _mm512_add_epi64(tot[r][3], widen_hi(acc[r][1]));
      }
    }
  }

  const __m512 qlo = _mm512_set1_ps(rq.lo);
  const __m512 qhi = _mm512_set1_ps(rq.hi);
  const __m512i zp = _mm512_set1_epi32(rq.zero_point);
  const __m256i flip = _mm256_set1_epi16(static_cast<int16_t>(rq.out_xor));
  // The panel's slots back in column order: 4-column quads alternate between the two halves.
  const __m512i order = _mm512_setr_epi64(0, 4, 1, 5, 2, 6, 3, 7);
  const __mmask32 mask = static_cast<__mmask32>(nc >= 32 ? 0xFFFFFFFFu : (1u << nc) - 1u);
  for (size_t r = 0; r < mr; ++r) {
    const __m512 mv = _mm512_set1_ps(mult[r]);
    const __m256i lo = _mm256_xor_si256(requantize(tot[r][0], tot[r][1], mv, qlo, qhi, zp), flip);
    const __m256i hi = _mm256_xor_si256(requantize(tot[r][2], tot[r][3], mv, qlo, qhi, zp), flip);
    const __m512i both = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
    _mm512_mask_storeu_epi16(c + r * c_stride, mask, _mm512_permutexvar_epi64(order, both));
  }
}

void qs16_wxgemm_pack_x_runs__avx512(size_t k, size_t cols, const uint16_t* base, const size_t* row_offset,
                                     const Qs16WxRun* runs, size_t run_count, bool x_unsigned, int16_t* packed) {
  (void)cols;  // the runs cover [0, cols); lanes past it stay zero
  const size_t groups = (k + 1) / 2;
  // Two rows interleave in vpunpck order (the AVX-512 configuration's slots, qs16_wxgemm.h).
  auto store_pair = [&](__m512i a, __m512i b) {
    _mm512_storeu_si512(packed, _mm512_unpacklo_epi16(a, b));
    _mm512_storeu_si512(packed + 32, _mm512_unpackhi_epi16(a, b));
    packed += 2 * kNr;
  };
  if (run_count == 1 && runs[0].col == 0 && runs[0].len == kNr && !x_unsigned) {
    // One full run of signed values (every panel of a 1x1 convolution but its tail): plain loads.
    const size_t src = runs[0].src;
    for (size_t g = 0; g < groups; ++g) {
      const __m512i a = _mm512_loadu_si512(base + row_offset[2 * g] + src);
      const __m512i b = 2 * g + 1 < k ? _mm512_loadu_si512(base + row_offset[2 * g + 1] + src) : _mm512_setzero_si512();
      store_pair(a, b);
    }
    return;
  }
  const __m512i flip = _mm512_set1_epi16(static_cast<int16_t>(x_unsigned ? 0x8000 : 0));
  __mmask32 masks[kNr];
  __mmask32 valid = 0;  // the columns the runs cover: only they are flipped, the rest stay zero
  for (size_t i = 0; i < run_count; ++i) {
    const uint32_t bits = runs[i].len >= 32 ? 0xFFFFFFFFu : (1u << runs[i].len) - 1u;
    masks[i] = static_cast<__mmask32>(bits << runs[i].col);
    valid |= masks[i];
  }
  // Row kk as one vector: each run a full 32-lane load whose lanes [col, col + len) read src
  // onwards (the load starts col elements before src), blended in by the run's mask: full loads
  // and blends, because merge-masked loads ran the whole pack at half speed (bench/RESULTS.md).
  auto row = [&](size_t kk) {
    if (kk >= k) return _mm512_setzero_si512();
    const uint16_t* r = base + row_offset[kk];
    __m512i v = _mm512_loadu_si512(r + runs[0].src);
    for (size_t i = 1; i < run_count; ++i) {
      v = _mm512_mask_blend_epi16(masks[i], v, _mm512_loadu_si512(r + runs[i].src - runs[i].col));
    }
    return _mm512_maskz_mov_epi16(valid, _mm512_xor_si512(v, flip));  // lanes past the runs: zero
  };
  for (size_t g = 0; g < groups; ++g) store_pair(row(2 * g), row(2 * g + 1));
}

void qs16_wxgemm_pack_x_panels__avx512(size_t k, const Qs16WxPanel* panels, size_t count, const uint16_t* base,
                                       const size_t* row_offset, bool x_unsigned) {
  // What each panel's rows take: a plain load (one full run of signed values), or the blends of
  // pack_x_runs.
  struct Plan {
    bool plain;
    __mmask32 valid;
  };
  constexpr size_t kMaxPanels = 64;
  Plan plans[kMaxPanels];
  __mmask32 masks[kMaxPanels][kNr];
  for (size_t i0 = 0; i0 < count; i0 += kMaxPanels) {
    const size_t n = count - i0 < kMaxPanels ? count - i0 : kMaxPanels;
    for (size_t i = 0; i < n; ++i) {
      const Qs16WxPanel& p = panels[i0 + i];
      plans[i].plain = p.run_count == 1 && p.runs[0].col == 0 && p.runs[0].len == kNr && !x_unsigned;
      plans[i].valid = 0;
      for (size_t r = 0; r < p.run_count; ++r) {
        const uint32_t bits = p.runs[r].len >= 32 ? 0xFFFFFFFFu : (1u << p.runs[r].len) - 1u;
        masks[i][r] = static_cast<__mmask32>(bits << p.runs[r].col);
        plans[i].valid |= masks[i][r];
      }
    }
    const __m512i flip = _mm512_set1_epi16(static_cast<int16_t>(x_unsigned ? 0x8000 : 0));
    auto row = [&](size_t i, size_t kk) {
      if (kk >= k) return _mm512_setzero_si512();
      const Qs16WxPanel& p = panels[i0 + i];
      const uint16_t* r = base + row_offset[kk];
      __m512i v = _mm512_loadu_si512(r + p.runs[0].src);
      if (plans[i].plain) return v;
      for (size_t j = 1; j < p.run_count; ++j) {
        v = _mm512_mask_blend_epi16(masks[i][j], v, _mm512_loadu_si512(r + p.runs[j].src - p.runs[j].col));
      }
      return _mm512_maskz_mov_epi16(plans[i].valid, _mm512_xor_si512(v, flip));
    };
    const size_t groups = (k + 1) / 2;
    for (size_t g = 0; g < groups; ++g) {
      for (size_t i = 0; i < n; ++i) {
        const __m512i a = row(i, 2 * g), b = row(i, 2 * g + 1);
        int16_t* out = panels[i0 + i].packed + g * 2 * kNr;
        _mm512_storeu_si512(out, _mm512_unpacklo_epi16(a, b));
        _mm512_storeu_si512(out + 32, _mm512_unpackhi_epi16(a, b));
      }
    }
  }
}

}  // namespace nfuse::kernels

#endif  // defined(__x86_64__) && defined(NFUSE_HAVE_AVX512_KERNELS)
