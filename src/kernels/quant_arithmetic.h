// The quantization arithmetic nfuse defines. Every int8 kernel (reference or optimized) must
// produce exactly these results; they follow ONNX and match ONNX Runtime's MLAS.
//
//   quantize:    q = saturate(round_half_even(x / scale) + zero_point)
//                x / scale is computed in f32 (as ONNX's reference and ORT do), the rounding is
//                round-to-nearest, ties to even (2.5 -> 2, 3.5 -> 4, -2.5 -> -2), the zero point is
//                added after rounding, and saturate clamps to the storage type's range
//                (u8 0..255, i8 -128..127). x / scale = +-inf saturates; NaN quantizes to the
//                zero point (ONNX leaves it undefined).
//   dequantize:  x = f32(q - zero_point) * scale, in f32.
//   requantize:  (QLinearConv, QLinearMatMul) an int32 accumulator acc of (x - x_zp)(w - w_zp)
//                products plus the int32 bias becomes
//                q = saturate(round_half_even(f32(acc) * multiplier) + y_zero_point) with
//                multiplier = (x_scale * w_scale) / y_scale evaluated in f32 in that order
//                (per output channel when w_scale is per channel).
//   QLinearAdd:  (com.microsoft) with ma = a_scale / y_scale and mb = b_scale / y_scale in f32,
//                y = saturate(round_half_even(fma(f32(a - a_zp), ma, f32(b - b_zp) * mb)) + y_zp)
//                where fma is one fused multiply-add (rounded once, std::fma / vfmadd). Written out
//                so that no compiler can contract a different pair of operations: with plain
//                `x * ma + t` GCC contracts to an FMA where the target has one (arm64, the -mfma
//                kernel files) and not elsewhere, and the results would differ by ISA. f32 rather
//                than a TFLite-style fixed-point multiplier because it stays closest to the QDQ
//                graph it replaces (dequantize, add in f32, quantize) and the vector kernels need
//                only cvt/mul/fma/cvt; the integer parts (a - a_zp) are exact in f32.
//   QLinearMul:  m = (a_scale * b_scale) / y_scale in f32 (requant_multiplier);
//                y = saturate(round_half_even(f32((a - a_zp) * (b - b_zp)) * m) + y_zp); the
//                integer product is exact (|p| <= 65536) and there is one rounding, no FMA question.
//   QLinearAdd / QLinearMul on 16-bit codes (u16 / i16: nfuse's extension for W8A16 graphs,
//                where ORT has none): y = quantize(dequantize(a) + dequantize(b)) (or *), the f32
//                sum or product of the two dequantized values, then quantize with y's scale and
//                zero point: exactly the DQ -> Add | Mul -> Q graph the op replaces. (The 8-bit
//                product form overflows int32 at 16 bits; one add or multiply of two f32 values
//                has no FMA question either.)
//   QLinearConcat: each input element becomes quantize(dequantize(x, x_scale, x_zp), y_scale,
//                y_zp) (exactly what the DQ -> Concat -> Q graph computes; identity when the
//                input's parameters equal the output's). Kernels may tabulate it per input.
//   QLinearAveragePool / QLinearGlobalAveragePool: acc = the exact integer sum of (x - x_zp)
//                over the window taps inside the input (padding contributes the real value 0, as
//                in the f32 AveragePool); count = taps inside, plus the padded taps with
//                count_include_pad;
//                y = saturate(round_half_even((f32(acc) * m) / f32(count)) + y_zp) with
//                m = x_scale / y_scale in f32; count 0 gives y_zp. f32(acc) rounds to nearest even
//                when |acc| > 2^24 (huge windows), identically everywhere.
//   The f32 intermediate results above can be +-inf only for extreme scale ratios; saturate then
//   clamps, and NaN (0 * inf) gives the zero point as in quantize. Optimized kernels decline
//   (fall back to ref) when a multiplier is not finite.
// Parameters: a scale and zero point per tensor (scalar or one-element inputs) or per axis (1-D
// inputs, one entry per index of `axis`, default 1, negative counts from the end). An absent
// zero point is 0 of u8. This is also the meaning of ir::QuantParams on a Value: `scale` and
// `zero_point` hold these inputs' values, `axis` is -1 per tensor or the normalized axis, and
// `storage` is the zero point's dtype.
// Rounding uses std::nearbyint, which is ties-to-even under the default FE_TONEAREST mode; nfuse
// never changes the floating-point environment.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>

// In namespace nfuse itself: the kernels, the reference kernels, the optimized backends and the
// quantizer (src/quant) all call these unqualified.
namespace nfuse {

template <typename Q>
inline Q saturate_to(double v) {
  if (std::isnan(v)) return Q{0};
  constexpr double lo = static_cast<double>(std::numeric_limits<Q>::lowest());
  constexpr double hi = static_cast<double>(std::numeric_limits<Q>::max());
  if (v <= lo) return std::numeric_limits<Q>::lowest();
  if (v >= hi) return std::numeric_limits<Q>::max();
  return static_cast<Q>(v);
}

inline float round_half_even(float v) { return std::nearbyint(v); }

template <typename Q>
inline Q quantize_value(float x, float scale, int64_t zero_point) {
  const float scaled = x / scale;
  if (std::isnan(scaled)) return saturate_to<Q>(static_cast<double>(zero_point));
  return saturate_to<Q>(static_cast<double>(round_half_even(scaled)) + static_cast<double>(zero_point));
}

inline float dequantize_value(int64_t q, float scale, int64_t zero_point) {
  return static_cast<float>(q - zero_point) * scale;
}

inline float requant_multiplier(float x_scale, float w_scale, float y_scale) { return (x_scale * w_scale) / y_scale; }

template <typename Q>
inline Q requantize_value(int64_t acc, float multiplier, int64_t zero_point) {
  return quantize_value<Q>(static_cast<float>(acc) * multiplier, 1.0f, zero_point);
}

// QLinearAdd's f32 value before rounding (see the header comment); a_c = a - a_zp, b_c = b - b_zp.
inline float qlinear_add_value(int32_t a_c, int32_t b_c, float ma, float mb) {
  return std::fma(static_cast<float>(a_c), ma, static_cast<float>(b_c) * mb);
}

// QLinearMul's f32 value before rounding; m = requant_multiplier(a_scale, b_scale, y_scale).
inline float qlinear_mul_value(int32_t a_c, int32_t b_c, float m) { return static_cast<float>(a_c * b_c) * m; }

// The 16-bit QLinearAdd / QLinearMul value before quantization (see the header comment).
inline float qlinear16_binary_value(bool mul, float a, float b) { return mul ? a * b : a + b; }

// The quantized average of a pooling window: acc = sum of (x - x_zp), m = x_scale / y_scale.
template <typename Q>
inline Q qlinear_average_value(int64_t acc, int64_t count, float m, int64_t y_zp) {
  if (count == 0) return saturate_to<Q>(static_cast<double>(y_zp));
  const float v = (static_cast<float>(acc) * m) / static_cast<float>(count);
  return quantize_value<Q>(v, 1.0f, y_zp);
}

// DynamicQuantizeLinear's u8 parameters from the data's range (lo = min(0, min x), hi =
// max(0, max x), NaNs ignored): scale = (hi - lo) / 255 in f32, zero point = saturate(round(0 -
// lo / scale)). All-zero (or empty) data gives scale 0, zero point 0 (and quantizes to 0).
struct DynamicQuantParams {
  float scale = 0.0f;
  uint8_t zero_point = 0;
};
inline DynamicQuantParams dynamic_quant_params(float lo, float hi) {
  DynamicQuantParams p;
  p.scale = (hi - lo) / 255.0f;
  if (p.scale != 0.0f) p.zero_point = saturate_to<uint8_t>(round_half_even(0.0f - lo / p.scale));
  return p;
}
// The same from the data itself; std::min/max skip NaNs (the comparison is false). The statement
// of the arithmetic for the ref backend: GCC does not vectorize this loop (no -ffast-math), so
// the cpu backend takes the range from kernels/f32-rminmax instead.
inline DynamicQuantParams dynamic_quant_params_of(const float* x, size_t n) {
  float lo = 0.0f, hi = 0.0f;
  for (size_t i = 0; i < n; ++i) {
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
  }
  return dynamic_quant_params(lo, hi);
}

}  // namespace nfuse
