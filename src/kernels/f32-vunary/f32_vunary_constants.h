// Constants shared by the f32-vunary kernels of every ISA (f32_vunary.h), so all variants run the
// same algorithm and agree to rounding.
#pragma once

namespace nfuse::kernels::vunary {

// round(z * log2(e)) by adding 1.5 * 2^23 + 127: the sum's low mantissa bits then hold n + 127,
// the biased exponent of 2^n, which a shift moves into place (no float->int conversion).
inline constexpr float kMagicBias = 0x1.8000FEp23f;
inline constexpr float kLog2e = 0x1.715476p+0f;
// ln(2) split in two (Cody-Waite): kLn2Hi has its low 12 bits zero, so n * kLn2Hi is exact for
// |n| <= 2^12 and t = z - n*ln2 keeps full precision.
inline constexpr float kMinusLn2Hi = -0x1.62E400p-1f;
inline constexpr float kMinusLn2Lo = -0x1.7F7D1Cp-20f;
// exp(t) = 1 + t * P(t) on |t| <= ln(2)/2 with P the Taylor series to degree 6 (exp to degree 7):
// truncation below 6e-9 relative, and P(0) = 1 exactly so expm1(t) = t * P(t) keeps relative
// accuracy as t -> 0 (tanh near 0).
inline constexpr float kP6 = 1.0f / 5040.0f;
inline constexpr float kP5 = 1.0f / 720.0f;
inline constexpr float kP4 = 1.0f / 120.0f;
inline constexpr float kP3 = 1.0f / 24.0f;
inline constexpr float kP2 = 1.0f / 6.0f;
inline constexpr float kP1 = 0.5f;
// Below this, exp(z) is subnormal (2^n would need n < -126): sigmoid flushes to 0 there.
inline constexpr float kSigmoidCutoff = -0x1.5D589Ep+6f;  // ~ -87.3365, ln(FLT_MIN)
// tanh(x) rounds to +-1 in float for |x| > 9.01; clamping z = -2|x| at -20 keeps 2^n in range.
inline constexpr float kTanhMinZ = -20.0f;

}  // namespace nfuse::kernels::vunary
