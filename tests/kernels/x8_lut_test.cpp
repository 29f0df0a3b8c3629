// x8-lut kernels (src/kernels/x8-lut) against plain table indexing, on every variant this
// machine runs (scalar always): all 256 indices under several tables, every length 0..300 at
// every alignment offset 0..7 of input and output with guard bytes around the output to catch
// tail overruns, and in place. Set NFUSE_X8_LUT_BENCH=1 to print each variant's throughput on
// 1 MiB.
#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "kernels/x8-lut/x8_lut.h"

namespace nfuse::kernels {
namespace {

constexpr uint32_t kSeed = 20261129;
constexpr uint8_t kGuard = 0xA5;
constexpr size_t kGuardCount = 67;

std::vector<uint8_t> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d(0, 255);
  std::vector<uint8_t> v(n);
  for (uint8_t& b : v) b = static_cast<uint8_t>(d(rng));
  return v;
}

// Tables that expose a wrong sub-table or a wrong half: identity, reversed, random, and one whose
// entries all differ from their index's neighbours in every nibble.
std::vector<std::vector<uint8_t>> tables() {
  std::vector<uint8_t> id(256), rev(256), mix(256);
  std::iota(id.begin(), id.end(), uint8_t{0});
  for (int i = 0; i < 256; ++i) rev[static_cast<size_t>(i)] = static_cast<uint8_t>(255 - i);
  for (int i = 0; i < 256; ++i) mix[static_cast<size_t>(i)] = static_cast<uint8_t>((i * 167 + 91) & 0xFF);
  return {id, rev, mix, random_bytes(256, kSeed)};
}

TEST(X8Lut, AllIndices) {
  for (const X8LutVariant& k : x8_lut_variants()) {
    for (const std::vector<uint8_t>& t : tables()) {
      std::vector<uint8_t> x(512);
      for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<uint8_t>((i * 37) & 0xFF);  // every value twice
      std::vector<uint8_t> y(x.size(), 0);
      k.fn(x.data(), y.data(), x.size(), t.data());
      for (size_t i = 0; i < x.size(); ++i) {
        ASSERT_EQ(y[i], t[x[i]]) << k.name << ": index " << int{x[i]} << " at " << i;
      }
    }
  }
}

TEST(X8Lut, LengthsAndAlignments) {
  const std::vector<uint8_t> t = tables()[3];
  const std::vector<uint8_t> src = random_bytes(300 + 8, kSeed + 1);
  for (const X8LutVariant& k : x8_lut_variants()) {
    for (size_t n = 0; n <= 300; ++n) {
      for (size_t off = 0; off < 8; ++off) {
        const size_t out_off = (off * 3) % 8;
        std::vector<uint8_t> y(n + out_off + 2 * kGuardCount, kGuard);
        uint8_t* out = y.data() + kGuardCount + out_off;
        k.fn(src.data() + off, out, n, t.data());
        for (size_t i = 0; i < n; ++i) {
          ASSERT_EQ(out[i], t[src[off + i]]) << k.name << ": n " << n << ", offset " << off << ", element " << i;
        }
        for (size_t i = 0; i < kGuardCount + out_off; ++i) ASSERT_EQ(y[i], kGuard) << k.name << ": n " << n;
        for (size_t i = kGuardCount + out_off + n; i < y.size(); ++i) {
          ASSERT_EQ(y[i], kGuard) << k.name << ": n " << n << ", wrote past the end at " << i;
        }
      }
    }
  }
}

TEST(X8Lut, InPlace) {
  const std::vector<uint8_t> t = tables()[2];
  for (const X8LutVariant& k : x8_lut_variants()) {
    for (size_t n : {1u, 31u, 64u, 255u, 1000u, 4099u}) {
      const std::vector<uint8_t> x = random_bytes(n, kSeed + static_cast<uint32_t>(n));
      std::vector<uint8_t> y = x;
      k.fn(y.data(), y.data(), n, t.data());
      for (size_t i = 0; i < n; ++i) ASSERT_EQ(y[i], t[x[i]]) << k.name << ": n " << n << ", element " << i;
    }
  }
}

TEST(X8Lut, SelectedKernelIsAVariant) {
  const X8LutFn best = x8_lut_kernel(selected_isa());
  bool found = false;
  for (const X8LutVariant& k : x8_lut_variants()) found = found || k.fn == best;
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace nfuse::kernels
