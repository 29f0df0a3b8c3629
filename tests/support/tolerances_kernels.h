// Tolerances of the kernel tests (tests/kernels) against their double-precision references, in
// one place (STYLE.md, "Tests"). Change a bound here, with the reason, never inside one test.
#pragma once

#include <cmath>
#include <cstddef>

namespace nfuse::test {

// f32 GEMM and other dot-product kernels vs a double reference: every output sums K products in
// a kernel-specific order (blocked, FMA-contracted), so rounding grows like sqrt(K) random-walk
// steps of float epsilon (~6e-8) times the magnitude; 1e-5 leaves a wide margin while still
// catching a single dropped or doubled term (which is off by ~|a*b|, i.e. O(1) here).
inline constexpr double kF32DotRel = 1e-5;
inline double f32_gemm_tol(double ref, size_t k) {
  return kF32DotRel * std::sqrt(static_cast<double>(k > 0 ? k : 1)) * (std::fabs(ref) + 1.0);
}

// f32 exp-based activations (f32-vunary: sigmoid, tanh, SiLU) vs double std::exp / std::tanh:
// a range-reduced exp with a degree-7 polynomial and one division, a few ulp in all (~1.2e-7
// per ulp), so 1e-6 relative is the STYLE.md elementwise bound with margin, applied relative
// because these functions go to 0 (sigmoid(-x), tanh and SiLU near 0) where an absolute bound
// would hide a lost mantissa. The absolute floor covers results the kernels flush to 0 because
// exp(-|x|) would be subnormal: sigmoid(x) < FLT_MIN, SiLU(x) = x*sigmoid(x) < 88 * FLT_MIN.
inline constexpr double kF32VunaryRel = 1e-6;
inline constexpr double kF32VunaryAbs = 0x1p-119;  // 128 * FLT_MIN
inline double f32_vunary_tol(double ref) { return kF32VunaryRel * std::fabs(ref) + kF32VunaryAbs; }

// Winograd F(4,3) vs a direct convolution in double: the transforms multiply values by up to 8
// (A^T) and 4-5 (B^T) and then cancel, and the transformed weights (G g G^T) round each of the
// 36 positions, so the error is that of a dot product over K = 9 * Ci terms scaled up by the
// transforms' norms: F(4,3) is known to lose about one to two decimal digits against direct
// convolution in fp32 (Lavin & Gray 2016, section 5; Barabasz et al. 2020). 1e-4 relative per
// sqrt(K) is 10x the GEMM bound and still fails a dropped or doubled term (an O(1) error).
inline constexpr double kF32Wino43Rel = 1e-4;
inline double f32_wino43_tol(double ref, size_t k) {
  return kF32Wino43Rel * std::sqrt(static_cast<double>(k > 0 ? k : 1)) * (std::fabs(ref) + 1.0);
}

// A chain of f32 layers (a fused group against ref): each layer's rounding (a dot product's, as
// above) is carried into the next one's inputs, so the error is bounded against the output's
// scale rather than per element; 1e-4 of the largest magnitude still fails a dropped or doubled
// term or a wrong row, which move an output by a sizeable fraction of that scale.
inline constexpr double kF32ChainRel = 1e-4;
inline double f32_chain_tol(double max_abs_ref) { return kF32ChainRel * (max_abs_ref + 1.0); }

}  // namespace nfuse::test
