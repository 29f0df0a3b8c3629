// qu8_vcvt.h kernels (every ISA this CPU runs) against the definition: unpack is f32(x - zp) in
// the input's type; requant is nfuse::requantize_value of i32(sum) + bias, clamped. Bit-exact, on
// every length 0..40 (vector tails) and 1000, u8 / s8 both ends, sums at +-(2^24 - 1), biases
// near +-2^30 (the bias add), exact .5 ties (multiplier 0.5) and huge / tiny multipliers.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "kernels/cpu_features.h"
#include "kernels/qu8-gemm/qu8_wxgemm.h"
#include "kernels/qu8-vcvt/qu8_vcvt.h"
#include "kernels/quant_arithmetic.h"

namespace nfuse::kernels {
namespace {

std::vector<Isa> isas() {
  std::vector<Isa> out{Isa::kScalar};
  for (Isa isa : {Isa::kAvx2Fma, Isa::kAvx512, Isa::kNeon})
    if (isa_supported(isa)) out.push_back(isa);
  return out;
}

TEST(Qu8Vcvt, UnpackMatchesDefinition) {
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> byte(0, 255);
  for (Isa isa : isas()) {
    const Qu8VcvtKernels k = qu8_vcvt_select(isa);
    for (size_t n = 0; n <= 1000; n = n < 40 ? n + 1 : (n == 40 ? 1000 : 1001)) {
      for (bool is_signed : {false, true}) {
        for (int32_t zp : {-128, -1, 0, 127, 255}) {
          if (is_signed ? zp > 127 : zp < 0) continue;
          std::vector<uint8_t> x(n + 1);
          for (uint8_t& v : x) v = static_cast<uint8_t>(byte(rng));
          std::vector<float> out(n + 1, -7.0f);
          k.unpack(x.data(), n, is_signed ? 0x80 : 0, zp + (is_signed ? 128 : 0), out.data());
          for (size_t i = 0; i < n; ++i) {
            const int32_t xv = is_signed ? static_cast<int8_t>(x[i]) : x[i];
            ASSERT_EQ(out[i], static_cast<float>(xv - zp)) << static_cast<int>(isa) << " n " << n << " i " << i;
          }
          ASSERT_EQ(out[n], -7.0f) << "wrote past n";
        }
      }
    }
  }
}

TEST(Qu8Vcvt, RequantMatchesDefinition) {
  std::mt19937 rng(12);
  std::uniform_int_distribution<int32_t> sum_d(-(1 << 24) + 1, (1 << 24) - 1), small(-600, 600);
  for (Isa isa : isas()) {
    const Qu8VcvtKernels k = qu8_vcvt_select(isa);
    for (size_t n = 0; n <= 1000; n = n < 40 ? n + 1 : (n == 40 ? 1000 : 1001)) {
      for (bool is_signed : {false, true}) {
        for (int32_t bias : {0, -77, (1 << 30) - 5, -(1 << 30) + 5}) {
          for (float mult : {0.5f, 3.1e-3f, 1e-12f, 1e6f}) {
            const int32_t zp = is_signed ? (bias == 0 ? -128 : 9) : (bias == 0 ? 255 : 3);
            const Qu8GemmRequant rq =
                qu8_requant(is_signed, zp, is_signed ? -128 : 0, is_signed ? 127 : 255);
            std::vector<float> sums(n);
            for (size_t i = 0; i < n; ++i) {
              const int32_t v = mult == 0.5f ? small(rng) : sum_d(rng);
              sums[i] = static_cast<float>(i % 7 == 0 ? ((1 << 24) - 1) * (i % 2 ? 1 : -1) : v);
            }
            std::vector<uint8_t> y(n + 1, 0xA5);
            k.requant(sums.data(), n, bias, mult, rq, y.data());
            for (size_t i = 0; i < n; ++i) {
              const int64_t acc = static_cast<int64_t>(sums[i]) + bias;
              const int32_t q = is_signed ? nfuse::requantize_value<int8_t>(acc, mult, zp)
                                          : nfuse::requantize_value<uint8_t>(acc, mult, zp);
              ASSERT_EQ(y[i], static_cast<uint8_t>(q))
                  << static_cast<int>(isa) << " n " << n << " i " << i << " sum " << sums[i] << " bias " << bias;
            }
            ASSERT_EQ(y[n], 0xA5) << "wrote past n";
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace nfuse::kernels
