// Element types of the IR, their sizes and names, and half/bfloat16 conversion.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace nfuse::ir {

enum class DType : uint8_t {
  kUndefined = 0,
  kF32,
  kF16,
  kBF16,
  kF64,
  kI8,
  kU8,
  kI16,
  kU16,
  kI32,
  kU32,
  kI64,
  kU64,
  kBool,
};

size_t dtype_size(DType t);
std::string_view dtype_name(DType t);  // "f32", "i64", ...
bool dtype_is_float(DType t);          // f32, f16, bf16, f64
bool dtype_is_integer(DType t);        // signed or unsigned, not bool
bool dtype_is_signed(DType t);

// IEEE binary16 <-> binary32, round to nearest even; NaN and Inf preserved.
float half_to_float(uint16_t h);
uint16_t float_to_half(float f);
// bfloat16 <-> binary32, round to nearest even.
inline float bf16_to_float(uint16_t b) {
  uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
uint16_t float_to_bf16(float f);

// Storage types for 16-bit floats, distinct so templates can tell them apart.
struct Half {
  uint16_t bits;
};
struct BFloat16 {
  uint16_t bits;
};

template <typename T>
struct DTypeOf;
template <> struct DTypeOf<float> { static constexpr DType value = DType::kF32; };
template <> struct DTypeOf<double> { static constexpr DType value = DType::kF64; };
template <> struct DTypeOf<Half> { static constexpr DType value = DType::kF16; };
template <> struct DTypeOf<BFloat16> { static constexpr DType value = DType::kBF16; };
template <> struct DTypeOf<int8_t> { static constexpr DType value = DType::kI8; };
template <> struct DTypeOf<uint8_t> { static constexpr DType value = DType::kU8; };
template <> struct DTypeOf<int16_t> { static constexpr DType value = DType::kI16; };
template <> struct DTypeOf<uint16_t> { static constexpr DType value = DType::kU16; };
template <> struct DTypeOf<int32_t> { static constexpr DType value = DType::kI32; };
template <> struct DTypeOf<uint32_t> { static constexpr DType value = DType::kU32; };
template <> struct DTypeOf<int64_t> { static constexpr DType value = DType::kI64; };
template <> struct DTypeOf<uint64_t> { static constexpr DType value = DType::kU64; };
template <> struct DTypeOf<bool> { static constexpr DType value = DType::kBool; };

// Calls fn.template operator()<T>() with the C++ type of `t` (Half/BFloat16 for 16-bit floats).
// Returns false when t is kUndefined.
template <typename Fn>
bool visit_dtype(DType t, Fn&& fn) {
  switch (t) {
    case DType::kF32: fn.template operator()<float>(); return true;
    case DType::kF64: fn.template operator()<double>(); return true;
    case DType::kF16: fn.template operator()<Half>(); return true;
    case DType::kBF16: fn.template operator()<BFloat16>(); return true;
    case DType::kI8: fn.template operator()<int8_t>(); return true;
    case DType::kU8: fn.template operator()<uint8_t>(); return true;
    case DType::kI16: fn.template operator()<int16_t>(); return true;
    case DType::kU16: fn.template operator()<uint16_t>(); return true;
    case DType::kI32: fn.template operator()<int32_t>(); return true;
    case DType::kU32: fn.template operator()<uint32_t>(); return true;
    case DType::kI64: fn.template operator()<int64_t>(); return true;
    case DType::kU64: fn.template operator()<uint64_t>(); return true;
    case DType::kBool: fn.template operator()<bool>(); return true;
    case DType::kUndefined: return false;
  }
  return false;
}

// Element load/store through double, for generic (slow, exact enough) reference code.
// Every integer type up to 2^53 and every float type round-trips exactly.
double load_as_double(DType t, const void* base, int64_t index);
void store_from_double(DType t, void* base, int64_t index, double v);

}  // namespace nfuse::ir
