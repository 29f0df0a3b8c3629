// q_dequant.h kernels (every ISA this CPU runs) against the definition, f32(x - zp) * scale in the
// input's own type: bit-exact on every length 0..40 (vector tails) and 1000, u8 / s8 / u16 / s16
// at both ends of their ranges, with zero points at the type's limits and scales that round
// (1/3), overflow to infinity (3e38 * 65535) and go subnormal (1e-40).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <type_traits>
#include <vector>

#include "kernels/cpu_features.h"
#include "kernels/q-dequant/q_dequant.h"
#include "support/kernel_isas.h"

namespace nfuse::kernels {
namespace {

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

std::vector<size_t> lengths() {
  std::vector<size_t> out;
  for (size_t n = 0; n <= 40; ++n) out.push_back(n);
  out.push_back(1000);
  return out;
}

template <typename Q, typename U, typename Fn>
void check(Fn fn, Isa isa, int32_t zp, float scale, std::mt19937& rng) {
  constexpr bool kSigned = std::is_signed_v<Q>;
  constexpr int32_t kOffset = kSigned ? (sizeof(Q) == 1 ? 128 : 32768) : 0;
  const U flip = kSigned ? static_cast<U>(sizeof(Q) == 1 ? 0x80 : 0x8000) : 0;
  std::uniform_int_distribution<int32_t> value(std::numeric_limits<Q>::min(), std::numeric_limits<Q>::max());
  for (size_t n : lengths()) {
    std::vector<Q> x(n);
    for (size_t i = 0; i < n; ++i) x[i] = static_cast<Q>(value(rng));
    if (n >= 2) x[0] = std::numeric_limits<Q>::min(), x[n - 1] = std::numeric_limits<Q>::max();
    std::vector<float> y(n + 1, -7.0f);
    fn(reinterpret_cast<const U*>(x.data()), n, flip, zp + kOffset, scale, y.data());
    for (size_t i = 0; i < n; ++i) {
      const float want = static_cast<float>(static_cast<int32_t>(x[i]) - zp) * scale;
      ASSERT_TRUE(same_bits(y[i], want)) << isa_name(isa) << " n " << n << " i " << i << " x " << +x[i] << " zp " << zp
                                         << ": " << y[i] << " vs " << want;
    }
    ASSERT_EQ(y[n], -7.0f) << "wrote past n";
  }
}

const float kScales[] = {1.0f / 3.0f, 0.0123f, 3e38f, 1e-40f};

TEST(QDequantize, EightBitMatchesDefinition) {
  std::mt19937 rng(21);
  for (Isa isa : test::available_isas()) {
    const QDequantizeKernels k = q_dequantize_select(isa);
    for (float scale : kScales) {
      for (int32_t zp : {0, 3, 128, 255}) check<uint8_t, uint8_t>(k.q8, isa, zp, scale, rng);
      for (int32_t zp : {-128, -1, 0, 127}) check<int8_t, uint8_t>(k.q8, isa, zp, scale, rng);
    }
  }
}

TEST(QDequantize, SixteenBitMatchesDefinition) {
  std::mt19937 rng(22);
  for (Isa isa : test::available_isas()) {
    const QDequantizeKernels k = q_dequantize_select(isa);
    for (float scale : kScales) {
      for (int32_t zp : {0, 7, 32768, 65535}) check<uint16_t, uint16_t>(k.q16, isa, zp, scale, rng);
      for (int32_t zp : {-32768, -1, 0, 32767}) check<int16_t, uint16_t>(k.q16, isa, zp, scale, rng);
    }
  }
}

}  // namespace
}  // namespace nfuse::kernels
