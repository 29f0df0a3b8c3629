#include "ir/dtype.h"

#include <cmath>
#include <limits>

namespace nfuse::ir {

size_t dtype_size(DType t) {
  switch (t) {
    case DType::kF32: case DType::kI32: case DType::kU32: return 4;
    case DType::kF16: case DType::kBF16: case DType::kI16: case DType::kU16: return 2;
    case DType::kF64: case DType::kI64: case DType::kU64: return 8;
    case DType::kI8: case DType::kU8: case DType::kBool: return 1;
    case DType::kUndefined: return 0;
  }
  return 0;
}

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::kF32: return "f32";
    case DType::kF16: return "f16";
    case DType::kBF16: return "bf16";
    case DType::kF64: return "f64";
    case DType::kI8: return "i8";
    case DType::kU8: return "u8";
    case DType::kI16: return "i16";
    case DType::kU16: return "u16";
    case DType::kI32: return "i32";
    case DType::kU32: return "u32";
    case DType::kI64: return "i64";
    case DType::kU64: return "u64";
    case DType::kBool: return "bool";
    case DType::kUndefined: return "undefined";
  }
  return "undefined";
}

bool dtype_is_float(DType t) {
  return t == DType::kF32 || t == DType::kF16 || t == DType::kBF16 || t == DType::kF64;
}
bool dtype_is_integer(DType t) {
  switch (t) {
    case DType::kI8: case DType::kU8: case DType::kI16: case DType::kU16:
    case DType::kI32: case DType::kU32: case DType::kI64: case DType::kU64: return true;
    default: return false;
  }
}
bool dtype_is_signed(DType t) {
  return dtype_is_float(t) || t == DType::kI8 || t == DType::kI16 || t == DType::kI32 ||
         t == DType::kI64;
}

float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: value = mant * 2^-24
      float f = std::ldexp(static_cast<float>(mant), -24);
      std::memcpy(&bits, &f, 4);
      bits |= sign;
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 112) << 23) | (mant << 13);
  }
  float out;
  std::memcpy(&out, &bits, 4);
  return out;
}

uint16_t float_to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t absx = x & 0x7fffffffu;
  if (absx >= 0x7f800000u) {  // Inf or NaN
    return sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u : 0u);
  }
  if (absx >= 0x477ff000u) return sign | 0x7c00u;  // rounds to >= 65520: overflow to Inf
  if (absx < 0x38800000u) {                        // below the smallest normal half: subnormal
    float a;
    std::memcpy(&a, &absx, 4);
    // Scaling by 2^24 maps half subnormal steps to integers; nearbyint rounds half to even.
    return sign | static_cast<uint16_t>(std::nearbyint(a * 16777216.0f));
  }
  uint32_t mant = absx & 0x7fffffu;
  uint32_t exp = (absx >> 23) - 112;
  uint32_t half = (exp << 10) | (mant >> 13);
  const uint32_t rest = mant & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) ++half;
  return sign | static_cast<uint16_t>(half);
}

uint16_t float_to_bf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet NaN
  const uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>((x + rounding) >> 16);
}

double load_as_double(DType t, const void* base, int64_t i) {
  switch (t) {
    case DType::kF32: return static_cast<const float*>(base)[i];
    case DType::kF64: return static_cast<const double*>(base)[i];
    case DType::kF16: return half_to_float(static_cast<const uint16_t*>(base)[i]);
    case DType::kBF16: return bf16_to_float(static_cast<const uint16_t*>(base)[i]);
    case DType::kI8: return static_cast<const int8_t*>(base)[i];
    case DType::kU8: return static_cast<const uint8_t*>(base)[i];
    case DType::kI16: return static_cast<const int16_t*>(base)[i];
    case DType::kU16: return static_cast<const uint16_t*>(base)[i];
    case DType::kI32: return static_cast<const int32_t*>(base)[i];
    case DType::kU32: return static_cast<const uint32_t*>(base)[i];
    case DType::kI64: return static_cast<double>(static_cast<const int64_t*>(base)[i]);
    case DType::kU64: return static_cast<double>(static_cast<const uint64_t*>(base)[i]);
    case DType::kBool: return static_cast<const bool*>(base)[i] ? 1.0 : 0.0;
    case DType::kUndefined: return 0.0;
  }
  return 0.0;
}

// Out-of-range float -> integer conversion is undefined behaviour in C++: saturate instead
// (NaN becomes 0).
template <typename I>
static I saturate(double v) {
  if (std::isnan(v)) return 0;
  if (v <= static_cast<double>(std::numeric_limits<I>::lowest())) return std::numeric_limits<I>::lowest();
  if (v >= static_cast<double>(std::numeric_limits<I>::max())) return std::numeric_limits<I>::max();
  return static_cast<I>(v);
}

void store_from_double(DType t, void* base, int64_t i, double v) {
  switch (t) {
    case DType::kF32: static_cast<float*>(base)[i] = static_cast<float>(v); return;
    case DType::kF64: static_cast<double*>(base)[i] = v; return;
    case DType::kF16: static_cast<uint16_t*>(base)[i] = float_to_half(static_cast<float>(v)); return;
    case DType::kBF16: static_cast<uint16_t*>(base)[i] = float_to_bf16(static_cast<float>(v)); return;
    case DType::kI8: static_cast<int8_t*>(base)[i] = saturate<int8_t>(v); return;
    case DType::kU8: static_cast<uint8_t*>(base)[i] = saturate<uint8_t>(v); return;
    case DType::kI16: static_cast<int16_t*>(base)[i] = saturate<int16_t>(v); return;
    case DType::kU16: static_cast<uint16_t*>(base)[i] = saturate<uint16_t>(v); return;
    case DType::kI32: static_cast<int32_t*>(base)[i] = saturate<int32_t>(v); return;
    case DType::kU32: static_cast<uint32_t*>(base)[i] = saturate<uint32_t>(v); return;
    case DType::kI64: static_cast<int64_t*>(base)[i] = saturate<int64_t>(v); return;
    case DType::kU64: static_cast<uint64_t*>(base)[i] = saturate<uint64_t>(v); return;
    case DType::kBool: static_cast<bool*>(base)[i] = v != 0.0; return;
    case DType::kUndefined: return;
  }
}

}  // namespace nfuse::ir
