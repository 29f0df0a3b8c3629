// FP32 elementwise math over a flat array: the kernels under Exp, Log, Sqrt, Erf and Gelu on the
// cpu backend (the long tail of transformer and audio models, whose GELU FFNs and log-mel
// front-ends ran on the reference kernels).
//
//   f32_vexp:   y = exp(x)   Cody-Waite reduction and a degree-7 Taylor polynomial (the exp of
//                            f32-vunary) over the whole float range: inf above 88.72, 0 where
//                            exp(x) would be subnormal (x < -87.34)
//   f32_vlog:   y = log(x)   x = m * 2^e with m in [sqrt(1/2), sqrt(2)), log(m) = 2 atanh(f / (2 + f))
//                            as an odd series; subnormals rescaled; log(0) = -inf, log(<0) = NaN
//   f32_vsqrt:  y = sqrt(x)  the ISA's correctly rounded square root
//   f32_verf:   y = erf(x)   x * P(x^2) on |x| < 1 (relative accuracy at 0), 1 - erfc(|x|) above
//   f32_vgelu:  y = x * Phi(x) = x/2 erfc(-x/sqrt 2)   (Gelu, approximate = "none")
//   f32_vgelu_tanh: y = x / (1 + exp(-2u)), u = sqrt(2/pi) (x + 0.044715 x^3)  (= tanh form)
// erfc(z) for z >= 0 is t exp(-z^2 + R(t)) with t = 1 / (1 + z/2) and R a degree-10 polynomial
// least-squares fitted to log(erfc(z) / t) + z^2 on z in [0, 10] (scripts/fit_erfc.py prints
// it), so erfc keeps relative accuracy in its tail, where Gelu of a negative input lives.
// Accuracy (tests/kernels/f32_vmath_test.cpp, against double-precision libm): a few ulp, erf and
// Gelu within ~1e-6 relative; NaN in gives NaN out.
//
// The loops are plain C++ written for auto-vectorisation (selects, no branches), compiled once per
// ISA from f32_vmath_impl.h; every variant runs the same operation sequence, so all agree to the
// FMA contraction the compiler chooses. `x` and `y` may be the same array; n may be 0.
#pragma once

#include <cstddef>

#include "kernels/cpu_features.h"

namespace nfuse::kernels {

using F32VmathFn = void (*)(const float* x, float* y, size_t n);

struct F32VmathConfig {
  F32VmathFn exp = nullptr;
  F32VmathFn log = nullptr;
  F32VmathFn sqrt = nullptr;
  F32VmathFn erf = nullptr;
  F32VmathFn gelu = nullptr;
  F32VmathFn gelu_tanh = nullptr;
};

const F32VmathConfig& f32_vmath_config__scalar();
#if defined(__x86_64__)
const F32VmathConfig& f32_vmath_config__avx2();
const F32VmathConfig& f32_vmath_config__avx512();
#endif

// The kernels for `isa` (scalar where `isa` has none compiled in); never null members.
const F32VmathConfig& f32_vmath_config(Isa isa);

}  // namespace nfuse::kernels
