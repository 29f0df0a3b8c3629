// aarch64 Advanced SIMD microkernels.
//
// 8x8: 16 q-register accumulators, 2 for the B row, 2 for the 8 A values of one K step; each A
// value is used by lane (vfmaq_laneq_f32), so A needs 2 loads per step instead of 8 broadcasts.
// 1x8: the tail-row partner, 4 K steps in flight on separate accumulators to cover FMA latency.
#include "kernels/f32-gemm/f32_gemm.h"

#if defined(__aarch64__)

#include <arm_neon.h>

#include <cstring>

namespace nfuse::kernels {
namespace {

// Loads/stores the first nc (1..8) floats of an 8-wide row; the missing lanes read as zero.
inline void load8(const float* p, size_t nc, float32x4_t& lo, float32x4_t& hi) {
  if (nc == 8) {
    lo = vld1q_f32(p);
    hi = vld1q_f32(p + 4);
    return;
  }
  float t[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  std::memcpy(t, p, nc * sizeof(float));
  lo = vld1q_f32(t);
  hi = vld1q_f32(t + 4);
}

inline void store8(float* p, size_t nc, float32x4_t lo, float32x4_t hi) {
  if (nc == 8) {
    vst1q_f32(p, lo);
    vst1q_f32(p + 4, hi);
    return;
  }
  float t[8];
  vst1q_f32(t, lo);
  vst1q_f32(t + 4, hi);
  std::memcpy(p, t, nc * sizeof(float));
}

// NaN propagates as in the scalar kernels: vmaxq/vminq return NaN if either operand is NaN.
inline float32x4_t clamp(float32x4_t v, float32x4_t vmin, float32x4_t vmax) {
  return vminq_f32(vmaxq_f32(v, vmin), vmax);
}

}  // namespace

void f32_gemm__neon_8x8(size_t mr, size_t nc, size_t kc, const float* a, const float* b, size_t b_stride, float* c,
                        size_t c_stride, uint32_t flags, const F32GemmEpilogue& ep) {
  constexpr size_t kMr = 8;
  // Rows >= mr alias the last real row and are stored first (reverse order below).
  float* cr[kMr];
  cr[0] = c;
  for (size_t r = 1; r < kMr; ++r) {
    cr[r] = r < mr ? cr[r - 1] + c_stride : cr[r - 1];
  }

  float32x4_t acc[kMr][2];
  if (flags & kF32GemmLoadC) {
    for (size_t r = 0; r < kMr; ++r) {
      load8(cr[r], nc, acc[r][0], acc[r][1]);
    }
  } else {
    float32x4_t lo = vdupq_n_f32(0.0f);
    float32x4_t hi = vdupq_n_f32(0.0f);
    if (ep.bias != nullptr) {
      load8(ep.bias, nc, lo, hi);
    }
    for (size_t r = 0; r < kMr; ++r) {
      acc[r][0] = lo;
      acc[r][1] = hi;
    }
    if (ep.row_bias != nullptr) {  // rows >= mr alias the last real row
    for (size_t r = 0; r < kMr; ++r) {
      const float32x4_t v = vdupq_n_f32(ep.row_bias[r < mr ? r : mr - 1]);
      acc[r][0] = vaddq_f32(acc[r][0], v);
      acc[r][1] = vaddq_f32(acc[r][1], v);
    }
    }
    if (ep.residual != nullptr) {
      const float* rr = ep.residual;
      for (size_t r = 0; r < kMr; ++r) {
        float32x4_t rlo, rhi;
        load8(rr, nc, rlo, rhi);
        acc[r][0] = vaddq_f32(acc[r][0], rlo);
        acc[r][1] = vaddq_f32(acc[r][1], rhi);
        if (r + 1 < mr) {
          rr += ep.residual_stride;
        }
      }
    }
  }

  for (size_t k = 0; k < kc; ++k) {
    const float32x4_t va0 = vld1q_f32(a);
    const float32x4_t va1 = vld1q_f32(a + 4);
    const float32x4_t vb0 = vld1q_f32(b);
    const float32x4_t vb1 = vld1q_f32(b + 4);
    a += kMr;
    b += b_stride;
#define NFUSE_F32_GEMM_NEON_ROW(r, va, lane)                       \
  acc[r][0] = vfmaq_laneq_f32(acc[r][0], vb0, va, lane);          \
  acc[r][1] = vfmaq_laneq_f32(acc[r][1], vb1, va, lane);
    NFUSE_F32_GEMM_NEON_ROW(0, va0, 0)
    NFUSE_F32_GEMM_NEON_ROW(1, va0, 1)
    NFUSE_F32_GEMM_NEON_ROW(2, va0, 2)
    NFUSE_F32_GEMM_NEON_ROW(3, va0, 3)
    NFUSE_F32_GEMM_NEON_ROW(4, va1, 0)
    NFUSE_F32_GEMM_NEON_ROW(5, va1, 1)
    NFUSE_F32_GEMM_NEON_ROW(6, va1, 2)
    NFUSE_F32_GEMM_NEON_ROW(7, va1, 3)
#undef NFUSE_F32_GEMM_NEON_ROW
  }

  if (flags & kF32GemmFinal) {
    const float32x4_t vmin = vdupq_n_f32(ep.min);
    const float32x4_t vmax = vdupq_n_f32(ep.max);
    for (size_t r = 0; r < kMr; ++r) {
      acc[r][0] = clamp(acc[r][0], vmin, vmax);
      acc[r][1] = clamp(acc[r][1], vmin, vmax);
    }
  }

  for (size_t r = kMr; r-- > 0;) {
    store8(cr[r], nc, acc[r][0], acc[r][1]);
  }
}

void f32_gemm__neon_1x8(size_t /*mr*/, size_t nc, size_t kc, const float* a, const float* b, size_t b_stride, float* c,
                        size_t /*c_stride*/, uint32_t flags, const F32GemmEpilogue& ep) {
  float32x4_t x0 = vdupq_n_f32(0.0f), x1 = vdupq_n_f32(0.0f);
  if (flags & kF32GemmLoadC) {
    load8(c, nc, x0, x1);
  } else {
    if (ep.bias != nullptr) {
      load8(ep.bias, nc, x0, x1);
    }
    if (ep.row_bias != nullptr) {
      x0 = vaddq_f32(x0, vdupq_n_f32(ep.row_bias[0]));
      x1 = vaddq_f32(x1, vdupq_n_f32(ep.row_bias[0]));
    }
    if (ep.residual != nullptr) {
      float32x4_t lo, hi;
      load8(ep.residual, nc, lo, hi);
      x0 = vaddq_f32(x0, lo);
      x1 = vaddq_f32(x1, hi);
    }
  }
  float32x4_t y0 = vdupq_n_f32(0.0f), y1 = vdupq_n_f32(0.0f);
  float32x4_t z0 = vdupq_n_f32(0.0f), z1 = vdupq_n_f32(0.0f);
  float32x4_t w0 = vdupq_n_f32(0.0f), w1 = vdupq_n_f32(0.0f);
  size_t k = 0;
  for (; k + 4 <= kc; k += 4) {
    const float32x4_t va = vld1q_f32(a);
    const float* b1 = b + b_stride;
    const float* b2 = b1 + b_stride;
    const float* b3 = b2 + b_stride;
    x0 = vfmaq_laneq_f32(x0, vld1q_f32(b), va, 0);
    x1 = vfmaq_laneq_f32(x1, vld1q_f32(b + 4), va, 0);
    y0 = vfmaq_laneq_f32(y0, vld1q_f32(b1), va, 1);
    y1 = vfmaq_laneq_f32(y1, vld1q_f32(b1 + 4), va, 1);
    z0 = vfmaq_laneq_f32(z0, vld1q_f32(b2), va, 2);
    z1 = vfmaq_laneq_f32(z1, vld1q_f32(b2 + 4), va, 2);
    w0 = vfmaq_laneq_f32(w0, vld1q_f32(b3), va, 3);
    w1 = vfmaq_laneq_f32(w1, vld1q_f32(b3 + 4), va, 3);
    a += 4;
    b = b3 + b_stride;
  }
  for (; k < kc; ++k) {
    const float32x4_t va = vdupq_n_f32(*a);
    x0 = vfmaq_f32(x0, vld1q_f32(b), va);
    x1 = vfmaq_f32(x1, vld1q_f32(b + 4), va);
    a += 1;
    b += b_stride;
  }
  x0 = vaddq_f32(vaddq_f32(x0, y0), vaddq_f32(z0, w0));
  x1 = vaddq_f32(vaddq_f32(x1, y1), vaddq_f32(z1, w1));

  if (flags & kF32GemmFinal) {
    const float32x4_t vmin = vdupq_n_f32(ep.min);
    const float32x4_t vmax = vdupq_n_f32(ep.max);
    x0 = clamp(x0, vmin, vmax);
    x1 = clamp(x1, vmin, vmax);
  }
  store8(c, nc, x0, x1);
}

}  // namespace nfuse::kernels

#endif  // defined(__aarch64__)
