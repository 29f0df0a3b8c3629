// FP32 depthwise 2-D convolution of up to 16 channels at once, for small planes (a 14x14 or 7x7
// MobileNet stage): the channel-per-plane kernels of f32_dwconv.h vectorize along a row, so a
// 14-wide row fills 14 of 16 lanes and every plane pays its set-up; ONNX Runtime's NCHWc
// layout vectorizes across channels instead. This kernel does that inside an NCHW graph: it
// transposes the block's input planes into a zero-padded [row][column][16 channels] buffer,
// accumulates every output pixel's 16 channels in one vector (one FMA per tap), and transposes the
// results back into the output planes.
//
//   out[c][y][x] = clamp(bias[c] + sum_{ky,kx} w[c][ky*kw + kx] * in[c][y*sh + ky*dh - pad_top]
//                                                                      [x*sw + kx*dw - pad_left], min, max)
//
// for c < channels, taps outside the h x w plane reading zero. Channels at or past `channels` are
// neither read nor written.
//
// Microkernels (hot code: no allocation, no checks):
//   f32_dwconv_c16__scalar   the oracle (and the portable path)
//   f32_dwconv_c16__avx512   x86-64 AVX-512F: 16x16 register transposes, 4 output pixels per step
#pragma once

#include <cstddef>
#include <limits>

#include "kernels/cpu_features.h"

namespace nfuse::kernels {

struct F32DwconvC16Params {
  const float* in = nullptr;  // channel c's plane at in + c * in_plane (h x w, rows w apart)
  size_t in_plane = 0;
  size_t channels = 16;  // 1..16
  size_t h = 0, w = 0, out_h = 0, out_w = 0;
  size_t kh = 3, kw = 3, sh = 1, sw = 1, dh = 1, dw = 1;
  size_t pad_top = 0, pad_left = 0;
  // Tap t of channel c at taps16[t * 16 + c] (f32_dwconv_c16_pack: packed once, not per call),
  // 64-byte aligned.
  const float* taps16 = nullptr;
  const float* bias = nullptr;  // [channels] or nullptr
  float* out = nullptr;         // channel c's plane at out + c * out_plane (out_h x out_w)
  size_t out_plane = 0;
  float min = -std::numeric_limits<float>::infinity();
  float max = std::numeric_limits<float>::infinity();
  float* scratch = nullptr;  // f32_dwconv_c16_scratch_floats(p) floats, 64-byte aligned
};

using F32DwconvC16Fn = void (*)(const F32DwconvC16Params& p);

// Floats of scratch a call needs: the padded input block and the output block.
size_t f32_dwconv_c16_scratch_floats(const F32DwconvC16Params& p);

// The taps16 layout of `channels` (1..16) channels' weights ([c][taps]): taps * 16 floats at dst,
// the lanes of channels past `channels` zero.
void f32_dwconv_c16_pack(const float* weights, size_t channels, size_t taps, float* dst);

void f32_dwconv_c16__scalar(const F32DwconvC16Params& p);
#if defined(__x86_64__)
void f32_dwconv_c16__avx512(const F32DwconvC16Params& p);
#endif

// The kernel for `isa`: the AVX-512 one where the CPU runs it, else nullptr (the channel-per-plane
// kernels of f32_dwconv.h are faster than a scalar channel block).
F32DwconvC16Fn f32_dwconv_c16_select(Isa isa);

}  // namespace nfuse::kernels
