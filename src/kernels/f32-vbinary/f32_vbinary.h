// FP32 element-wise Add / Sub / Mul / Div / Max / Min over flat arrays: the kernels under the cpu backend's
// binary ops (same shape, per-channel and scalar broadcasts) and the fusion backend's
// element-wise members, which apply them to rows still in L2 where the ISA's vector width, not
// memory, sets the pace.
//
//   f32_v<op>:   y[i] = a[i] op b[i]
//   f32_v<op>c:  y[i] = a[i] op b        (b one value)
//   f32_vr<op>c: y[i] = b op a[i]        (Add and Mul commute; Max and Min do too, except for
//                                         which zero of +0 / -0 they return)
// Max and Min are those of the reference kernels: NaN when either operand is NaN (as numpy and
// ONNX Runtime), otherwise std::max(a, b) / std::min(a, b) (the first operand on ties).
//   f32_vaffine: y[i] = x[i] * s + t     (one multiply, one add, each rounded: no FMA, so every
//                                         ISA gives the bits of a Mul followed by an Add)
//
// Every op is one IEEE operation per element, so all ISAs agree bit for bit. `y` may be the same
// array as an input (in place) but must not otherwise overlap; n may be 0.
// Microkernels (hot code: no allocation, no checks): one source (f32_vbinary_impl.h) compiled
//   __scalar   portable C++ (NEON-vectorised by the compiler on arm64)
//   __avx2     x86-64 AVX2
//   __avx512   x86-64 AVX-512F
#pragma once

#include <cstddef>

#include "kernels/cpu_features.h"

namespace nfuse::kernels {

enum class F32BinaryOp { kAdd = 0, kSub = 1, kMul = 2, kDiv = 3, kMax = 4, kMin = 5 };
inline constexpr size_t kF32BinaryOps = 6;

using F32VbinaryFn = void (*)(const float* a, const float* b, float* y, size_t n);
using F32VbinarycFn = void (*)(const float* a, float b, float* y, size_t n);
using F32VaffineFn = void (*)(const float* x, float s, float t, float* y, size_t n);

struct F32VbinaryConfig {
  F32VbinaryFn op[kF32BinaryOps] = {};    // a op b, by F32BinaryOp
  F32VbinarycFn opc[kF32BinaryOps] = {};  // a op scalar
  F32VbinarycFn ropc[kF32BinaryOps] = {}; // scalar op a
  F32VaffineFn affine = nullptr;
};

// The kernels for `isa` (scalar where `isa` has none compiled in); never null members.
const F32VbinaryConfig& f32_vbinary_config(Isa isa);

// Per ISA, for the tests.
const F32VbinaryConfig& f32_vbinary_config__scalar();
#if defined(__x86_64__)
const F32VbinaryConfig& f32_vbinary_config__avx2();
const F32VbinaryConfig& f32_vbinary_config__avx512();
#endif

}  // namespace nfuse::kernels
