// AVX2 + FMA3 microkernels. This file alone is compiled with -mavx2 -mfma (CMakeLists.txt,
// "*avx2*" sources); everything else stays baseline x86-64 so that selection at run time is real.
//
// 6x16: 12 ymm accumulators + 2 for the B row + 1 broadcast A value = 15 of the 16 registers.
// Per K step: 2 loads of B, 6 broadcasts of A, 12 FMAs -> 6 cycles at 2 FMAs/cycle, the peak.
// 1x16: the tail-row partner; 4 K steps in flight on separate accumulators to cover the 4-cycle
// FMA latency (2 chains per step alone would run at a quarter of the peak).
#include "kernels/f32-gemm/f32_gemm.h"

#if defined(__x86_64__)

#include <immintrin.h>

#if !defined(__AVX2__) || !defined(__FMA__)
#error "f32_gemm_avx2.cpp must be compiled with -mavx2 -mfma"
#endif

namespace nfuse::kernels {
namespace {

// Lane i is active iff i < n (0 <= n <= 8).
inline __m256i lanes_below(size_t n) {
  alignas(32) static const int32_t kMask[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(&kMask[8 - n]));
}

// A row of 16 columns, of which the first `nc` are real (masks used only when nc < 16).
struct Cols16 {
  bool full;
  __m256i m0, m1;
  explicit Cols16(size_t nc)
      : full(nc == 16), m0(lanes_below(nc < 8 ? nc : 8)), m1(lanes_below(nc > 8 ? nc - 8 : 0)) {}

  void load(const float* p, __m256& lo, __m256& hi) const {
    if (full) {
      lo = _mm256_loadu_ps(p);
      hi = _mm256_loadu_ps(p + 8);
    } else {
      lo = _mm256_maskload_ps(p, m0);
      hi = _mm256_maskload_ps(p + 8, m1);
    }
  }
  void store(float* p, __m256 lo, __m256 hi) const {
    if (full) {
      _mm256_storeu_ps(p, lo);
      _mm256_storeu_ps(p + 8, hi);
    } else {
      _mm256_maskstore_ps(p, m0, lo);
      _mm256_maskstore_ps(p + 8, m1, hi);
    }
  }
};

}  // namespace

void f32_gemm__avx2_6x16(size_t mr, size_t nc, size_t kc, const float* a, const float* b, size_t b_stride, float* c,
                         size_t c_stride, uint32_t flags, const F32GemmEpilogue& ep) {
  constexpr size_t kMr = 6;
  // Rows >= mr alias the last real row: they load and compute harmless values and are stored
  // first (reverse order below), so the real row's store lands last.
  float* cr[kMr];
  cr[0] = c;
  for (size_t r = 1; r < kMr; ++r) {
    cr[r] = r < mr ? cr[r - 1] + c_stride : cr[r - 1];
  }
  const Cols16 cols(nc);

  __m256 acc[kMr][2];
  if (flags & kF32GemmLoadC) {
#pragma GCC unroll 6
    for (size_t r = 0; r < kMr; ++r) {
      cols.load(cr[r], acc[r][0], acc[r][1]);
    }
  } else {
    __m256 lo = _mm256_setzero_ps();
    __m256 hi = _mm256_setzero_ps();
    if (ep.bias != nullptr) {
      cols.load(ep.bias, lo, hi);
    }
#pragma GCC unroll 6
    for (size_t r = 0; r < kMr; ++r) {
      acc[r][0] = lo;
      acc[r][1] = hi;
    }
    if (ep.row_bias != nullptr) {  // rows >= mr alias the last real row
#pragma GCC unroll 6
    for (size_t r = 0; r < kMr; ++r) {
      const __m256 v = _mm256_set1_ps(ep.row_bias[r < mr ? r : mr - 1]);
      acc[r][0] = _mm256_add_ps(acc[r][0], v);
      acc[r][1] = _mm256_add_ps(acc[r][1], v);
    }
    }
    if (ep.residual != nullptr) {
      const float* rr = ep.residual;
#pragma GCC unroll 6
      for (size_t r = 0; r < kMr; ++r) {
        __m256 rlo, rhi;
        cols.load(rr, rlo, rhi);
        acc[r][0] = _mm256_add_ps(acc[r][0], rlo);
        acc[r][1] = _mm256_add_ps(acc[r][1], rhi);
        if (r + 1 < mr) {
          rr += ep.residual_stride;
        }
      }
    }
  }

  for (size_t k = 0; k < kc; ++k) {
    const __m256 b0 = _mm256_loadu_ps(b);
    const __m256 b1 = _mm256_loadu_ps(b + 8);
    b += b_stride;
#pragma GCC unroll 6
    for (size_t r = 0; r < kMr; ++r) {
      const __m256 ar = _mm256_broadcast_ss(a + r);
      acc[r][0] = _mm256_fmadd_ps(ar, b0, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(ar, b1, acc[r][1]);
    }
    a += kMr;
  }

  if (flags & kF32GemmFinal) {
    // Operand order makes NaN propagate (MAXPS/MINPS return the second operand on NaN), as in
    // the scalar kernels.
    const __m256 vmin = _mm256_set1_ps(ep.min);
    const __m256 vmax = _mm256_set1_ps(ep.max);
#pragma GCC unroll 6
    for (size_t r = 0; r < kMr; ++r) {
      acc[r][0] = _mm256_min_ps(vmax, _mm256_max_ps(vmin, acc[r][0]));
      acc[r][1] = _mm256_min_ps(vmax, _mm256_max_ps(vmin, acc[r][1]));
    }
  }

#pragma GCC unroll 6
  for (size_t r = kMr; r-- > 0;) {
    cols.store(cr[r], acc[r][0], acc[r][1]);
  }
}

void f32_gemm__avx2_1x16(size_t /*mr*/, size_t nc, size_t kc, const float* a, const float* b, size_t b_stride, float* c,
                         size_t /*c_stride*/, uint32_t flags, const F32GemmEpilogue& ep) {
  const Cols16 cols(nc);
  __m256 x0 = _mm256_setzero_ps();
  __m256 x1 = _mm256_setzero_ps();
  if (flags & kF32GemmLoadC) {
    cols.load(c, x0, x1);
  } else {
    if (ep.bias != nullptr) {
      cols.load(ep.bias, x0, x1);
    }
    if (ep.row_bias != nullptr) {
      x0 = _mm256_add_ps(x0, _mm256_set1_ps(ep.row_bias[0]));
      x1 = _mm256_add_ps(x1, _mm256_set1_ps(ep.row_bias[0]));
    }
    if (ep.residual != nullptr) {
      __m256 lo, hi;
      cols.load(ep.residual, lo, hi);
      x0 = _mm256_add_ps(x0, lo);
      x1 = _mm256_add_ps(x1, hi);
    }
  }
  __m256 y0 = _mm256_setzero_ps(), y1 = _mm256_setzero_ps();
  __m256 z0 = _mm256_setzero_ps(), z1 = _mm256_setzero_ps();
  __m256 w0 = _mm256_setzero_ps(), w1 = _mm256_setzero_ps();
  size_t k = 0;
  for (; k + 4 <= kc; k += 4) {
    const __m256 a0 = _mm256_broadcast_ss(a);
    const __m256 a1 = _mm256_broadcast_ss(a + 1);
    const __m256 a2 = _mm256_broadcast_ss(a + 2);
    const __m256 a3 = _mm256_broadcast_ss(a + 3);
    const float* b1 = b + b_stride;
    const float* b2 = b1 + b_stride;
    const float* b3 = b2 + b_stride;
    x0 = _mm256_fmadd_ps(a0, _mm256_loadu_ps(b), x0);
    x1 = _mm256_fmadd_ps(a0, _mm256_loadu_ps(b + 8), x1);
    y0 = _mm256_fmadd_ps(a1, _mm256_loadu_ps(b1), y0);
    y1 = _mm256_fmadd_ps(a1, _mm256_loadu_ps(b1 + 8), y1);
    z0 = _mm256_fmadd_ps(a2, _mm256_loadu_ps(b2), z0);
    z1 = _mm256_fmadd_ps(a2, _mm256_loadu_ps(b2 + 8), z1);
    w0 = _mm256_fmadd_ps(a3, _mm256_loadu_ps(b3), w0);
    w1 = _mm256_fmadd_ps(a3, _mm256_loadu_ps(b3 + 8), w1);
    a += 4;
    b = b3 + b_stride;
  }
  for (; k < kc; ++k) {
    const __m256 a0 = _mm256_broadcast_ss(a);
    x0 = _mm256_fmadd_ps(a0, _mm256_loadu_ps(b), x0);
    x1 = _mm256_fmadd_ps(a0, _mm256_loadu_ps(b + 8), x1);
    a += 1;
    b += b_stride;
  }
  x0 = _mm256_add_ps(_mm256_add_ps(x0, y0), _mm256_add_ps(z0, w0));
  x1 = _mm256_add_ps(_mm256_add_ps(x1, y1), _mm256_add_ps(z1, w1));

  if (flags & kF32GemmFinal) {
    const __m256 vmin = _mm256_set1_ps(ep.min);
    const __m256 vmax = _mm256_set1_ps(ep.max);
    x0 = _mm256_min_ps(vmax, _mm256_max_ps(vmin, x0));
    x1 = _mm256_min_ps(vmax, _mm256_max_ps(vmin, x1));
  }
  cols.store(c, x0, x1);
}

}  // namespace nfuse::kernels

#endif  // defined(__x86_64__)
