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
// Parameters: a scale and zero point per tensor (scalar or one-element inputs) or per axis (1-D
// inputs, one entry per index of `axis`, default 1, negative counts from the end). An absent
// zero point is 0 of u8. This is also the meaning of ir::QuantParams on a Value: `scale` and
// `zero_point` hold these inputs' values, `axis` is -1 per tensor or the normalized axis, and
// `storage` is the zero point's dtype.
// Rounding uses std::nearbyint, which is ties-to-even under the default FE_TONEAREST mode; nfuse
// never changes the floating-point environment.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

namespace nfuse::backends::ref {

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

}  // namespace nfuse::backends::ref
