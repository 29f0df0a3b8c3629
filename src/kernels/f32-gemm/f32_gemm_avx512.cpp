// AVX-512F microkernels. This file alone is compiled with -mavx512f (CMakeLists.txt via
// cmake/nfuse_kernels.cmake, "*avx512*" sources) and runs only where cpuinfo reports AVX-512F.
//
// 12x32: 24 zmm accumulators + 2 for the B row + 1 broadcast A value = 27 of the 32 registers.
// Per K step: 2 loads of B, 12 broadcasts of A, 24 FMAs -> 12 cycles on two 512-bit FMA pipes.
// 8x32: the same code for 8 rows (16 accumulators), for row counts that are multiples of 8 but
// not of 12 (16, 32, 64 ... output channels), where 12-row panels would pad.
// Column edges use AVX-512 write masks, and a panel of at most 16 columns runs a K loop of half
// the FMAs (a conv's last pixels: 196 = 6 x 32 + 4); row edges alias the last real row as in the
// AVX2 kernel. 1x32: tail-row partner with 4 K steps in flight.
#include "kernels/f32-gemm/f32_gemm.h"

#if defined(__x86_64__)

// GCC 12's _mm512_max_ps/_mm512_min_ps pass _mm512_undefined_ps() (a self-initialised variable)
// as the unused merge source, which -Wmaybe-uninitialized reports once inlined (GCC bug 105593).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#if !defined(__AVX512F__)
#error "f32_gemm_avx512.cpp must be compiled with -mavx512f"
#endif

namespace nfuse::kernels {
namespace {

// The first `nc` (0..32) of 32 columns, as two 16-lane masks.
struct Cols32 {
  __mmask16 m0, m1;
  explicit Cols32(size_t nc)
      : m0(static_cast<__mmask16>(nc >= 16 ? 0xFFFFu : (1u << nc) - 1u)),
        m1(static_cast<__mmask16>(nc >= 32 ? 0xFFFFu : (nc > 16 ? (1u << (nc - 16)) - 1u : 0u))) {}

  void load(const float* p, __m512& lo, __m512& hi) const {
    lo = _mm512_maskz_loadu_ps(m0, p);
    hi = _mm512_maskz_loadu_ps(m1, p + 16);
  }
  void store(float* p, __m512 lo, __m512 hi) const {
    _mm512_mask_storeu_ps(p, m0, lo);
    _mm512_mask_storeu_ps(p + 16, m1, hi);
  }
};

}  // namespace

// The K loop over all 32 columns; kPrefetch: also asks for the next panel's row k (kc rows on).
template <size_t kMr, bool kPrefetch>
inline void full_width_steps(__m512 (&acc)[kMr][2], size_t kc, const float* a, const float* b, size_t b_stride) {
  const size_t ahead = kc * b_stride;
  for (size_t k = 0; k < kc; ++k) {
    if constexpr (kPrefetch) {
      _mm_prefetch(reinterpret_cast<const char*>(b + ahead), _MM_HINT_T1);
      _mm_prefetch(reinterpret_cast<const char*>(b + ahead + 16), _MM_HINT_T1);
    }
    const __m512 b0 = _mm512_loadu_ps(b);
    const __m512 b1 = _mm512_loadu_ps(b + 16);
    b += b_stride;
#pragma GCC unroll 12
    for (size_t r = 0; r < kMr; ++r) {
      const __m512 ar = _mm512_set1_ps(a[r]);
      acc[r][0] = _mm512_fmadd_ps(ar, b0, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(ar, b1, acc[r][1]);
    }
    a += kMr;
  }
}

template <size_t kMr>
inline void gemm_avx512_x32(size_t mr, size_t nc, size_t kc, const float* a, const float* b, size_t b_stride, float* c,
                            size_t c_stride, uint32_t flags, const F32GemmEpilogue& ep) {
  // Rows >= mr alias the last real row and are stored first (reverse order below).
  float* cr[kMr];
  cr[0] = c;
  for (size_t r = 1; r < kMr; ++r) {
    cr[r] = r < mr ? cr[r - 1] + c_stride : cr[r - 1];
  }
  const Cols32 cols(nc);

  __m512 acc[kMr][2];
  if (flags & kF32GemmLoadC) {
#pragma GCC unroll 12
    for (size_t r = 0; r < kMr; ++r) {
      cols.load(cr[r], acc[r][0], acc[r][1]);
    }
  } else {
    __m512 lo = _mm512_setzero_ps();
    __m512 hi = _mm512_setzero_ps();
    if (ep.bias != nullptr) {
      cols.load(ep.bias, lo, hi);
    }
#pragma GCC unroll 12
    for (size_t r = 0; r < kMr; ++r) {
      acc[r][0] = lo;
      acc[r][1] = hi;
    }
    if (ep.row_bias != nullptr) {  // rows >= mr alias the last real row
#pragma GCC unroll 12
    for (size_t r = 0; r < kMr; ++r) {
      const __m512 v = _mm512_set1_ps(ep.row_bias[r < mr ? r : mr - 1]);
      acc[r][0] = _mm512_add_ps(acc[r][0], v);
      acc[r][1] = _mm512_add_ps(acc[r][1], v);
    }
    }
    if (ep.residual != nullptr) {
      const float* rr = ep.residual;
#pragma GCC unroll 12
      for (size_t r = 0; r < kMr; ++r) {
        __m512 rlo, rhi;
        cols.load(rr, rlo, rhi);
        acc[r][0] = _mm512_add_ps(acc[r][0], rlo);
        acc[r][1] = _mm512_add_ps(acc[r][1], rhi);
        if (r + 1 < mr) {
          rr += ep.residual_stride;
        }
      }
    }
  }

  if (nc <= 16) {
    // A tail panel of at most 16 columns (a 14x14 map's last 4 pixels, a 28x28 map's last 16):
    // half the FMAs, the second half of the accumulators left as they are (never stored).
    for (size_t k = 0; k < kc; ++k) {
      const __m512 b0 = _mm512_loadu_ps(b);
      b += b_stride;
#pragma GCC unroll 12
      for (size_t r = 0; r < kMr; ++r) acc[r][0] = _mm512_fmadd_ps(_mm512_set1_ps(a[r]), b0, acc[r][0]);
      a += kMr;
    }
  } else if (flags & kF32GemmPrefetchNextPanel) {
    full_width_steps<kMr, true>(acc, kc, a, b, b_stride);
  } else {
    full_width_steps<kMr, false>(acc, kc, a, b, b_stride);
  }

  if (flags & kF32GemmFinal) {
    // Operand order makes NaN propagate (VMAXPS/VMINPS return the second operand on NaN).
    const __m512 vmin = _mm512_set1_ps(ep.min);
    const __m512 vmax = _mm512_set1_ps(ep.max);
#pragma GCC unroll 12
    for (size_t r = 0; r < kMr; ++r) {
      acc[r][0] = _mm512_min_ps(vmax, _mm512_max_ps(vmin, acc[r][0]));
      acc[r][1] = _mm512_min_ps(vmax, _mm512_max_ps(vmin, acc[r][1]));
    }
  }

#pragma GCC unroll 12
  for (size_t i = 0; i < kMr; ++i) {
    const size_t r = kMr - 1 - i;
    cols.store(cr[r], acc[r][0], acc[r][1]);
  }
}

void f32_gemm__avx512_12x32(size_t mr, size_t nc, size_t kc, const float* a, const float* b, size_t b_stride, float* c,
                            size_t c_stride, uint32_t flags, const F32GemmEpilogue& ep) {
  gemm_avx512_x32<12>(mr, nc, kc, a, b, b_stride, c, c_stride, flags, ep);
}

void f32_gemm__avx512_8x32(size_t mr, size_t nc, size_t kc, const float* a, const float* b, size_t b_stride, float* c,
                           size_t c_stride, uint32_t flags, const F32GemmEpilogue& ep) {
  gemm_avx512_x32<8>(mr, nc, kc, a, b, b_stride, c, c_stride, flags, ep);
}

void f32_gemm__avx512_1x32(size_t /*mr*/, size_t nc, size_t kc, const float* a, const float* b, size_t b_stride, float* c,
                           size_t /*c_stride*/, uint32_t flags, const F32GemmEpilogue& ep) {
  const Cols32 cols(nc);
  __m512 x0 = _mm512_setzero_ps();
  __m512 x1 = _mm512_setzero_ps();
  if (flags & kF32GemmLoadC) {
    cols.load(c, x0, x1);
  } else {
    if (ep.bias != nullptr) {
      cols.load(ep.bias, x0, x1);
    }
    if (ep.row_bias != nullptr) {
      x0 = _mm512_add_ps(x0, _mm512_set1_ps(ep.row_bias[0]));
      x1 = _mm512_add_ps(x1, _mm512_set1_ps(ep.row_bias[0]));
    }
    if (ep.residual != nullptr) {
      __m512 lo, hi;
      cols.load(ep.residual, lo, hi);
      x0 = _mm512_add_ps(x0, lo);
      x1 = _mm512_add_ps(x1, hi);
    }
  }
  __m512 y0 = _mm512_setzero_ps(), y1 = _mm512_setzero_ps();
  __m512 z0 = _mm512_setzero_ps(), z1 = _mm512_setzero_ps();
  __m512 w0 = _mm512_setzero_ps(), w1 = _mm512_setzero_ps();
  size_t k = 0;
  for (; k + 4 <= kc; k += 4) {
    const __m512 a0 = _mm512_set1_ps(a[0]);
    const __m512 a1 = _mm512_set1_ps(a[1]);
    const __m512 a2 = _mm512_set1_ps(a[2]);
    const __m512 a3 = _mm512_set1_ps(a[3]);
    const float* b1 = b + b_stride;
    const float* b2 = b1 + b_stride;
    const float* b3 = b2 + b_stride;
    x0 = _mm512_fmadd_ps(a0, _mm512_loadu_ps(b), x0);
    x1 = _mm512_fmadd_ps(a0, _mm512_loadu_ps(b + 16), x1);
    y0 = _mm512_fmadd_ps(a1, _mm512_loadu_ps(b1), y0);
    y1 = _mm512_fmadd_ps(a1, _mm512_loadu_ps(b1 + 16), y1);
    z0 = _mm512_fmadd_ps(a2, _mm512_loadu_ps(b2), z0);
    z1 = _mm512_fmadd_ps(a2, _mm512_loadu_ps(b2 + 16), z1);
    w0 = _mm512_fmadd_ps(a3, _mm512_loadu_ps(b3), w0);
    w1 = _mm512_fmadd_ps(a3, _mm512_loadu_ps(b3 + 16), w1);
    a += 4;
    b = b3 + b_stride;
  }
  for (; k < kc; ++k) {
    const __m512 a0 = _mm512_set1_ps(*a);
    x0 = _mm512_fmadd_ps(a0, _mm512_loadu_ps(b), x0);
    x1 = _mm512_fmadd_ps(a0, _mm512_loadu_ps(b + 16), x1);
    a += 1;
    b += b_stride;
  }
  x0 = _mm512_add_ps(_mm512_add_ps(x0, y0), _mm512_add_ps(z0, w0));
  x1 = _mm512_add_ps(_mm512_add_ps(x1, y1), _mm512_add_ps(z1, w1));

  if (flags & kF32GemmFinal) {
    const __m512 vmin = _mm512_set1_ps(ep.min);
    const __m512 vmax = _mm512_set1_ps(ep.max);
    x0 = _mm512_min_ps(vmax, _mm512_max_ps(vmin, x0));
    x1 = _mm512_min_ps(vmax, _mm512_max_ps(vmin, x1));
  }
  cols.store(c, x0, x1);
}

}  // namespace nfuse::kernels

#endif  // defined(__x86_64__)
