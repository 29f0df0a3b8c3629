// Packing for the FP32 GEMM: B (weights) once at prepare time, A (activations) per cache block
// inside the driver. Layouts are documented in f32_gemm.h.
#include <cstring>

#include "kernels/f32-gemm/f32_gemm.h"

namespace nfuse::kernels {

size_t f32_gemm_packed_b_size(size_t k, size_t n, size_t nr) { return (n + nr - 1) / nr * nr * k; }

void f32_gemm_pack_b(const F32GemmConfig& cfg, size_t k, size_t n, const float* b, size_t b_k_stride,
                     size_t b_n_stride, float* packed) {
  const size_t nr = cfg.nr;
  const size_t n_pad = (n + nr - 1) / nr * nr;
  for (size_t k0 = 0; k0 < k; k0 += cfg.kc) {
    const size_t kb = k - k0 < cfg.kc ? k - k0 : cfg.kc;
    for (size_t j0 = 0; j0 < n; j0 += nr) {
      const size_t cols = n - j0 < nr ? n - j0 : nr;
      float* dst = packed + k0 * n_pad + j0 * kb;  // K block k0, panel j0/nr
      const float* src = b + k0 * b_k_stride;
      if (b_n_stride == 1) {
        for (size_t kk = 0; kk < kb; ++kk) {
          std::memcpy(dst + kk * nr, src + kk * b_k_stride + j0, cols * sizeof(float));
          std::memset(dst + kk * nr + cols, 0, (nr - cols) * sizeof(float));
        }
      } else {
        // Column-major source (transB, conv weights [N][K]): read each column contiguously.
        for (size_t jj = 0; jj < nr; ++jj) {
          const float* col = src + (j0 + jj) * b_n_stride;
          for (size_t kk = 0; kk < kb; ++kk) {
            dst[kk * nr + jj] = jj < cols ? col[kk * b_k_stride] : 0.0f;
          }
        }
      }
    }
  }
}

namespace {

// Rows contiguous in K (NHWC activations, row-major A): MR rows are read side by side and
// written as one K-major panel.
template <size_t MR>
inline void pack_a_rows(size_t rows, size_t kc, const float* a, size_t a_row_stride, float* packed) {
  const float* src[MR];
  for (size_t r = 0; r < MR; ++r) {
    src[r] = a + (r < rows ? r : 0) * a_row_stride;
  }
  for (size_t kk = 0; kk < kc; ++kk) {
    for (size_t r = 0; r < MR; ++r) {
      packed[kk * MR + r] = r < rows ? src[r][kk] : 0.0f;
    }
  }
}

}  // namespace

void f32_gemm_pack_a(size_t mr, size_t rows, size_t kc, const float* a, size_t a_row_stride, size_t a_col_stride,
                     float* packed) {
  if (a_col_stride == 1) {
    switch (mr) {
      case 1:
        std::memcpy(packed, a, kc * sizeof(float));
        return;
      case 4:
        pack_a_rows<4>(rows, kc, a, a_row_stride, packed);
        return;
      case 6:
        pack_a_rows<6>(rows, kc, a, a_row_stride, packed);
        return;
      case 8:
        pack_a_rows<8>(rows, kc, a, a_row_stride, packed);
        return;
      case 12:
        pack_a_rows<12>(rows, kc, a, a_row_stride, packed);
        return;
      default:
        break;
    }
  }
  if (a_row_stride == 1) {
    // Columns contiguous in M (NCHW activations, transposed A): each K step is a short copy.
    for (size_t kk = 0; kk < kc; ++kk) {
      std::memcpy(packed + kk * mr, a + kk * a_col_stride, rows * sizeof(float));
      std::memset(packed + kk * mr + rows, 0, (mr - rows) * sizeof(float));
    }
    return;
  }
  for (size_t kk = 0; kk < kc; ++kk) {
    for (size_t r = 0; r < mr; ++r) {
      packed[kk * mr + r] = r < rows ? a[r * a_row_stride + kk * a_col_stride] : 0.0f;
    }
  }
}

}  // namespace nfuse::kernels
