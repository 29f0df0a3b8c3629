// The quantizer's scalar helpers over the arithmetic every kernel shares
// (kernels/quant_arithmetic.h: quantize_value, dequantize_value, saturate_to).
#pragma once

#include <cstdint>

#include "kernels/quant_arithmetic.h"

namespace nfuse::quant {

// dequantize(quantize(x)): what a value becomes after a round trip through Q.
template <typename Q>
inline float fake_quantize(float x, float scale, int64_t zero_point) {
  return dequantize_value(quantize_value<Q>(x, scale, zero_point), scale, zero_point);
}

}  // namespace nfuse::quant
