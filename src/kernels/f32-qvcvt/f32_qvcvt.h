// QuantizeLinear's per-tensor arithmetic, f32 -> 8-bit (u8 or s8) or 16-bit (u16 or s16), exactly
// as kernels/quant_arithmetic.h's quantize_value:
//
//   v = x / scale (an f32 division, as the reference: a multiply by the reciprocal would round
//       differently; with `multiply`, x * scale, one f32 multiply); NaN becomes 0, so it
//       quantizes to the zero point;
//   v clamped to [lo, hi] = [qmin - zp, qmax - zp] (integers, so clamping before rounding equals
//       saturating after it), rounded half to even, plus zp;
//   y = the low byte of that integer (the u8 value, or the s8 one's two's complement); the 16-bit
//       kernels store the low 16 bits (u16, or s16's two's complement).
//
// The centred variant writes q - zp as f32 (the rounded, clamped v before the zero point is
// added): what an integer product (x_q - zp) * w takes as its left factor, for the f32 kernels
// that compute such products exactly (the depthwise path of a dynamically quantized Conv).
//
// Kernels: scalar (the oracle), AVX2 (32 per step), AVX-512 (16 per step, masked tails); no
// allocation, no reads or writes past n.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/cpu_features.h"

namespace nfuse::kernels {

struct F32QuantizeParams {
  float scale = 1.0f;
  float lo = 0.0f, hi = 255.0f;  // qmin - zp, qmax - zp
  float zero_point = 0.0f;
  bool is_signed = false;  // s8 output (the AVX2 kernel's packs saturate to its range)
  // v = x * scale instead of x / scale: for callers whose arithmetic is a multiply by a
  // reciprocal (nfuse.QLinearConvRegion's last step, folded in here). The q8 kernels only; the
  // 16-bit and centred ones divide whatever it says.
  bool multiply = false;
};

// The parameters of a u8 (`is_signed` false) or s8 output with this scale and zero point; `bits`
// 16: of a u16 or s16 output.
F32QuantizeParams f32_quantize_params(float scale, int32_t zero_point, bool is_signed, int bits = 8);

using F32QuantizeFn = void (*)(const float* x, size_t n, const F32QuantizeParams& p, uint8_t* y);

void f32_quantize_q8__scalar(const float* x, size_t n, const F32QuantizeParams& p, uint8_t* y);
#if defined(__x86_64__)
void f32_quantize_q8__avx2(const float* x, size_t n, const F32QuantizeParams& p, uint8_t* y);
void f32_quantize_q8__avx512(const float* x, size_t n, const F32QuantizeParams& p, uint8_t* y);
#endif

using F32Quantize16Fn = void (*)(const float* x, size_t n, const F32QuantizeParams& p, uint16_t* y);

void f32_quantize_q16__scalar(const float* x, size_t n, const F32QuantizeParams& p, uint16_t* y);
#if defined(__x86_64__)
void f32_quantize_q16__avx2(const float* x, size_t n, const F32QuantizeParams& p, uint16_t* y);
void f32_quantize_q16__avx512(const float* x, size_t n, const F32QuantizeParams& p, uint16_t* y);
#endif

using F32QuantizeCenteredFn = void (*)(const float* x, size_t n, const F32QuantizeParams& p, float* y);

void f32_quantize_centered__scalar(const float* x, size_t n, const F32QuantizeParams& p, float* y);
#if defined(__x86_64__)
void f32_quantize_centered__avx2(const float* x, size_t n, const F32QuantizeParams& p, float* y);
void f32_quantize_centered__avx512(const float* x, size_t n, const F32QuantizeParams& p, float* y);
#endif

// The kernel for `isa` (scalar where it has none). Never null.
F32QuantizeFn f32_quantize_q8_select(Isa isa);
F32QuantizeCenteredFn f32_quantize_centered_select(Isa isa);
F32Quantize16Fn f32_quantize_q16_select(Isa isa);

}  // namespace nfuse::kernels
