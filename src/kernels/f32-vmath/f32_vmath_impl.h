// The f32-vmath loops (f32_vmath.h), included once per ISA by f32_vmath_{scalar,avx2,avx512}.cpp
// inside a namespace of its own, so each ISA gets its own vectorised copy: one scalar function
// per op, branch-free (selects the compilers turn into compares and blends), mapped over the
// array by a plain loop (Gelu by blocks of passes, see gelu_blocks).
#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "kernels/f32-vmath/f32_vmath.h"
#include "kernels/f32-vunary/f32_vunary_constants.h"

namespace nfuse::kernels::NFUSE_VMATH_ISA_NS {
namespace {

using namespace vunary;  // NOLINT(google-build-using-namespace): exp's constants, shared with f32-vunary

// exp(x) is subnormal below kExpLo (flushed to 0) and overflows above ~88.72; between 127.5 ln 2
// and there, 2^n needs n = 128, so the scale is built as 2^(n-1) and doubled.
inline constexpr float kExpLo = -0x1.5D589Ep+6f;  // ln(FLT_MIN)
inline constexpr float kExpHi = 89.0f;
inline constexpr float kLn2Hi = 0x1.62E400p-1f;  // -kMinusLn2Hi: low 12 bits zero
inline constexpr float kLn2Lo = 0x1.7F7D1Cp-20f;
inline constexpr float kInvSqrt2 = 0x1.6A09E6p-1f;
inline constexpr float kSqrt2OverPi = 0x1.988454p-1f;  // sqrt(2 / pi), Gelu's tanh form
inline constexpr float kGeluCubic = 0.044715f;
// scripts/fit_erfc.py: R(t), absolute, in the exponent: max error 2.42e-08
inline constexpr float kErfcR[] = {
    -0x1.43fc7p+0f,   // -1.265570671
    0x1.006aa6p+0f,   // 1.001627307
    0x1.6bd788p-2f,   // 0.3553143645
    0x1.c20d0cp-3f,   // 0.2197514475
    -0x1.5e9e0cp-1f,  // -0.6847995716
    0x1.96e98p+0f,    // 1.589500391
    -0x1.b42938p+1f,  // -3.40750801
    0x1.043274p+2f,   // 4.065579188
    -0x1.5480bep+1f,  // -2.66017884
    0x1.d64202p-1f,   // 0.9184723322
    -0x1.0eb88ap-3f,  // -0.132187914
};
// scripts/fit_erfc.py: P(x^2), relative: max error 4.62e-09
inline constexpr float kErfP[] = {
    0x1.20dd76p+0f,   // 1.128379166
    -0x1.81274p-2f,   // -0.3761262977
    0x1.ce2d7cp-4f,   // 0.1128363466
    -0x1.b80286p-6f,  // -0.02685607098
    0x1.54536ep-8f,   // 0.005192961074
    -0x1.a6401p-11f,  // -0.0008053784095
    0x1.4fd68p-14f,   // 8.00699957e-05
};

// c[0] + t (c[1] + t (c[2] + ...)), highest coefficient first in the evaluation (Horner).
template <size_t N>
inline float horner(float t, const float (&c)[N]) {
  float r = c[N - 1];
  for (size_t i = N - 1; i-- > 0;) r = r * t + c[i];
  return r;
}

// p(t) = 1 + t/2 + t^2/6 + ... (f32-vunary's Taylor constants): exp(t) = 1 + t p(t).
inline constexpr float kExpP[] = {1.0f, kP1, kP2, kP3, kP4, kP5, kP6};

inline float exp_value(float x) {
  float z = x < kExpLo ? kExpLo : x;
  z = z > kExpHi ? kExpHi : z;
  const float biased = z * kLog2e + kMagicBias;
  const float n = biased - kMagicBias;
  const uint32_t big = n > 127.0f ? 1u : 0u;
  const float s = std::bit_cast<float>((std::bit_cast<uint32_t>(biased) - big) << 23);
  float t = n * kMinusLn2Hi + z;
  t = n * kMinusLn2Lo + t;
  const float p = horner(t, kExpP);
  float e = (s * t) * p + s;
  e = big ? e * 2.0f : e;
  e = x < kExpLo ? 0.0f : e;
  return x != x ? x : e;
}

inline float log_value(float x) {
  const bool subnormal = x < FLT_MIN;  // also 0 and negatives, which the selects below replace
  const float xs = subnormal ? x * 0x1p23f : x;
  const uint32_t bits = std::bit_cast<uint32_t>(xs);
  const int32_t e = static_cast<int32_t>(bits - 0x3F3504F3u) >> 23;  // m = xs / 2^e in [sqrt(1/2), sqrt(2))
  const float m = std::bit_cast<float>(bits - (static_cast<uint32_t>(e) << 23));
  const float ef = static_cast<float>(e) - (subnormal ? 23.0f : 0.0f);
  const float f = m - 1.0f;
  const float s = f / (2.0f + f);
  const float s2 = s * s;
  // log(m) = 2 atanh(s) = 2s (1 + s^2/3 + s^4/5 + s^6/7 + s^8/9); |s| <= 0.1716, next term < 1e-9.
  constexpr float kOddSeries[] = {1.0f / 3.0f, 1.0f / 5.0f, 1.0f / 7.0f, 1.0f / 9.0f};
  const float q = horner(s2, kOddSeries);
  const float two_s = s + s;
  const float log_m = (two_s * s2) * q + two_s;
  float r = ef * kLn2Hi + (ef * kLn2Lo + log_m);
  r = x == INFINITY ? x : r;
  r = x == 0.0f ? -INFINITY : r;
  return x < 0.0f || x != x ? NAN : r;
}

// exp(x) for x <= 0, the exponent of erfc: exp_value less its overflow and NaN selects (a NaN
// propagates through the arithmetic), a quarter of Gelu's instructions fewer.
inline float exp_nonpositive(float x) {
  const float z = x < kExpLo ? kExpLo : x;
  const float biased = z * kLog2e + kMagicBias;
  const float n = biased - kMagicBias;
  const float s = std::bit_cast<float>(std::bit_cast<uint32_t>(biased) << 23);
  float t = n * kMinusLn2Hi + z;
  t = n * kMinusLn2Lo + t;
  const float p = horner(t, kExpP);
  const float e = (s * t) * p + s;
  return x < kExpLo ? 0.0f : e;
}

// erfc(z)'s exponent and t for z >= 0 (or NaN): erfc(z) = t exp(-z^2 + R(t)), t = 1 / (1 + z/2).
inline float erfc_exponent(float z, float t) { return horner(t, kErfcR) - z * z; }
inline float erfc_t(float z) { return 1.0f / (1.0f + 0.5f * z); }

inline float erfc_nonnegative(float z) {
  const float t = erfc_t(z);
  return t * exp_nonpositive(erfc_exponent(z, t));
}

inline float erf_value(float x) {
  const float a = std::fabs(x);
  const float x2 = x * x;
  const float p = horner(x2, kErfP);
  const float tail = std::copysign(1.0f - erfc_nonnegative(a), x);
  return a < 1.0f ? x * p : tail;
}

// x Phi(x) = x/2 erfc(-x / sqrt 2): from erfc(|x| / sqrt 2) on either side, so the negative
// side (a small fraction of x) keeps erfc's relative accuracy.
// x clamped to the finite range makes x/2 erfc = 0 (not inf * 0) at both infinities: gelu(-inf)
// = 0, gelu(inf) = inf.
inline float gelu_from_erfc(float x, float e) {
  const float half = 0.5f * std::clamp(x, -FLT_MAX, FLT_MAX) * e;
  return x < 0.0f ? half : x - half;
}

inline float gelu_value(float x) { return gelu_from_erfc(x, erfc_nonnegative(std::fabs(x) * kInvSqrt2)); }

// x (1 + tanh(u)) / 2 = x / (1 + exp(-2u)).
inline float gelu_tanh_value(float x) {
  const float u = kSqrt2OverPi * (x + kGeluCubic * (x * x * x));
  return x / (1.0f + exp_value(-2.0f * u));
}

inline float sqrt_value(float x) { return std::sqrt(x); }

template <float (*F)(float)>
void vmap(const float* x, float* y, size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] = F(x[i]);
}

// gelu_value over the array in three passes per block of kGeluBlock values (t and the exponent,
// exp, the product): each pass is a short loop of independent vectors, where gelu_value's single
// dependency chain (division, 11 FMAs of R, exp's 10 steps) keeps too few vectors in flight.
// Measured 1.5x faster than vmap<gelu_value> with AVX2 (bench/RESULTS.md); the same results.
inline constexpr size_t kGeluBlock = 64;
void gelu_blocks(const float* x, float* y, size_t n) {
  float t[kGeluBlock], a[kGeluBlock];
  for (size_t i0 = 0; i0 < n; i0 += kGeluBlock) {
    const size_t m = n - i0 < kGeluBlock ? n - i0 : kGeluBlock;
    const float* xb = x + i0;
    float* yb = y + i0;
    for (size_t i = 0; i < m; ++i) {
      const float z = std::fabs(xb[i]) * kInvSqrt2;
      t[i] = erfc_t(z);
      a[i] = erfc_exponent(z, t[i]);
    }
    for (size_t i = 0; i < m; ++i) a[i] = t[i] * exp_nonpositive(a[i]);
    for (size_t i = 0; i < m; ++i) yb[i] = gelu_from_erfc(xb[i], a[i]);
  }
}

}  // namespace

inline const F32VmathConfig& config() {
  static constexpr F32VmathConfig kConfig{vmap<exp_value>, vmap<log_value>, vmap<sqrt_value>,
                                          vmap<erf_value>, gelu_blocks,     vmap<gelu_tanh_value>};
  return kConfig;
}

}  // namespace nfuse::kernels::NFUSE_VMATH_ISA_NS
