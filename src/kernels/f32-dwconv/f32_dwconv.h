// FP32 depthwise 2-D convolution of one channel plane (NCHW), direct: the kernel family under
// the depthwise Conv of MobileNet-style networks, where a GEMM has K = kh*kw and would run at a
// fraction of its speed.
//
//   out[y][x] = clamp(bias + sum_{ky,kx} w[ky*kw + kx] * in[y*sh + ky*dh][x*sw + kx*dw], min, max)
//
// for output rows y in [y0, y1) and x in [0, out_width). `in` is an already padded plane: the
// caller copies the channel with its zero padding into a scratch buffer (per-thread, sized at
// prepare time) so the kernels have no border cases. Rows of that buffer must extend at least
// kF32DwconvRowSlack floats past the last column any window touches (the vector kernels read,
// but do not use, up to that many extra floats; keep them finite, e.g. zero). The fixed-shape
// kernels take any dilation (p.dh, p.dw) at run time; kh/kw/sh/sw are baked in.
//
// The [y0, y1) row range lets a depth-first engine call the kernel on strips of rows.
//
// Microkernels (hot code: no allocation, no checks):
//   f32_dwconv__scalar                     any kernel size, stride, dilation; the oracle
//   f32_dwconv3x3s1__scalar, ...s2, 5x5    fixed-shape scalar variants (the portable fast path)
//   f32_dwconv3x3s1__avx2, ...s2, 5x5      x86-64 AVX2 + FMA3, 8 outputs per step, scalar tail
//   f32_dwconv3x3s1__avx512, ...s2, 5x5    x86-64 AVX-512F, 16 outputs per step, masked tail
#pragma once

#include <cstddef>
#include <limits>

#include "kernels/cpu_features.h"

namespace nfuse::kernels {

inline constexpr size_t kF32DwconvRowSlack = 32;  // a 16-lane stride-2 step reads 31 past its first tap

struct F32DwconvParams {
  const float* in = nullptr;  // padded plane, row r at in + r * in_stride
  size_t in_stride = 0;
  const float* w = nullptr;  // kh * kw taps, row-major
  float bias = 0.0f;
  float* out = nullptr;  // row y at out + y * out_stride
  size_t out_stride = 0;
  size_t out_width = 0;
  size_t kh = 3, kw = 3;  // used by the generic kernel only
  size_t sh = 1, sw = 1;
  size_t dh = 1, dw = 1;
  float min = -std::numeric_limits<float>::infinity();
  float max = std::numeric_limits<float>::infinity();
};

using F32DwconvFn = void (*)(const F32DwconvParams& p, size_t y0, size_t y1);

void f32_dwconv__scalar(const F32DwconvParams& p, size_t y0, size_t y1);
void f32_dwconv3x3s1__scalar(const F32DwconvParams& p, size_t y0, size_t y1);
void f32_dwconv3x3s2__scalar(const F32DwconvParams& p, size_t y0, size_t y1);
void f32_dwconv5x5s1__scalar(const F32DwconvParams& p, size_t y0, size_t y1);
void f32_dwconv5x5s2__scalar(const F32DwconvParams& p, size_t y0, size_t y1);
#if defined(__x86_64__)
void f32_dwconv3x3s1__avx2(const F32DwconvParams& p, size_t y0, size_t y1);
void f32_dwconv3x3s2__avx2(const F32DwconvParams& p, size_t y0, size_t y1);
void f32_dwconv5x5s1__avx2(const F32DwconvParams& p, size_t y0, size_t y1);
void f32_dwconv5x5s2__avx2(const F32DwconvParams& p, size_t y0, size_t y1);
void f32_dwconv3x3s1__avx512(const F32DwconvParams& p, size_t y0, size_t y1);
void f32_dwconv3x3s2__avx512(const F32DwconvParams& p, size_t y0, size_t y1);
void f32_dwconv5x5s1__avx512(const F32DwconvParams& p, size_t y0, size_t y1);
void f32_dwconv5x5s2__avx512(const F32DwconvParams& p, size_t y0, size_t y1);
#endif

// The best kernel for a square k x k window with equal strides on `isa` (3x3 / 5x5, stride 1 / 2,
// any dilation); f32_dwconv__scalar for anything else. Never null.
F32DwconvFn f32_dwconv_select(Isa isa, size_t kh, size_t kw, size_t sh, size_t sw, size_t dh, size_t dw);

}  // namespace nfuse::kernels
