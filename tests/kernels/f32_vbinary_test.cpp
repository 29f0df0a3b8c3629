// FP32 element-wise binary kernels (src/kernels/f32-vbinary) on every ISA this machine runs
// (scalar always). Each op is one correctly rounded IEEE operation, so the expected value is the
// double-precision result rounded to float (exact for +, -, *, / of floats) and every ISA must
// match it bit for bit: every length 0..67 (vector bodies and masked or scalar tails) with
// guard values around the output, in place on either operand, and the special values (+-0,
// +-inf, NaN, subnormals, overflow).
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu_features.h"
#include "support/kernel_isas.h"
#include "kernels/f32-vbinary/f32_vbinary.h"

namespace nfuse::kernels {
namespace {

constexpr uint32_t kSeed = 20261130;
constexpr float kGuard = -7.75e33f;
constexpr size_t kGuardCount = 17;
constexpr size_t kMaxLen = 67;
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr F32BinaryOp kOps[] = {F32BinaryOp::kAdd, F32BinaryOp::kSub, F32BinaryOp::kMul,
                                F32BinaryOp::kDiv, F32BinaryOp::kMax, F32BinaryOp::kMin};

using test::available_isas;

const char* op_name(F32BinaryOp op) {
  static const char* kNames[] = {"add", "sub", "mul", "div", "max", "min"};
  return kNames[static_cast<size_t>(op)];
}

float expected(F32BinaryOp op, float a, float b) {
  const double x = a, y = b;
  switch (op) {
    case F32BinaryOp::kAdd: return static_cast<float>(x + y);
    case F32BinaryOp::kSub: return static_cast<float>(x - y);
    case F32BinaryOp::kMul: return static_cast<float>(x * y);
    case F32BinaryOp::kDiv: return static_cast<float>(x / y);
    // The reference kernel's rule (ref_binary.cpp): NaN in, NaN out; else std::max / std::min,
    // which return the first operand on ties (+0 vs -0 included).
    case F32BinaryOp::kMax: return std::isnan(a) || std::isnan(b) ? std::nanf("") : std::max(a, b);
    case F32BinaryOp::kMin: return std::isnan(a) || std::isnan(b) ? std::nanf("") : std::min(a, b);
  }
  return 0.0f;
}

// Same bits, or both NaN (payloads are not specified).
::testing::AssertionResult same(float got, float want) {
  if (std::isnan(want) ? std::isnan(got) : std::bit_cast<uint32_t>(got) == std::bit_cast<uint32_t>(want))
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "got " << got << " want " << want;
}

// Random values with every eighth one special.
std::vector<float> operands(std::mt19937& rng, size_t n) {
  static const float kSpecial[] = {0.0f, -0.0f, kInf, -kInf, std::numeric_limits<float>::quiet_NaN(),
                                   std::numeric_limits<float>::denorm_min(), 3e38f, -1e-39f};
  std::uniform_real_distribution<float> dist(-100.0f, 100.0f);
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = i % 8 == 7 ? kSpecial[rng() % 8] : dist(rng);
  return v;
}

void expect_guards(const std::vector<float>& y, size_t n, const std::string& where) {
  for (size_t i = 0; i < kGuardCount; ++i) {
    ASSERT_EQ(y[i], kGuard) << where << " wrote before the output";
    ASSERT_EQ(y[kGuardCount + n + i], kGuard) << where << " wrote past the output";
  }
}

TEST(F32Vbinary, VectorOpsAreCorrectlyRoundedOnEveryIsa) {
  std::mt19937 rng(kSeed);
  for (Isa isa : available_isas()) {
    const F32VbinaryConfig& k = f32_vbinary_config(isa);
    for (F32BinaryOp op : kOps) {
      const F32VbinaryFn fn = k.op[static_cast<size_t>(op)];
      for (size_t n = 0; n <= kMaxLen; ++n) {
        const std::string where = std::string(isa_name(isa)) + " " + op_name(op) + " n=" + std::to_string(n);
        const std::vector<float> a = operands(rng, n), b = operands(rng, n);
        std::vector<float> y(n + 2 * kGuardCount, kGuard);
        fn(a.data(), b.data(), y.data() + kGuardCount, n);
        expect_guards(y, n, where);
        for (size_t i = 0; i < n; ++i) ASSERT_TRUE(same(y[kGuardCount + i], expected(op, a[i], b[i]))) << where;
        // In place, over either operand.
        std::vector<float> ya = a, yb = b;
        fn(ya.data(), b.data(), ya.data(), n);
        fn(a.data(), yb.data(), yb.data(), n);
        for (size_t i = 0; i < n; ++i) {
          ASSERT_TRUE(same(ya[i], expected(op, a[i], b[i]))) << where << " in place over a";
          ASSERT_TRUE(same(yb[i], expected(op, a[i], b[i]))) << where << " in place over b";
        }
      }
    }
  }
}

TEST(F32Vbinary, ScalarOperandEitherSide) {
  std::mt19937 rng(kSeed + 1);
  for (Isa isa : available_isas()) {
    const F32VbinaryConfig& k = f32_vbinary_config(isa);
    for (F32BinaryOp op : kOps) {
      const size_t o = static_cast<size_t>(op);
      for (size_t n = 0; n <= kMaxLen; ++n) {
        const std::string where = std::string(isa_name(isa)) + " " + op_name(op) + " n=" + std::to_string(n);
        const std::vector<float> a = operands(rng, n);
        const float b = n % 5 == 4 ? -0.0f : std::uniform_real_distribution<float>(-4.0f, 4.0f)(rng);
        std::vector<float> y(n + 2 * kGuardCount, kGuard), r(n + 2 * kGuardCount, kGuard);
        k.opc[o](a.data(), b, y.data() + kGuardCount, n);
        k.ropc[o](a.data(), b, r.data() + kGuardCount, n);
        expect_guards(y, n, where + " a op b");
        expect_guards(r, n, where + " b op a");
        for (size_t i = 0; i < n; ++i) {
          ASSERT_TRUE(same(y[kGuardCount + i], expected(op, a[i], b))) << where << " a op b";
          ASSERT_TRUE(same(r[kGuardCount + i], expected(op, b, a[i]))) << where << " b op a";
        }
        std::vector<float> in_place = a;
        k.opc[o](in_place.data(), b, in_place.data(), n);
        for (size_t i = 0; i < n; ++i) ASSERT_TRUE(same(in_place[i], expected(op, a[i], b))) << where << " in place";
      }
    }
  }
}

// x * s + t with each step rounded (no FMA): what a Mul followed by an Add gives.
TEST(F32Vbinary, AffineRoundsTheProductThenTheSum) {
  std::mt19937 rng(kSeed + 2);
  for (Isa isa : available_isas()) {
    const F32VaffineFn fn = f32_vbinary_config(isa).affine;
    for (size_t n = 0; n <= kMaxLen; ++n) {
      const std::string where = std::string(isa_name(isa)) + " n=" + std::to_string(n);
      const std::vector<float> x = operands(rng, n);
      // 1 +- 2^-12: products with low bits that an FMA would keep and a rounded product drops.
      const float s = n % 2 ? 1.000244140625f : 0.999755859375f, t = n % 3 ? -1.0f / 3.0f : 0.0f;
      std::vector<float> y(n + 2 * kGuardCount, kGuard);
      fn(x.data(), s, t, y.data() + kGuardCount, n);
      expect_guards(y, n, where);
      for (size_t i = 0; i < n; ++i) {
        // Through a volatile: the compiler may not fuse the test's own multiply and add either
        // (GCC contracts them on aarch64 by default).
        volatile float p = x[i] * s;
        const float product = p;
        ASSERT_TRUE(same(y[kGuardCount + i], expected(F32BinaryOp::kAdd, product, t))) << where << " x=" << x[i];
      }
      std::vector<float> in_place = x;
      fn(in_place.data(), s, t, in_place.data(), n);
      for (size_t i = 0; i < n; ++i) ASSERT_TRUE(same(in_place[i], y[kGuardCount + i])) << where << " in place";
    }
  }
}

}  // namespace
}  // namespace nfuse::kernels
