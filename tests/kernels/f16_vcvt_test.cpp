// Half <-> float conversion kernels (src/kernels/f16-vcvt) on every ISA this machine runs: every
// one of the 65,536 halves to float against an independent decode (ldexp of the fields), and
// float to half on every half's value, the exact midpoints between neighbouring halves (the
// ties, which must go to the even one), one float ulp either side of each midpoint, the
// overflow edge (65504, 65520), subnormals, inf, NaN and random bit patterns, each checked to
// be the correctly rounded half; both directions over lengths 0..40 with guards.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels/f16-vcvt/f16_vcvt.h"
#include "support/kernel_isas.h"

namespace nfuse::kernels {
namespace {

using test::available_isas;

bool half_is_nan(uint16_t h) { return (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0; }

// The value of half h, decoded field by field in double (NaN for NaNs).
double half_value(uint16_t h) {
  const int exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  const double sign = (h & 0x8000u) ? -1.0 : 1.0;
  if (exp == 0x1f) return mant ? std::numeric_limits<double>::quiet_NaN() : sign * INFINITY;
  if (exp == 0) return sign * std::ldexp(mant, -24);
  return sign * std::ldexp(1024 + mant, exp - 25);
}

// True when h is x rounded to the nearest half, ties to even, with overflow to inf at 65520.
bool correctly_rounded(float x, uint16_t h) {
  if (std::isnan(x)) return half_is_nan(h) && ((h & 0x8000u) != 0) == std::signbit(x);
  const double v = x;
  if (std::fabs(v) >= 65520.0) return h == (std::signbit(x) ? 0xfc00u : 0x7c00u);
  if (((h & 0x8000u) != 0) != std::signbit(x) || (h & 0x7c00u) == 0x7c00u) return false;
  const double got = half_value(h), err = std::fabs(v - got);
  for (int d : {-1, 1}) {  // the neighbours on the magnitude scale
    const int mag = (h & 0x7fff) + d;
    if (mag < 0 || mag > 0x7bff) continue;
    const double other = std::fabs(v - half_value(static_cast<uint16_t>((h & 0x8000u) | mag)));
    if (other < err || (other == err && (h & 1u))) return false;
  }
  return true;
}

std::vector<float> float_inputs() {
  std::vector<float> xs;
  for (uint32_t h = 0; h < 0x7c00u; ++h) {
    const double v = half_value(static_cast<uint16_t>(h)), next = half_value(static_cast<uint16_t>(h + 1));
    const float mid = static_cast<float>((v + next) / 2);  // exact: halves have 11 bits
    for (float f : {static_cast<float>(v), mid, std::nextafter(mid, 0.0f), std::nextafter(mid, INFINITY)}) {
      xs.push_back(f);
      xs.push_back(-f);
    }
  }
  const float inf = std::numeric_limits<float>::infinity();
  for (float f : {65504.0f, 65519.99f, 65520.0f, 1e10f, 3.4e38f, inf, 0x1p-25f, 0x1.8p-25f, 0x1p-26f, 0x1p-149f,
                  std::numeric_limits<float>::quiet_NaN()}) {
    xs.push_back(f);
    xs.push_back(-f);
  }
  std::mt19937 rng(20261202);
  std::uniform_int_distribution<uint32_t> bits;
  for (int i = 0; i < 100000; ++i) xs.push_back(std::bit_cast<float>(bits(rng)));
  return xs;
}

TEST(F16Vcvt, EveryHalfToFloatIsExact) {
  std::vector<uint16_t> hs(65536);
  for (uint32_t h = 0; h < 65536; ++h) hs[h] = static_cast<uint16_t>(h);
  for (Isa isa : available_isas()) {
    std::vector<float> y(hs.size());
    f16_vcvt_config(isa).to_f32(hs.data(), y.data(), hs.size());
    for (uint32_t h = 0; h < 65536; ++h) {
      const double want = half_value(static_cast<uint16_t>(h));
      if (std::isnan(want)) {
        ASSERT_TRUE(std::isnan(y[h])) << isa_name(isa) << " half 0x" << std::hex << h;
      } else {
        ASSERT_EQ(static_cast<double>(y[h]), want) << isa_name(isa) << " half 0x" << std::hex << h;
        ASSERT_EQ(std::signbit(y[h]), (h & 0x8000u) != 0) << isa_name(isa) << " half 0x" << std::hex << h;
      }
    }
  }
}

TEST(F16Vcvt, FloatToHalfRoundsToNearestEven) {
  const std::vector<float> xs = float_inputs();
  for (Isa isa : available_isas()) {
    std::vector<uint16_t> y(xs.size());
    f16_vcvt_config(isa).to_f16(xs.data(), y.data(), xs.size());
    int failures = 0;
    for (size_t i = 0; i < xs.size() && failures < 5; ++i) {
      if (correctly_rounded(xs[i], y[i])) continue;
      ++failures;
      ADD_FAILURE() << isa_name(isa) << " x=" << std::hexfloat << xs[i] << " -> half 0x" << std::hex << y[i];
    }
  }
}

TEST(F16Vcvt, EveryLengthWithGuards) {
  constexpr size_t kGuard = 9;
  for (Isa isa : available_isas()) {
    const F16VcvtConfig& c = f16_vcvt_config(isa);
    for (size_t n = 0; n <= 40; ++n) {
      std::vector<float> x(n), back(n + 2 * kGuard, -5.0f);
      for (size_t i = 0; i < n; ++i) x[i] = static_cast<float>(i) * 0.37f - 3.0f;
      std::vector<uint16_t> h(n + 2 * kGuard, 0xabcd);
      c.to_f16(x.data(), h.data() + kGuard, n);
      c.to_f32(h.data() + kGuard, back.data() + kGuard, n);
      for (size_t g = 0; g < kGuard; ++g) {
        ASSERT_EQ(h[g], 0xabcd) << isa_name(isa) << " n=" << n;
        ASSERT_EQ(h[kGuard + n + g], 0xabcd) << isa_name(isa) << " n=" << n;
        ASSERT_EQ(back[g], -5.0f) << isa_name(isa) << " n=" << n;
        ASSERT_EQ(back[kGuard + n + g], -5.0f) << isa_name(isa) << " n=" << n;
      }
      for (size_t i = 0; i < n; ++i) ASSERT_NEAR(back[kGuard + i], x[i], 4e-3) << isa_name(isa) << " n=" << n;
    }
  }
}

}  // namespace
}  // namespace nfuse::kernels
