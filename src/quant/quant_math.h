// Scalar quantize / dequantize for the quantization library, with exactly the arithmetic
// nfuse defines in src/backends/ref/ref_quant_util.h (src/quant may not include backends, so it
// is restated here; tests/unit/quant_params_test.cpp checks the two agree):
//   q = saturate(round_half_even(x / scale) + zero_point), x / scale in f32, NaN -> zero_point;
//   x = f32(q - zero_point) * scale.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

namespace nfuse::quant {

template <typename Q>
inline Q saturate_to(double v) {
  if (std::isnan(v)) return Q{0};
  constexpr double lo = static_cast<double>(std::numeric_limits<Q>::lowest());
  constexpr double hi = static_cast<double>(std::numeric_limits<Q>::max());
  if (v <= lo) return std::numeric_limits<Q>::lowest();
  if (v >= hi) return std::numeric_limits<Q>::max();
  return static_cast<Q>(v);
}

template <typename Q>
inline Q quantize_value(float x, float scale, int64_t zero_point) {
  const float scaled = x / scale;
  if (std::isnan(scaled)) return saturate_to<Q>(static_cast<double>(zero_point));
  return saturate_to<Q>(static_cast<double>(std::nearbyint(scaled)) + static_cast<double>(zero_point));
}

inline float dequantize_value(int64_t q, float scale, int64_t zero_point) {
  return static_cast<float>(q - zero_point) * scale;
}

// dequantize(quantize(x)): what a value becomes after a round trip through Q.
template <typename Q>
inline float fake_quantize(float x, float scale, int64_t zero_point) {
  return dequantize_value(quantize_value<Q>(x, scale, zero_point), scale, zero_point);
}

}  // namespace nfuse::quant
