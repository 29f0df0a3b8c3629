// FP32 im2col: rows of a convolution's im2col matrix packed straight into the f32 GEMM's B panel
// layout (src/kernels/f32-gemm/f32_gemm.h), for the cpu backend's W * X convolutions and their
// pixel-rows variant. Row k = (ic * kh + ky) * kw + kx of one group, columns = output pixels.
//
//   dst[panel * kc * nr + kk * nr + jj] = x[ic][oy*sh + ky*dh - pad_top][ox*sw + kx*dw - pad_left]
//
// for k = k0 + kk < k0 + kc, pixel p = p0 + panel * nr + jj < p0 + np (row-major (oy, ox)); zero
// in the padding and past np; rows k >= kx_rows are ones. With nr = np it writes one plain
// kc x np matrix. The copies are strided (stride sw) loops, so one source is compiled per ISA
// (f32_im2col_impl.h in f32_im2col_{scalar,avx2,avx512}.cpp): stride-2 gathers become permutes
// 16 lanes wide instead of SSE2's 4.
#pragma once

#include <cstddef>

#include "kernels/cpu_features.h"

namespace nfuse::kernels {

struct F32Im2colGeometry {
  size_t h = 0, w = 0;    // input plane
  size_t ho = 0, wo = 0;  // output plane
  size_t kh = 1, kw = 1, sh = 1, sw = 1, dh = 1, dw = 1;
  size_t pad_top = 0, pad_left = 0;
  // Where input row iy of channel ic lives: x + ic * plane_stride + (iy - row_base) * w. The
  // defaults (0: h * w; 0) are a whole NCHW image; a fused group's line buffer holds rows from
  // row_base on, planes plane_stride apart.
  size_t plane_stride = 0, row_base = 0;
};

using F32Im2colFn = void (*)(const F32Im2colGeometry& g, const float* x, size_t kx_rows, size_t k0, size_t kc,
                             size_t p0, size_t np, size_t nr, float* dst);

void f32_im2col__scalar(const F32Im2colGeometry& g, const float* x, size_t kx_rows, size_t k0, size_t kc, size_t p0,
                        size_t np, size_t nr, float* dst);
#if defined(__x86_64__)
void f32_im2col__avx2(const F32Im2colGeometry& g, const float* x, size_t kx_rows, size_t k0, size_t kc, size_t p0,
                      size_t np, size_t nr, float* dst);
void f32_im2col__avx512(const F32Im2colGeometry& g, const float* x, size_t kx_rows, size_t k0, size_t kc, size_t p0,
                        size_t np, size_t nr, float* dst);
#endif

// The variant for selected_isa(). Never null.
F32Im2colFn f32_im2col_select();

}  // namespace nfuse::kernels
