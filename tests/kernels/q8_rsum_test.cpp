// 8-bit row sums (src/kernels/q8-rsum) against a plain int64 loop, on every ISA this machine
// runs: lengths 0..300 and long rows, unaligned starts, all-255 / all -128 rows (no overflow).
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "kernels/cpu_features.h"
#include "kernels/q8-rsum/q8_rsum.h"

namespace nfuse::kernels {
namespace {

constexpr uint32_t kSeed = 20261129;

TEST(Q8Rsum, MatchesLoop) {
  std::mt19937 rng(kSeed);
  std::uniform_int_distribution<int> byte(0, 255);
  std::vector<size_t> lengths;
  for (size_t n = 0; n <= 300; ++n) lengths.push_back(n);
  lengths.push_back(3136);
  lengths.push_back(100003);
  for (Isa isa : {Isa::kScalar, Isa::kAvx2Fma, Isa::kAvx512, Isa::kNeon}) {
    if (!isa_supported(isa)) continue;
    const Q8RsumConfig& c = q8_rsum_config(isa);
    for (size_t n : lengths) {
      for (int fill = 0; fill < 3; ++fill) {
        std::vector<uint8_t> x(n + 1);
        for (uint8_t& v : x) v = fill == 0 ? static_cast<uint8_t>(byte(rng)) : fill == 1 ? 255 : 128;
        int64_t su = 0, ss = 0;
        for (size_t i = 1; i <= n; ++i) {
          su += x[i];
          ss += static_cast<int8_t>(x[i]);
        }
        ASSERT_EQ(c.u8(x.data() + 1, n), su) << isa_name(isa) << " n " << n << " fill " << fill;
        ASSERT_EQ(c.s8(reinterpret_cast<const int8_t*>(x.data()) + 1, n), ss) << isa_name(isa) << " n " << n;
      }
    }
  }
}

}  // namespace
}  // namespace nfuse::kernels
