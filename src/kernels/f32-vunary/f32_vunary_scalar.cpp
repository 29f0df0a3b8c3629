// Portable f32-vunary kernels and the per-ISA selection (f32_vunary.h). The same algorithm as
// the vector kernels, one lane at a time.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>

#include "kernels/f32-vunary/f32_vunary.h"
#include "kernels/f32-vunary/f32_vunary_constants.h"

namespace nfuse::kernels {
namespace {

using namespace vunary;  // NOLINT(google-build-using-namespace): the constants of this family

struct ExpParts {
  float s;   // 2^n
  float t;   // z - n*ln2
  float p;   // P(t): exp(z) = s + (s*t)*p
};

// z must lie in [kSigmoidCutoff, 0] (or be NaN, which propagates through t).
inline ExpParts exp_parts(float z) {
  float n = z * kLog2e + kMagicBias;
  const float s = std::bit_cast<float>(std::bit_cast<uint32_t>(n) << 23);
  n -= kMagicBias;
  float t = n * kMinusLn2Hi + z;
  t = n * kMinusLn2Lo + t;
  float p = kP6 * t + kP5;
  p = p * t + kP4;
  p = p * t + kP3;
  p = p * t + kP2;
  p = p * t + kP1;
  p = p * t + 1.0f;
  return {s, t, p};
}

inline float sigmoid1(float x) {
  const float z = -std::bit_cast<float>(std::bit_cast<uint32_t>(x) & 0x7FFFFFFFu);
  const bool flush = z < kSigmoidCutoff;
  const ExpParts e = exp_parts(flush ? kSigmoidCutoff : z);
  const float ez = (e.s * e.t) * e.p + e.s;
  float f = ez / (ez + 1.0f);
  if (flush) f = 0.0f;
  return x > 0.0f ? 1.0f - f : f;
}

inline float tanh1(float x) {
  const uint32_t bits = std::bit_cast<uint32_t>(x);
  float z = -2.0f * std::bit_cast<float>(bits & 0x7FFFFFFFu);
  z = z < kTanhMinZ ? kTanhMinZ : z;
  const ExpParts e = exp_parts(z);
  const float em1 = (e.s * e.t) * e.p + (e.s - 1.0f);  // exp(z) - 1, exact-ish for small |z|
  const float m = -em1 / (em1 + 2.0f);
  return std::bit_cast<float>((std::bit_cast<uint32_t>(m) & 0x7FFFFFFFu) | (bits & 0x80000000u));
}

}  // namespace

void f32_vsigmoid__scalar(const float* x, float* y, size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] = sigmoid1(x[i]);
}

void f32_vtanh__scalar(const float* x, float* y, size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] = tanh1(x[i]);
}

void f32_vsilu__scalar(const float* x, float* y, size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] = x[i] * sigmoid1(x[i]);
}

void f32_vhardswish__scalar(const float* x, float* y, size_t n, float a, float b) {
  for (size_t i = 0; i < n; ++i) {
    const float g = std::fma(a, x[i], b);
    y[i] = x[i] * std::min(std::max(g, 0.0f), 1.0f);
  }
}

const F32VunaryConfig& f32_vunary_config(Isa isa) {
  static constexpr F32VunaryConfig kScalar{f32_vsigmoid__scalar, f32_vtanh__scalar, f32_vsilu__scalar,
                                           f32_vhardswish__scalar};
#if defined(__x86_64__)
#if defined(NFUSE_HAVE_AVX512_KERNELS)
  static constexpr F32VunaryConfig kAvx512{f32_vsigmoid__avx512, f32_vtanh__avx512, f32_vsilu__avx512,
                                           f32_vhardswish__avx512};
  if (isa == Isa::kAvx512) return kAvx512;
#endif
  static constexpr F32VunaryConfig kAvx2{f32_vsigmoid__avx2, f32_vtanh__avx2, f32_vsilu__avx2,
                                         f32_vhardswish__avx2};
  if (isa == Isa::kAvx2Fma || isa == Isa::kAvx512) return kAvx2;
#else
  (void)isa;
#endif
  return kScalar;
}

}  // namespace nfuse::kernels
