// FP32 elementwise exp-based activations over a flat array: the kernels under the Sigmoid, Tanh
// and SiLU ops and the fused Sigmoid / SiLU epilogue of Conv and Gemm on the cpu backend.
//
//   f32_vsigmoid: y[i] = 1 / (1 + exp(-x[i]))
//   f32_vtanh:    y[i] = tanh(x[i])
//   f32_vsilu:    y[i] = x[i] / (1 + exp(-x[i]))        (x * sigmoid(x), "Swish")
//
// All three share one exp: n = round(z * log2(e)), t = z - n*ln2 (two-constant Cody-Waite),
// exp(t) by a degree-5 minimax polynomial, scaled by 2^n built in the exponent bits. They only
// ever take exp of z = -|x| (sigmoid, SiLU) or -2|x| (tanh), so 2^n never overflows and results
// are rebuilt by symmetry; tanh uses expm1 (exact for n = 0) so it keeps relative accuracy near 0.
// Accuracy (tests/kernels/f32_vunary_test.cpp): within a few ulp over the whole float range;
// where exp(-|x|) would be subnormal (x < -87.34) sigmoid and SiLU flush to 0 (true results
// below FLT_MIN and 1.1e-36). NaN in gives NaN out; SiLU(-inf) is NaN, as x / (1 + exp(-x)).
//
// `x` and `y` may be the same array (in place) but must not otherwise overlap; n may be 0.
// Microkernels (hot code: no allocation, no checks):
//   f32_v<op>__scalar   portable C++, the same algorithm one lane at a time
//   f32_v<op>__avx2     x86-64 AVX2 + FMA3, 8 lanes per step, masked tail
//   f32_v<op>__avx512   x86-64 AVX-512F, 16 lanes per step, masked tail
#pragma once

#include <cstddef>

#include "kernels/cpu_features.h"

namespace nfuse::kernels {

using F32VunaryFn = void (*)(const float* x, float* y, size_t n);
// y[i] = x[i] * min(max(a * x[i] + b, 0), 1): HardSwish (a = 1/6, b = 1/2), the activation of
// MobileNetV3 and PP-LCNet, applied after a convolution it cannot fuse into. The same single
// rounding per step on every ISA (one FMA, clamp, one multiply), so all variants agree bit for bit.
using F32VhardswishFn = void (*)(const float* x, float* y, size_t n, float a, float b);
void f32_vhardswish__scalar(const float* x, float* y, size_t n, float a, float b);

void f32_vsigmoid__scalar(const float* x, float* y, size_t n);
void f32_vtanh__scalar(const float* x, float* y, size_t n);
void f32_vsilu__scalar(const float* x, float* y, size_t n);
#if defined(__x86_64__)
void f32_vsigmoid__avx2(const float* x, float* y, size_t n);
void f32_vtanh__avx2(const float* x, float* y, size_t n);
void f32_vsilu__avx2(const float* x, float* y, size_t n);
void f32_vsigmoid__avx512(const float* x, float* y, size_t n);
void f32_vtanh__avx512(const float* x, float* y, size_t n);
void f32_vsilu__avx512(const float* x, float* y, size_t n);
void f32_vhardswish__avx2(const float* x, float* y, size_t n, float a, float b);
void f32_vhardswish__avx512(const float* x, float* y, size_t n, float a, float b);
#endif

struct F32VunaryConfig {
  F32VunaryFn sigmoid = nullptr;
  F32VunaryFn tanh = nullptr;
  F32VunaryFn silu = nullptr;
  F32VhardswishFn hardswish = nullptr;
};

// The kernels for `isa` (scalar where `isa` has none compiled in); never null members.
const F32VunaryConfig& f32_vunary_config(Isa isa);

}  // namespace nfuse::kernels
