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

}  // namespace nfuse::test
