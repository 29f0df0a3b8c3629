// Every numeric tolerance the tests use, in one place (STYLE.md, "Tests"). Change a bound here,
// with the reason, rather than loosening it inside one test.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace nfuse::test {

// f32 element-wise kernels against the reference: |y - ref| <= kF32ElementwiseRel * (|ref| + 1).
inline constexpr double kF32ElementwiseRel = 1e-6;
inline double f32_elementwise_tol(double ref) { return kF32ElementwiseRel * (std::fabs(ref) + 1.0); }

// f32 dot products (Conv, Gemm, MatMul) accumulate rounding over K terms; the bound grows with
// sqrt(K) from the element-wise one.
inline double f32_dot_tol(double ref, int64_t k) {
  return f32_elementwise_tol(ref) * std::sqrt(static_cast<double>(std::max<int64_t>(k, 1)));
}

// Whole models (tests/models) against PyTorch's float32 output: the outputs must point the same
// way (cosine similarity) and no element may be off by more than kModelMaxAbsRel times the
// output's scale (its largest magnitude, at least 1). Different accumulation orders over deep
// networks stay far inside both (ONNX Runtime vs PyTorch on the zoo: cos 1 - 1e-9, max error
// at most 0.25x the bound).
inline constexpr double kModelCosineMin = 0.99999;
inline constexpr double kModelMaxAbsRel = 1e-4;
inline double model_max_abs_tol(double golden_max_abs) { return kModelMaxAbsRel * std::max(1.0, golden_max_abs); }

// A graph before and after a rewrite pass (tests/unit/*pass*_test.cpp), both on the ref backend:
// folding BatchNorm into weights and fusing epilogues reorder a few roundings per element,
// nothing that grows with depth: |after - before| <= kPassRewriteRel * (|before| + 1).
inline constexpr double kPassRewriteRel = 1e-5;

}  // namespace nfuse::test
