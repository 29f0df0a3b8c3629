// IEEE half <-> float conversion of a flat array: the kernels under Cast between float16 and
// float32 on the cpu backend (an FP16 model's graph-edge Casts, which ran on the reference kernel
// at a fifth of the model's time).
//
//   f16_f32_vcvt: y = float(x)   exact (every half is a float), subnormals included
//   f32_f16_vcvt: y = half(x)    round to nearest, ties to even, subnormal halves kept,
//                                overflow to +-inf
// Both agree bit for bit with ir::half_to_float / ir::float_to_half (the reference Cast) except
// for the payload of a NaN, which stays a quiet NaN of the same sign.
//   __scalar   portable C++
//   __f16c     x86-64 F16C (vcvtph2ps / vcvtps2ph), 8 lanes per step; selected with AVX2 when
//              the CPU reports F16C
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/cpu_features.h"

namespace nfuse::kernels {

using F16F32VcvtFn = void (*)(const uint16_t* x, float* y, size_t n);
using F32F16VcvtFn = void (*)(const float* x, uint16_t* y, size_t n);

void f16_f32_vcvt__scalar(const uint16_t* x, float* y, size_t n);
void f32_f16_vcvt__scalar(const float* x, uint16_t* y, size_t n);
#if defined(__x86_64__)
void f16_f32_vcvt__f16c(const uint16_t* x, float* y, size_t n);
void f32_f16_vcvt__f16c(const float* x, uint16_t* y, size_t n);
#endif

struct F16VcvtConfig {
  F16F32VcvtFn to_f32 = nullptr;
  F32F16VcvtFn to_f16 = nullptr;
};

// The kernels for `isa` (scalar where `isa` has none, or the CPU lacks F16C); never null members.
const F16VcvtConfig& f16_vcvt_config(Isa isa);

}  // namespace nfuse::kernels
