// The range of an f32 array, as DynamicQuantizeLinear needs it before it can quantize:
//
//   *lo = min(*lo, every non-NaN x[i]),  *hi = max(*hi, every non-NaN x[i])
//
// NaNs are skipped (the comparison with them is false), so the result is the same in any order
// of evaluation, which lets the kernels keep several accumulators and callers split the array
// across threads. The caller seeds *lo and *hi (DynamicQuantizeLinear: both 0).
//
// Kernels: scalar (the oracle), AVX2 (32 per step), AVX-512 (64 per step, masked tail); no
// allocation, no reads past n. A single-accumulator loop carries its min's latency on every
// element (about 3 cycles each, not vectorized by GCC without -ffast-math): on a MobileNetV2
// layer's 1.2M-value input that was most of the dynamically quantized conv's time.
#pragma once

#include <cstddef>

#include "kernels/cpu_features.h"

namespace nfuse::kernels {

using F32MinMaxFn = void (*)(const float* x, size_t n, float* lo, float* hi);

void f32_rminmax__scalar(const float* x, size_t n, float* lo, float* hi);
#if defined(__x86_64__)
void f32_rminmax__avx2(const float* x, size_t n, float* lo, float* hi);
void f32_rminmax__avx512(const float* x, size_t n, float* lo, float* hi);
#endif

// The kernel for `isa` (scalar where it has none). Never null.
F32MinMaxFn f32_rminmax_select(Isa isa);

}  // namespace nfuse::kernels
