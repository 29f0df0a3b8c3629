// FP32 math kernels (src/kernels/f32-vmath: exp, log, sqrt, erf, Gelu in both forms) against
// double-precision libm, on every ISA this machine runs (scalar always): a dense sweep of
// [-20, 20], the extremes (+-0, subnormals, the exp overflow and underflow edges, huge values,
// +-inf, NaN), random bit patterns over the whole float range, every length 1..67 with guard
// values on both sides of the output, and in place. Prints the worst relative error seen.
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
#include "kernels/f32-vmath/f32_vmath.h"
#include "support/kernel_isas.h"

namespace nfuse::kernels {
namespace {

constexpr uint32_t kSeed = 20261202;
constexpr float kGuard = -7.75e33f;
constexpr size_t kGuardCount = 17;
constexpr double kInf = std::numeric_limits<double>::infinity();

using test::available_isas;

enum class Fn { kExp, kLog, kSqrt, kErf, kGelu, kGeluTanh };
constexpr Fn kFns[] = {Fn::kExp, Fn::kLog, Fn::kSqrt, Fn::kErf, Fn::kGelu, Fn::kGeluTanh};

const char* fn_name(Fn f) {
  constexpr const char* kNames[] = {"exp", "log", "sqrt", "erf", "gelu", "gelu_tanh"};
  return kNames[static_cast<int>(f)];
}

F32VmathFn kernel(Isa isa, Fn f) {
  const F32VmathConfig& c = f32_vmath_config(isa);
  const F32VmathFn fns[] = {c.exp, c.log, c.sqrt, c.erf, c.gelu, c.gelu_tanh};
  return fns[static_cast<int>(f)];
}

double tanh_form_u(double x) { return std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x); }

double reference(Fn f, float xf) {
  const double x = xf;
  switch (f) {
    case Fn::kExp: return std::exp(x);
    case Fn::kLog: return std::log(x);
    case Fn::kSqrt: return std::sqrt(x);
    case Fn::kErf: return std::erf(x);
    case Fn::kGelu: return std::isinf(x) ? std::max(x, 0.0) : 0.5 * x * std::erfc(-x / std::sqrt(2.0));
    case Fn::kGeluTanh: return x / (1.0 + std::exp(-2.0 * tanh_form_u(x)));  // = x (1 + tanh u) / 2, no cancellation
  }
  return 0.0;
}

// The documented accuracy (f32_vmath.h): relative, plus an absolute floor where a result below
// FLT_MIN is flushed. exp's argument error grows with |x| in both Gelu forms (x^2 / 2 and 2u are
// rounded to float before the exponential).
double tolerance(Fn f, float xf, double ref) {
  const double x = xf, a = std::fabs(ref);
  switch (f) {
    case Fn::kSqrt: return 0.5 * std::fabs(std::nextafter(static_cast<float>(ref), INFINITY) - static_cast<float>(ref));
    case Fn::kExp:
    case Fn::kLog: return 2e-6 * a + 0x1p-119;
    case Fn::kErf: return 2e-6 * a + 0x1p-119;
    case Fn::kGelu: return (2e-6 + 1.2e-7 * x * x) * a + 0x1p-119;
    case Fn::kGeluTanh: return (2e-6 + 2.4e-7 * std::fabs(2.0 * tanh_form_u(x))) * a + 0x1p-119;
  }
  return 0.0;
}

void check(Isa isa, Fn f, const std::vector<float>& xs, double* worst) {
  SCOPED_TRACE(std::string("isa=") + isa_name(isa) + " fn=" + fn_name(f));
  std::vector<float> y(xs.size() + 2 * kGuardCount, kGuard);
  kernel(isa, f)(xs.data(), y.data() + kGuardCount, xs.size());
  int failures = 0;
  for (size_t i = 0; i < xs.size() && failures < 5; ++i) {
    const float got = y[kGuardCount + i];
    const double ref = reference(f, xs[i]);
    bool ok;
    if (std::isnan(ref)) {
      ok = std::isnan(got);
    } else if (std::isinf(ref) || std::fabs(ref) > std::numeric_limits<float>::max()) {
      ok = static_cast<double>(got) == (ref > 0 ? kInf : -kInf);
    } else {
      const double err = std::fabs(static_cast<double>(got) - ref);
      ok = err == 0.0 || err <= tolerance(f, xs[i], ref);
      if (std::fabs(ref) > 0x1p-100 && worst) *worst = std::max(*worst, err / std::fabs(ref));
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
  for (int i = -20 * 512; i <= 20 * 512; ++i) xs.push_back(static_cast<float>(i) * 0x1p-9f);
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  for (float v : {0.0f,   0x1p-149f, 0x1p-130f, 0x1p-126f, 1e-30f, 1e-7f,  1e-3f, 0.5f,    0.999f, 1.0f,
                  1.001f, 3.9f,      4.1f,      9.0f,      13.0f,  26.0f,  87.3f, 87.34f,  88.0f,  88.37f,
                  88.38f, 88.7f,     88.72f,    88.73f,    89.0f,  103.0f, 1e30f, 3.4e38f, inf,    nan}) {
    xs.push_back(v);
    xs.push_back(-v);
  }
  std::mt19937 rng(kSeed);
  std::uniform_int_distribution<uint32_t> bits;
  std::uniform_real_distribution<float> mid(-12.0f, 12.0f);
  std::uniform_real_distribution<float> near_one(0.9f, 1.1f);
  for (int i = 0; i < 20000; ++i) xs.push_back(std::bit_cast<float>(bits(rng)));  // includes NaNs, infs
  for (int i = 0; i < 20000; ++i) xs.push_back(mid(rng));
  for (int i = 0; i < 5000; ++i) xs.push_back(near_one(rng));  // log's cancellation region
  for (int e = -149; e <= 127; ++e) {
    for (float m : {1.0f, 1.3f, 1.7f}) {
      xs.push_back(std::ldexp(m, e));
      xs.push_back(-std::ldexp(m, e));
    }
  }
  return xs;
}

TEST(F32Vmath, SweepMatchesDoubleReference) {
  const std::vector<float> xs = sweep_inputs();
  for (Isa isa : available_isas()) {
    for (Fn f : kFns) {
      double worst = 0.0;
      check(isa, f, xs, &worst);
      std::printf("f32_v%s__%s: max relative error %.2e\n", fn_name(f), isa_name(isa), worst);
    }
  }
}

TEST(F32Vmath, EveryLengthWithGuardsAndInPlace) {
  std::mt19937 rng(kSeed);
  std::uniform_real_distribution<float> dist(-30.0f, 30.0f);
  for (Isa isa : available_isas()) {
    for (Fn f : kFns) {
      for (size_t n = 0; n <= 67; ++n) {
        std::vector<float> xs(n);
        for (float& v : xs) v = dist(rng);
        check(isa, f, xs, nullptr);
        std::vector<float> out(n);
        kernel(isa, f)(xs.data(), out.data(), n);
        kernel(isa, f)(xs.data(), xs.data(), n);
        for (size_t i = 0; i < n; ++i)
          ASSERT_EQ(std::bit_cast<uint32_t>(xs[i]), std::bit_cast<uint32_t>(out[i])) << isa_name(isa) << " " << i;
      }
    }
  }
}

}  // namespace
}  // namespace nfuse::kernels
