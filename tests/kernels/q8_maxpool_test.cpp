// 8-bit MaxPool row steps (src/kernels/q8-maxpool) against plain loops, on every ISA this machine
// runs: vmax lengths 0..200, hmax over widths 1..150 with kernel 1..4, strides 1..3, dilations
// 1..2, random bytes, and the extreme values (0 / 255, -128 / 127) that a signed/unsigned mix-up
// would misorder; outputs past ow must stay untouched.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "kernels/cpu_features.h"
#include "kernels/q8-maxpool/q8_maxpool.h"

namespace nfuse::kernels {
namespace {

constexpr uint32_t kSeed = 20261129;

std::vector<uint8_t> random_bytes(size_t n, std::mt19937& rng) {
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_int_distribution<int> pick(0, 7);
  std::vector<uint8_t> v(n);
  for (uint8_t& b : v) {
    const int p = pick(rng);
    b = p == 0 ? 0 : p == 1 ? 255 : p == 2 ? 127 : p == 3 ? 128 : static_cast<uint8_t>(byte(rng));
  }
  return v;
}

TEST(Q8MaxPool, VmaxMatchesLoop) {
  std::mt19937 rng(kSeed);
  for (Isa isa : {Isa::kScalar, Isa::kAvx2Fma, Isa::kAvx512, Isa::kNeon}) {
    if (!isa_supported(isa)) continue;
    const Q8MaxPoolConfig& c = q8_maxpool_config(isa);
    for (size_t n = 0; n <= 200; ++n) {
      const std::vector<uint8_t> a = random_bytes(n + 1, rng), r = random_bytes(n + 1, rng);
      std::vector<uint8_t> u = a, s = a;
      c.u8_vmax(u.data() + 1, r.data() + 1, n);
      c.s8_vmax(reinterpret_cast<int8_t*>(s.data()) + 1, reinterpret_cast<const int8_t*>(r.data()) + 1, n);
      ASSERT_EQ(u[0], a[0]);
      ASSERT_EQ(s[0], a[0]);
      for (size_t i = 1; i <= n; ++i) {
        ASSERT_EQ(u[i], std::max(a[i], r[i])) << isa_name(isa) << " n " << n << " i " << i;
        ASSERT_EQ(static_cast<int8_t>(s[i]), std::max(static_cast<int8_t>(a[i]), static_cast<int8_t>(r[i])))
            << isa_name(isa) << " n " << n << " i " << i;
      }
    }
  }
}

TEST(Q8MaxPool, HmaxMatchesLoop) {
  std::mt19937 rng(kSeed + 1);
  for (Isa isa : {Isa::kScalar, Isa::kAvx2Fma, Isa::kAvx512, Isa::kNeon}) {
    if (!isa_supported(isa)) continue;
    const Q8MaxPoolConfig& c = q8_maxpool_config(isa);
    for (size_t ow = 1; ow <= 150; ow += (ow < 70 ? 1 : 7)) {
      for (size_t kw = 1; kw <= 4; ++kw) {
        for (size_t sw = 1; sw <= 3; ++sw) {
          for (size_t dw = 1; dw <= 2; ++dw) {
            const size_t width = (ow - 1) * sw + (kw - 1) * dw + 1;
            const std::vector<uint8_t> buf = random_bytes(width + kQ8MaxPoolSlack, rng);
            std::vector<uint8_t> u(ow + 40, 0x5A), s(ow + 40, 0x5A);
            c.u8_hmax(buf.data(), ow, kw, sw, dw, u.data());
            c.s8_hmax(reinterpret_cast<const int8_t*>(buf.data()), ow, kw, sw, dw, reinterpret_cast<int8_t*>(s.data()));
            for (size_t o = 0; o < ow; ++o) {
              uint8_t bu = buf[o * sw];
              int8_t bs = static_cast<int8_t>(buf[o * sw]);
              for (size_t k = 1; k < kw; ++k) {
                bu = std::max(bu, buf[o * sw + k * dw]);
                bs = std::max(bs, static_cast<int8_t>(buf[o * sw + k * dw]));
              }
              ASSERT_EQ(u[o], bu) << isa_name(isa) << " ow " << ow << " kw " << kw << " sw " << sw << " dw " << dw << " o " << o;
              ASSERT_EQ(static_cast<int8_t>(s[o]), bs) << isa_name(isa) << " ow " << ow << " kw " << kw << " sw " << sw << " o " << o;
            }
            for (size_t o = ow; o < u.size(); ++o) {
              ASSERT_EQ(u[o], 0x5A) << isa_name(isa) << " wrote past ow " << ow;
              ASSERT_EQ(s[o], 0x5A) << isa_name(isa) << " wrote past ow " << ow;
            }
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace nfuse::kernels
