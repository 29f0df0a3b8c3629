// FP32 depthwise 2-D convolution of one channel plane (NCHW), direct: the kernel family under
// the depthwise Conv of MobileNet-style networks, where a GEMM has K = kh*kw and would run at a
// fraction of its speed.
//
//   out[y][x] = act(clamp(bias + sum_{ky,kx} w[ky*kw + kx] * in[y*sh + ky*dh - pad_top]
//                                                              [x*sw + kx*dw - pad_left], min, max))
//
// for output rows y in [y0, y1) and x in [0, out_width), where taps outside the in_height x
// in_width plane read zero. `in` is the unpadded channel plane itself: the kernels handle the
// border (rows whose window leaves the plane get the out-of-plane taps' weights zeroed; columns
// whose vector step would read outside the row use masked loads), so the op needs no padded copy
// of the input and depthwise costs one read of the input and one write of the output. The kernels
// never read outside the plane (masked-off lanes of a masked load do not fault). A caller may also
// pass a zero-padded copy with pads 0 and in_width = its row stride (zero slack included): then
// no step needs a mask (what the op does for small planes, where the copy is cheap). The fixed-shape
// kernels take any dilation (p.dh, p.dw) at run time; kh/kw/sh/sw are baked in. `act` is applied
// in the store after the clamp (HardSwish, MobileNetV3's activation, so the op needs no second
// pass over the output).
//
// The [y0, y1) row range lets a depth-first engine call the kernel on strips of rows.
//
// Microkernels (hot code: no allocation, no checks):
//   f32_dwconv__scalar                     any kernel size, stride, dilation; the oracle
//   f32_dwconv3x3s1__scalar, ...s2, 5x5    fixed-shape scalar variants (the portable fast path)
//   f32_dwconv3x3s1__avx2, ...s2, 5x5      x86-64 AVX2 + FMA3, 8 outputs per step, masked edges
//   f32_dwconv3x3s1__avx512, ...s2, 5x5    x86-64 AVX-512F, 16 outputs per step, masked edges
#pragma once

#include <cstddef>
#include <limits>

#include "kernels/cpu_features.h"

namespace nfuse::kernels {

// What the store applies after the [min, max] clamp.
enum class F32DwconvAct { kNone, kHardSwish };  // kHardSwish: y * clamp(act_a * y + act_b, 0, 1)

struct F32DwconvParams {
  const float* in = nullptr;  // unpadded plane, row r at in + r * in_stride
  size_t in_stride = 0;
  size_t in_height = 0, in_width = 0;
  size_t pad_top = 0, pad_left = 0;  // zeros before row 0 / column 0 (the far side: implied)
  const float* w = nullptr;          // kh * kw taps, row-major
  float bias = 0.0f;
  float* out = nullptr;  // row y at out + y * out_stride
  size_t out_stride = 0;
  size_t out_width = 0;
  size_t kh = 3, kw = 3;  // used by the generic kernel only
  size_t sh = 1, sw = 1;
  size_t dh = 1, dw = 1;
  float min = -std::numeric_limits<float>::infinity();
  float max = std::numeric_limits<float>::infinity();
  F32DwconvAct act = F32DwconvAct::kNone;
  float act_a = 0.0f, act_b = 0.0f;
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

// The taps of one output row / column that fall inside the plane: [lo, hi) of 0..k-1 for output
// position `o` (stride s, dilation d, leading pad `pad`, plane extent `n`). Shared by the kernels.
struct F32DwconvTapRange {
  size_t lo, hi;
};
inline F32DwconvTapRange f32_dwconv_taps(size_t o, size_t k, size_t s, size_t d, size_t pad, size_t n) {
  // Input index of tap t: o*s + t*d - pad; valid when in [0, n).
  const size_t base = o * s;
  if (base >= pad && base + (k - 1) * d < pad + n) return {0, k};  // the usual case: no divisions
  size_t lo = 0;
  if (base < pad) lo = (pad - base + d - 1) / d;
  size_t hi = 0;
  if (pad + n > base) hi = (pad + n - base - 1) / d + 1;  // taps t with base + t*d < pad + n
  if (hi > k) hi = k;
  if (lo > hi) lo = hi;
  return {lo, hi};
}

// The outputs [lo, hi) of `count` along one axis whose whole window lies inside the plane (all
// k taps valid): o*s >= pad and o*s + (k-1)*d < pad + n. Once per call, so rows inside take a
// path with no per-row tap arithmetic.
inline F32DwconvTapRange f32_dwconv_inside(size_t count, size_t k, size_t s, size_t d, size_t pad, size_t n) {
  const size_t lo = (pad + s - 1) / s, span = (k - 1) * d;
  size_t hi = pad + n > span ? (pad + n - span - 1) / s + 1 : 0;
  hi = hi < count ? hi : count;
  return {lo < hi ? lo : hi, hi};
}

}  // namespace nfuse::kernels
