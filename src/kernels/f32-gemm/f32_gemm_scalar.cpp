// Portable microkernels: the fallback where no SIMD variant applies, and the oracle the SIMD
// variants are tested against (tests/kernels/f32_gemm_test.cpp). Plain loops the compiler may
// vectorise for the baseline ISA; 4x8 keeps 8 accumulators of 4 lanes within SSE2's 16 registers.
#include "kernels/f32-gemm/f32_gemm.h"

namespace nfuse::kernels {
namespace {

template <size_t MR, size_t NR>
inline void gemm_scalar(size_t mr, size_t nc, size_t kc, const float* a, const float* b, size_t b_stride, float* c, size_t c_stride,
                        uint32_t flags, const F32GemmEpilogue& ep) {
  float acc[MR][NR];
  for (size_t r = 0; r < MR; ++r) {
    for (size_t j = 0; j < NR; ++j) {
      float v = 0.0f;
      if (r < mr && j < nc) {
        if (flags & kF32GemmLoadC) {
          v = c[r * c_stride + j];
        } else {
          v = ep.bias != nullptr ? ep.bias[j] : 0.0f;
          if (ep.row_bias != nullptr) v += ep.row_bias[r];
          if (ep.residual != nullptr) {
            v += ep.residual[r * ep.residual_stride + j];
          }
        }
      }
      acc[r][j] = v;
    }
  }
  for (size_t k = 0; k < kc; ++k) {
    for (size_t r = 0; r < MR; ++r) {
      const float ar = a[r];
      for (size_t j = 0; j < NR; ++j) {
        acc[r][j] += ar * b[j];
      }
    }
    a += MR;
    b += b_stride;
  }
  const bool final = (flags & kF32GemmFinal) != 0;
  for (size_t r = 0; r < mr; ++r) {
    for (size_t j = 0; j < nc; ++j) {
      float v = acc[r][j];
      if (final) {
        v = v < ep.min ? ep.min : v;
        v = v > ep.max ? ep.max : v;
      }
      c[r * c_stride + j] = v;
    }
  }
}

}  // namespace

void f32_gemm__scalar_4x8(size_t mr, size_t nc, size_t kc, const float* a, const float* b, size_t b_stride, float* c,
                          size_t c_stride, uint32_t flags, const F32GemmEpilogue& ep) {
  gemm_scalar<4, 8>(mr, nc, kc, a, b, b_stride, c, c_stride, flags, ep);
}

void f32_gemm__scalar_1x8(size_t mr, size_t nc, size_t kc, const float* a, const float* b, size_t b_stride, float* c,
                          size_t c_stride, uint32_t flags, const F32GemmEpilogue& ep) {
  gemm_scalar<1, 8>(mr, nc, kc, a, b, b_stride, c, c_stride, flags, ep);
}

}  // namespace nfuse::kernels
