// FP32 direct convolution for few input channels: a network's stem (3 or 4 channels in, 3x3 to
// 7x7, stride 1 or 2), one output row at a time, every output channel, straight from the input
// rows. An im2col + GEMM does this work with K = 27: the microkernel loads and stores its
// accumulator tile for 27 multiply-adds, and the im2col matrix is as large as the output. Here
// the K = ci * kh * kw shifted (and, at stride 2, decimated) input rows are built once per output
// row in a small workspace, and each output channel is a K-term weighted sum of them, summed in
// registers over chunks of the row.
//
//   y[co][ox] = clamp(bias[co] + sum_t w[co][t] * P[t][ox], min, max),
//   P[(ci * kh + ky) * kw + kx][ox] = row(ci, ky)[ox * sw + kx - pad_left]  (0 outside the row)
//
// The sum runs over t in order, one rounding per multiply-add term (an FMA where the ISA has one),
// so results differ from an im2col GEMM's blocked order by float rounding only.
// Microkernels (hot code: no allocation, no checks), one source (f32_sconv_impl.h) compiled
//   f32_sconv_row__scalar   portable C++ (NEON-vectorised by the compiler on arm64)
//   f32_sconv_row__avx2     x86-64 AVX2 + FMA3
//   f32_sconv_row__avx512   x86-64 AVX-512F
#pragma once

#include <cstddef>
#include <limits>

#include "kernels/cpu_features.h"

namespace nfuse::kernels {

// Kernels take up to this many taps (ci * kh * kw): a 3-channel 3x3 is 27, a 1-channel 5x5 25, a
// 3-channel 6x6 (YOLOv5's stem) 108, a 3-channel 7x7 147. Which layers run here is the caller's
// choice (cpu_small_channel_conv.h): an im2col GEMM wins once K and the output channels are both
// large.
inline constexpr size_t kF32SconvMaxTaps = 160;
// Workspace rows are padded to a multiple of this many floats.
inline constexpr size_t kF32SconvChunk = 64;

struct F32SconvRowArgs {
  const float* const* rows = nullptr;  // [ci * kh] (<= kF32SconvMaxTaps): input row (ci, ky); nullptr:
                                       // outside the image (zeros)
  size_t ci = 0, kh = 0, kw = 0;
  size_t sw = 1;                       // 1 or 2
  size_t pad_left = 0;
  size_t w = 0;                        // input row length
  size_t wo = 0;                       // output row length
  size_t co = 0;
  const float* weights = nullptr;      // [co][ci * kh * kw], OIHW order
  const float* bias = nullptr;         // [co] or nullptr
  float* out = nullptr;                // output channel co's row at out + co * out_stride
  size_t out_stride = 0;
  float min = -std::numeric_limits<float>::infinity();
  float max = std::numeric_limits<float>::infinity();
  float* workspace = nullptr;          // f32_sconv_workspace_floats(ci * kh * kw, wo) floats
};

size_t f32_sconv_workspace_floats(size_t taps, size_t wo);

using F32SconvRowFn = void (*)(const F32SconvRowArgs& args);
void f32_sconv_row__scalar(const F32SconvRowArgs& args);
#if defined(__x86_64__)
void f32_sconv_row__avx2(const F32SconvRowArgs& args);
void f32_sconv_row__avx512(const F32SconvRowArgs& args);
#endif

// The kernel for `isa` (scalar where `isa` has none compiled in). Never null.
F32SconvRowFn f32_sconv_row_kernel(Isa isa);

}  // namespace nfuse::kernels
