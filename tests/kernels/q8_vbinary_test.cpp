// Quantized 8-bit Add / Mul kernels (src/kernels/q8-vbinary) against the arithmetic that
// kernels/quant_arithmetic.h defines (qlinear_add_value / qlinear_mul_value + quantize_value),
// bit for bit, on every ISA this machine runs: every length 0..200 and a long one (all main-loop
// and tail paths), scalar and same-shape second operands, the swapped scalar form, u8 and s8,
// extreme zero points, multipliers that saturate most outputs, multipliers of 0.5 that put many
// values exactly on a .5 tie (round half to even), in place, and guard bytes after the output.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu_features.h"
#include "kernels/q8-vbinary/q8_vbinary.h"
#include "kernels/quant_arithmetic.h"

namespace nfuse::kernels {
namespace {

constexpr uint32_t kSeed = 20261129;
constexpr size_t kGuard = 32;
constexpr uint8_t kGuardByte = 0xA5;

std::vector<Isa> available_isas() {
  std::vector<Isa> isas;
  for (Isa isa : {Isa::kScalar, Isa::kAvx2Fma, Isa::kAvx512, Isa::kNeon})
    if (isa_supported(isa)) isas.push_back(isa);
  return isas;
}

// ref's value for element i; `swapped`: b is ref's scalar A (see Q8VbinaryParams).
template <typename T>
T expected(bool mul, T a, T b, const Q8VbinaryParams& p) {
  const int32_t ac = static_cast<int32_t>(a) - p.a_zp, bc = static_cast<int32_t>(b) - p.b_zp;
  float v;
  if (mul)
    v = nfuse::qlinear_mul_value(ac, bc, p.a_mult);
  else if (p.swapped)
    v = nfuse::qlinear_add_value(bc, ac, p.b_mult, p.a_mult);
  else
    v = nfuse::qlinear_add_value(ac, bc, p.a_mult, p.b_mult);
  return nfuse::quantize_value<T>(v, 1.0f, p.y_zp);
}

template <typename T>
const Q8VbinaryConfig<T>& config(Isa isa) {
  if constexpr (std::is_same_v<T, uint8_t>) return qu8_vbinary_config(isa);
  else return qs8_vbinary_config(isa);
}

struct ParamCase {
  const char* name;
  Q8VbinaryParams p;
};

template <typename T>
std::vector<ParamCase> param_cases() {
  const bool s = std::is_signed_v<T>;
  const int32_t lo = s ? -128 : 0, hi = s ? 127 : 255, mid = s ? 0 : 128;
  return {
      {"typical", {mid + 3, mid - 7, mid + 1, 0.83f, 0.61f, false}},
      {"ties (0.5 multipliers)", {mid, mid + 1, mid, 0.5f, 0.5f, false}},
      {"ties, odd y_zp", {lo + 5, hi - 9, mid + 1, 0.5f, 1.5f, false}},
      {"saturating", {mid, mid, mid, 37.0f, 23.0f, false}},
      {"extreme zero points", {lo, hi, hi, 0.9f, 1.1f, false}},
      {"extreme zero points 2", {hi, lo, lo, 1.3f, 0.7f, false}},
      {"tiny multipliers", {mid, mid, mid, 1e-3f, 3e-3f, false}},
      {"swapped", {mid - 11, mid + 13, mid + 2, 0.77f, 0.33f, true}},
      {"swapped ties", {mid, mid + 1, mid, 0.5f, 0.25f, true}},
  };
}

template <typename T>
void check_all() {
  std::mt19937 rng(kSeed);
  std::uniform_int_distribution<int> byte(0, 255);
  std::vector<size_t> lengths;
  for (size_t n = 0; n <= 200; ++n) lengths.push_back(n);
  lengths.push_back(4099);
  for (Isa isa : available_isas()) {
    const Q8VbinaryConfig<T>& c = config<T>(isa);
    for (const ParamCase& pc : param_cases<T>()) {
      for (int op = 0; op < 4; ++op) {  // add, addc, mul, mulc
        const bool mul = op >= 2, scalar_b = op % 2 == 1;
        if (pc.p.swapped && !scalar_b) continue;
        const Q8VbinaryFn<T> fn = op == 0 ? c.add : op == 1 ? c.addc : op == 2 ? c.mul : c.mulc;
        for (size_t n : lengths) {
          std::vector<T> a(n + 1), b(n + 1), y(n + kGuard + 1);
          for (T& v : a) v = static_cast<T>(static_cast<uint8_t>(byte(rng)));
          for (T& v : b) v = static_cast<T>(static_cast<uint8_t>(byte(rng)));
          for (T& v : y) v = static_cast<T>(kGuardByte);
          // Offset by one element: unaligned pointers.
          fn(a.data() + 1, b.data() + 1, y.data() + 1, n, pc.p);
          for (size_t i = 0; i < n; ++i) {
            const T e = expected<T>(mul, a[i + 1], b[scalar_b ? 1 : i + 1], pc.p);
            ASSERT_EQ(static_cast<int>(y[i + 1]), static_cast<int>(e))
                << isa_name(isa) << " op " << op << " " << pc.name << " n " << n << " index " << i << " a "
                << static_cast<int>(a[i + 1]) << " b " << static_cast<int>(b[scalar_b ? 1 : i + 1]) << " seed " << kSeed;
          }
          ASSERT_EQ(static_cast<uint8_t>(y[0]), kGuardByte) << "write before the output";
          for (size_t g = n + 1; g < y.size(); ++g) ASSERT_EQ(static_cast<uint8_t>(y[g]), kGuardByte) << "overrun n " << n;
          // In place (y aliases a).
          std::vector<T> a2(a.begin() + 1, a.end());
          fn(a2.data(), b.data() + 1, a2.data(), n, pc.p);
          for (size_t i = 0; i < n; ++i) ASSERT_EQ(a2[i], y[i + 1]) << "in place, " << isa_name(isa) << " n " << n;
        }
      }
    }
  }
}

TEST(Q8Vbinary, U8MatchesReference) { check_all<uint8_t>(); }
TEST(Q8Vbinary, S8MatchesReference) { check_all<int8_t>(); }

// Every pair of 8-bit inputs once, per ISA (exhaustive over the value space for one parameter set).
TEST(Q8Vbinary, ExhaustivePairs) {
  std::vector<uint8_t> a(65536), b(65536), y(65536);
  for (size_t i = 0; i < a.size(); ++i) {
    a[i] = static_cast<uint8_t>(i & 255);
    b[i] = static_cast<uint8_t>(i >> 8);
  }
  const Q8VbinaryParams p{121, 133, 127, 0.37f, 0.71f, false};
  for (Isa isa : available_isas()) {
    for (bool mul : {false, true}) {
      const auto& c = qu8_vbinary_config(isa);
      (mul ? c.mul : c.add)(a.data(), b.data(), y.data(), a.size(), p);
      for (size_t i = 0; i < a.size(); ++i) {
        ASSERT_EQ(y[i], expected<uint8_t>(mul, a[i], b[i], p)) << isa_name(isa) << (mul ? " mul " : " add ") << i;
      }
    }
  }
}

}  // namespace
}  // namespace nfuse::kernels
