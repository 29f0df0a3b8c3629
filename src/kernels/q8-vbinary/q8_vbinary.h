// Quantized 8-bit element-wise Add and Mul over flat arrays: the kernels under the com.microsoft
// QLinearAdd / QLinearMul ops on the cpu backend (backends/cpu/cpu_qlinear_binary.cpp). The
// arithmetic is the one kernels/quant_arithmetic.h defines, bit for bit on every ISA:
//
//   add: y = sat(round_half_even(fma(f32(a - a_zp), a_mult, f32(b - b_zp) * b_mult)) + y_zp)
//   mul: y = sat(round_half_even(f32((a - a_zp) * (b - b_zp)) * a_mult) + y_zp)
//
// The f32 value is clamped to [qmin - y_zp, qmax - y_zp] before it is rounded (equal to rounding
// first: the bounds are integers and rounding is monotone), so the conversion to int32 never
// overflows. Rounding is the vector convert's round-to-nearest-even (MXCSR / FPCR default, which
// nfuse never changes) and std::nearbyint in scalar code. Multipliers must be finite (callers
// check; with an infinite one 0 * inf would be NaN, which ref maps to y_zp).
//
//   <q>_v<op>   y[i] = a[i] op b[i]       (same shape)
//   <q>_v<op>c  y[i] = a[i] op b[0]       (b a scalar; for a scalar a, swap operands and params:
//                                          both ops are symmetric in (a, a_zp, a_mult) <-> (b, ...)
//                                          except add's fma, so the caller passes `swapped`)
//
// `a`/`b` and `y` may be the same array; n may be 0. Microkernels (hot code: no allocation):
//   __scalar   portable C++, one element at a time
//   __avx2     x86-64 AVX2 + FMA3, 32 elements per step (4 x 8 f32 lanes), scalar tail
//   __avx512   x86-64 AVX-512F, 64 elements per step (4 x 16 lanes), scalar tail
//   __neon     aarch64 Advanced SIMD, 16 elements per step (4 x 4 lanes), scalar tail
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "kernels/cpu_features.h"

namespace nfuse::kernels {

struct Q8VbinaryParams {
  int32_t a_zp = 0, b_zp = 0, y_zp = 0;
  float a_mult = 1.0f;  // add: a_scale / y_scale; mul: (a_scale * b_scale) / y_scale
  float b_mult = 1.0f;  // add: b_scale / y_scale; mul: unused
  // addc with a scalar first operand: y = fma(f32(b[0] - b_zp), b_mult, f32(a[i] - a_zp) * a_mult)
  // is not ref's order, so `swapped` says the scalar `b` is really ref's A (fma on b's term).
  bool swapped = false;
};

template <typename T>
using Q8VbinaryFn = void (*)(const T* a, const T* b, T* y, size_t n, const Q8VbinaryParams& p);

#define NFUSE_Q8_VBINARY_DECLARE(isa)                                                               \
  void qu8_vadd__##isa(const uint8_t* a, const uint8_t* b, uint8_t* y, size_t n, const Q8VbinaryParams& p);  \
  void qu8_vaddc__##isa(const uint8_t* a, const uint8_t* b, uint8_t* y, size_t n, const Q8VbinaryParams& p); \
  void qu8_vmul__##isa(const uint8_t* a, const uint8_t* b, uint8_t* y, size_t n, const Q8VbinaryParams& p);  \
  void qu8_vmulc__##isa(const uint8_t* a, const uint8_t* b, uint8_t* y, size_t n, const Q8VbinaryParams& p); \
  void qs8_vadd__##isa(const int8_t* a, const int8_t* b, int8_t* y, size_t n, const Q8VbinaryParams& p);     \
  void qs8_vaddc__##isa(const int8_t* a, const int8_t* b, int8_t* y, size_t n, const Q8VbinaryParams& p);    \
  void qs8_vmul__##isa(const int8_t* a, const int8_t* b, int8_t* y, size_t n, const Q8VbinaryParams& p);     \
  void qs8_vmulc__##isa(const int8_t* a, const int8_t* b, int8_t* y, size_t n, const Q8VbinaryParams& p);

NFUSE_Q8_VBINARY_DECLARE(scalar)
#if defined(__x86_64__)
NFUSE_Q8_VBINARY_DECLARE(avx2)
NFUSE_Q8_VBINARY_DECLARE(avx512)
#endif
#if defined(__aarch64__)
NFUSE_Q8_VBINARY_DECLARE(neon)
#endif

template <typename T>
struct Q8VbinaryConfig {
  Q8VbinaryFn<T> add = nullptr, addc = nullptr, mul = nullptr, mulc = nullptr;
};

// The kernels for `isa` (scalar where `isa` has none compiled in); never null members.
const Q8VbinaryConfig<uint8_t>& qu8_vbinary_config(Isa isa);
const Q8VbinaryConfig<int8_t>& qs8_vbinary_config(Isa isa);

// One element, as every variant computes it (the scalar kernels and the vector kernels' tails).
template <typename T, bool kMul, bool kConstB>
inline T q8_vbinary_one(T a, T b, const Q8VbinaryParams& p) {
  const int32_t ac = static_cast<int32_t>(a) - p.a_zp;
  const int32_t bc = static_cast<int32_t>(b) - p.b_zp;
  float v;
  if constexpr (kMul) {
    v = static_cast<float>(ac * bc) * p.a_mult;
  } else if (kConstB && p.swapped) {
    v = std::fma(static_cast<float>(bc), p.b_mult, static_cast<float>(ac) * p.a_mult);
  } else {
    v = std::fma(static_cast<float>(ac), p.a_mult, static_cast<float>(bc) * p.b_mult);
  }
  const float lo = static_cast<float>(std::numeric_limits<T>::lowest() - p.y_zp);
  const float hi = static_cast<float>(std::numeric_limits<T>::max() - p.y_zp);
  v = v < lo ? lo : (v > hi ? hi : v);
  return static_cast<T>(static_cast<int32_t>(std::nearbyint(v)) + p.y_zp);
}


}  // namespace nfuse::kernels
