// FP32 exp-based activation kernels (src/kernels/f32-vunary) against double-precision std::exp /
// std::tanh, on every ISA this machine runs (scalar always): a dense sweep of [-20, 20] in 2^-10
// steps, the extremes (+-0, subnormals, the exp underflow edge near +-88, huge values, +-inf,
// NaN), random bit patterns over the whole float range and every length 1..67 with guard values
// on both sides of the output to catch tail overruns, and in place. Prints the worst error seen
// in ulp of the float result.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu_features.h"
#include "support/kernel_isas.h"
#include "kernels/f32-vunary/f32_vunary.h"
#include "support/tolerances_kernels.h"

namespace nfuse::kernels {
namespace {

constexpr uint32_t kSeed = 20261129;
constexpr float kGuard = -7.75e33f;  // never produced by any of the three functions
constexpr size_t kGuardCount = 17;
constexpr float kInf = std::numeric_limits<float>::infinity();

using test::available_isas;

enum class Fn { kSigmoid, kTanh, kSilu };
constexpr Fn kFns[] = {Fn::kSigmoid, Fn::kTanh, Fn::kSilu};

const char* fn_name(Fn f) { return f == Fn::kSigmoid ? "sigmoid" : f == Fn::kTanh ? "tanh" : "silu"; }

F32VunaryFn kernel(Isa isa, Fn f) {
  const F32VunaryConfig& c = f32_vunary_config(isa);
  return f == Fn::kSigmoid ? c.sigmoid : f == Fn::kTanh ? c.tanh : c.silu;
}

double reference(Fn f, float xf) {
  const double x = xf;
  switch (f) {
    case Fn::kSigmoid: return 1.0 / (1.0 + std::exp(-x));
    case Fn::kTanh: return std::tanh(x);
    case Fn::kSilu: return x / (1.0 + std::exp(-x));
  }
  return 0.0;
}

// |y - ref| in units of the float spacing at ref.
double ulp_error(float y, double ref) {
  const float rf = static_cast<float>(ref);
  const float a = std::fabs(rf);
  const double ulp = a >= std::numeric_limits<float>::max()
                         ? 0x1p104
                         : static_cast<double>(std::nextafter(a, kInf) - a);
  return std::fabs(static_cast<double>(y) - ref) / ulp;
}

struct Worst {
  double ulp = 0.0;
  float x = 0.0f;
};

// Runs the kernel on xs and checks every output (reporting at most five mismatches) and the guards.
void check(Isa isa, Fn f, const std::vector<float>& xs, Worst& worst) {
  SCOPED_TRACE(std::string("isa=") + isa_name(isa) + " fn=" + fn_name(f) + " seed=" + std::to_string(kSeed));
  std::vector<float> y(xs.size() + 2 * kGuardCount, kGuard);
  kernel(isa, f)(xs.data(), y.data() + kGuardCount, xs.size());
  int failures = 0;
  for (size_t i = 0; i < xs.size() && failures < 5; ++i) {
    const float got = y[kGuardCount + i];
    const double ref = reference(f, xs[i]);
    bool ok;
    if (std::isnan(ref)) {
      ok = std::isnan(got);
    } else if (std::isinf(ref)) {
      ok = static_cast<double>(got) == ref;
    } else {
      ok = std::fabs(static_cast<double>(got) - ref) <= test::f32_vunary_tol(ref);
      if (std::fabs(ref) > test::kF32VunaryAbs) {  // below: flushed by design, see the header
        const double u = ulp_error(got, ref);
        if (u > worst.ulp) worst = {u, xs[i]};
      }
    }
    if (!ok) {
      ++failures;
      ADD_FAILURE() << "index " << i << " x=" << std::hexfloat << xs[i] << " got=" << got << " ref=" << ref
                    << std::defaultfloat << " (" << xs[i] << " -> " << got << " vs " << ref << ")";
    }
  }
  for (size_t g = 0; g < kGuardCount; ++g) {
    ASSERT_EQ(y[g], kGuard) << "write before y[0]";
    ASSERT_EQ(y[kGuardCount + xs.size() + g], kGuard) << "write past y[n-1], n=" << xs.size();
  }
}

std::vector<float> sweep_inputs() {
  std::vector<float> xs;
  for (int i = -20 * 1024; i <= 20 * 1024; ++i) xs.push_back(static_cast<float>(i) * 0x1p-10f);
  const float specials[] = {0.0f,     -0.0f,   0x1p-149f, -0x1p-149f, 0x1p-130f, -0x1p-130f, 0x1p-126f, -0x1p-126f,
                            1e-30f,   -1e-30f, 1e-7f,     -1e-7f,     1e-3f,     -1e-3f,     0.17f,     -0.17f,
                            0.35f,    -0.35f,  9.0f,      -9.0f,      9.02f,     -9.02f,     87.0f,     -87.0f,
                            87.3f,    -87.3f,  87.34f,    -87.34f,    88.0f,     -88.0f,     88.8f,     -88.8f,
                            89.0f,    -89.0f,  103.0f,    -103.0f,    104.0f,    -104.0f,    1e30f,     -1e30f,
                            3.4e38f,  -3.4e38f, kInf,     -kInf,      std::numeric_limits<float>::quiet_NaN()};
  xs.insert(xs.end(), std::begin(specials), std::end(specials));
  std::mt19937 rng(kSeed);
  std::uniform_int_distribution<uint32_t> bits;
  std::uniform_real_distribution<float> mid(-12.0f, 12.0f);
  for (int i = 0; i < 20000; ++i) xs.push_back(std::bit_cast<float>(bits(rng)));  // includes NaNs, infs
  for (int i = 0; i < 20000; ++i) xs.push_back(mid(rng));
  // Near 0 on a log scale, where tanh and SiLU must keep relative accuracy.
  for (int e = -149; e <= 0; ++e) {
    for (float m : {1.0f, 1.3f, 1.7f}) {
      xs.push_back(std::ldexp(m, e));
      xs.push_back(-std::ldexp(m, e));
    }
  }
  return xs;
}

TEST(F32Vunary, SweepMatchesDoubleReference) {
  const std::vector<float> xs = sweep_inputs();
  for (Isa isa : available_isas()) {
    for (Fn f : kFns) {
      Worst worst;
      check(isa, f, xs, worst);
      std::printf("f32_v%s__%s: max error %.2f ulp (at x=%a)\n", fn_name(f), isa_name(isa), worst.ulp,
                  static_cast<double>(worst.x));
    }
  }
}

TEST(F32Vunary, EveryLengthWithGuards) {
  std::mt19937 rng(kSeed);
  std::uniform_real_distribution<float> dist(-30.0f, 30.0f);
  for (Isa isa : available_isas()) {
    for (Fn f : kFns) {
      for (size_t n = 1; n <= 67; ++n) {
        std::vector<float> xs(n);
        for (float& v : xs) v = dist(rng);
        Worst worst;
        check(isa, f, xs, worst);
      }
    }
  }
}

TEST(F32Vunary, InPlaceMatchesOutOfPlace) {
  std::mt19937 rng(kSeed);
  std::uniform_real_distribution<float> dist(-30.0f, 30.0f);
  for (Isa isa : available_isas()) {
    for (Fn f : kFns) {
      for (size_t n : {1u, 7u, 8u, 9u, 16u, 17u, 37u, 67u}) {
        SCOPED_TRACE(std::string("isa=") + isa_name(isa) + " fn=" + fn_name(f) + " n=" + std::to_string(n));
        std::vector<float> xs(n);
        for (float& v : xs) v = dist(rng);
        std::vector<float> out(n);
        kernel(isa, f)(xs.data(), out.data(), n);
        kernel(isa, f)(xs.data(), xs.data(), n);
        for (size_t i = 0; i < n; ++i) ASSERT_EQ(std::bit_cast<uint32_t>(xs[i]), std::bit_cast<uint32_t>(out[i])) << i;
      }
    }
  }
}

// HardSwish: one FMA, a clamp and a multiply on every ISA, so each variant equals the scalar
// one bit for bit, which is within an ulp or two of the double-precision definition; every
// length with guards, in place, and the edges (gate 0 and 1 exactly, +-inf, NaN).
TEST(F32Vunary, HardSwishMatchesScalarAndDefinition) {
  std::mt19937 rng(kSeed);
  std::uniform_real_distribution<float> dist(-8.0f, 8.0f);
  const float a = 1.0f / 6.0f, b = 0.5f;
  for (Isa isa : available_isas()) {
    const F32VhardswishFn fn = f32_vunary_config(isa).hardswish;
    for (size_t n = 0; n <= 67; ++n) {
      std::vector<float> xs(n);
      for (float& v : xs) v = dist(rng);
      if (n >= 8) {
        xs[0] = -3.0f;  // gate exactly 0
        xs[1] = 3.0f;   // gate exactly 1
        xs[2] = kInf;
        xs[3] = -kInf;
        xs[4] = std::numeric_limits<float>::quiet_NaN();
        xs[5] = -0.0f;
      }
      std::vector<float> out(n + 2 * kGuardCount, kGuard), ref(n);
      fn(xs.data(), out.data() + kGuardCount, n, a, b);
      f32_vhardswish__scalar(xs.data(), ref.data(), n, a, b);
      for (size_t i = 0; i < kGuardCount; ++i) {
        ASSERT_EQ(out[i], kGuard) << isa_name(isa) << " n=" << n;
        ASSERT_EQ(out[kGuardCount + n + i], kGuard) << isa_name(isa) << " n=" << n;
      }
      for (size_t i = 0; i < n; ++i) {
        const float got = out[kGuardCount + i];
        const double x = xs[i];
        if (std::isnan(x) || (std::isinf(x) && x < 0)) {
          ASSERT_TRUE(std::isnan(got)) << isa_name(isa) << " x=" << x;  // -inf * 0
          continue;
        }
        ASSERT_EQ(std::bit_cast<uint32_t>(got), std::bit_cast<uint32_t>(ref[i])) << isa_name(isa) << " x=" << x;
        const double want = x * std::clamp(x / 6.0 + 0.5, 0.0, 1.0);
        if (std::isinf(want)) {
          ASSERT_EQ(static_cast<double>(got), want);
        } else {
          ASSERT_NEAR(got, want, 4e-7 * std::max(1.0, std::fabs(want))) << isa_name(isa) << " x=" << x;
        }
      }
      std::vector<float> in_place = xs;
      fn(in_place.data(), in_place.data(), n, a, b);
      // NaN results were checked above; their payload bits may differ between ISAs.
      for (size_t i = 0; i < n; ++i)
        if (!std::isnan(ref[i])) {
          ASSERT_EQ(std::bit_cast<uint32_t>(in_place[i]), std::bit_cast<uint32_t>(ref[i]));
        }
    }
  }
}

TEST(F32Vunary, ZeroLengthTouchesNothing) {
  for (Isa isa : available_isas()) {
    for (Fn f : kFns) {
      float y = kGuard;
      const float x = 1.0f;
      kernel(isa, f)(&x, &y, 0);
      EXPECT_EQ(y, kGuard) << isa_name(isa) << " " << fn_name(f);
    }
  }
}

}  // namespace
}  // namespace nfuse::kernels
