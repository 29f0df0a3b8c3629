// Scalar half <-> float conversion (f16_vcvt.h), on the bit patterns.
#include <bit>

#include "kernels/f16-vcvt/f16_vcvt.h"

namespace nfuse::kernels {
namespace {

float half_bits_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  if (exp == 0x1fu) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));  // inf, NaN
  if (exp != 0) return std::bit_cast<float>(sign | ((exp + 112) << 23) | (mant << 13));
  // Zero or subnormal: mant * 2^-24, exact in float.
  const float v = static_cast<float>(mant) * 0x1p-24f;
  return std::bit_cast<float>(sign | std::bit_cast<uint32_t>(v));
}

uint16_t float_to_half_bits(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t a = x & 0x7fffffffu;
  if (a > 0x7f800000u) return sign | 0x7e00u;   // NaN: quiet, no payload
  if (a >= 0x477ff000u) return sign | 0x7c00u;  // rounds to 65520 or more (or inf): inf
  if (a < 0x38800000u) {                        // a half subnormal (or zero)
    // Adding 0.5 makes the float's own rounding (to nearest even) drop exactly the bits below
    // 2^-24, the half subnormal step; the low mantissa bits are then the half's.
    const float shifted = std::bit_cast<float>(a) + 0.5f;
    return sign | static_cast<uint16_t>(std::bit_cast<uint32_t>(shifted) - 0x3f000000u);
  }
  // Normal: re-bias the exponent and round the 13 dropped mantissa bits to nearest even.
  const uint32_t odd = (a >> 13) & 1u;
  return sign | static_cast<uint16_t>((a + 0xc8000fffu + odd) >> 13);
}

}  // namespace

void f16_f32_vcvt__scalar(const uint16_t* x, float* y, size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] = half_bits_to_float(x[i]);
}

void f32_f16_vcvt__scalar(const float* x, uint16_t* y, size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] = float_to_half_bits(x[i]);
}

}  // namespace nfuse::kernels
